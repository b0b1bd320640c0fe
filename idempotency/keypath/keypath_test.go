package keypath_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/keypath"
)

// digest is the key Key makes of canonical JSON.
func digest(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return keypath.DigestPrefix + hex.EncodeToString(sum[:])
}

func gzipBase64(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name   string
		expr   string
		ok     bool
		offset bool   // a syntax error, with its offset
		says   string // in the error
	}{
		{"field", "orderId", true, false, ""},
		{"nested", "body.order.id", true, false, ""},
		{"multi-select list", "[customer, order.id]", true, false, ""},
		{"powertools_json", "powertools_json(body).id", true, false, ""},
		{"powertools_base64", "powertools_json(powertools_base64(kinesis.data)).id", true, false, ""},
		{"powertools_base64_gzip", "powertools_json(powertools_base64_gzip(data)).id", true, false, ""},
		{"a JMESPath function", "join('-', [a, b])", true, false, ""},
		{"variadic function", "merge(a, b, c)", true, false, ""},
		{"empty", "", false, true, "SyntaxError"},
		{"unclosed bracket", "orderId[", false, true, "SyntaxError"},
		{"unknown function", "powertools_jsn(body)", false, false, "unknown function powertools_jsn()"},
		{"unknown function in an argument", "length(nope(a))", false, false, "unknown function nope()"},
		{"too many arguments", "powertools_json(a, b)", false, false, "powertools_json() takes at most 1 arguments, got 2"},
		{"too few arguments", "length()", false, false, "length() takes at least 1 arguments, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := keypath.Compile(tt.expr)
			if tt.ok {
				if err != nil || p.String() != tt.expr {
					t.Fatalf("Compile(%q) = %v, %v", tt.expr, p, err)
				}
				return
			}
			var ce *keypath.CompileError
			if !errors.As(err, &ce) || p != nil {
				t.Fatalf("Compile(%q) = %v, %v, want a *CompileError", tt.expr, p, err)
			}
			if ce.Expr != tt.expr || (ce.Offset >= 0) != tt.offset {
				t.Errorf("CompileError = %+v, want expr %q with an offset: %v", ce, tt.expr, tt.offset)
			}
			if !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), `"`+tt.expr+`"`) {
				t.Errorf("error %q does not name the expression and say %q", err, tt.says)
			}
		})
	}
}

func TestMustCompilePanics(t *testing.T) {
	defer func() {
		var ce *keypath.CompileError
		if err, _ := recover().(error); !errors.As(err, &ce) {
			t.Errorf("MustCompile panicked with %v, want a *CompileError", err)
		}
	}()
	keypath.MustCompile("a[")
	t.Error("MustCompile did not panic")
}

func TestKey(t *testing.T) {
	body := `{"id":"ord-1","n":7}`
	tests := []struct {
		name    string
		expr    string
		doc     string
		want    string
		missing bool   // ErrKeyMissing
		fails   string // another error, saying this
	}{
		{"string as it is", "orderId", `{"orderId":"ord-42"}`, "ord-42", false, ""},
		{"string of 255 characters", "k", `{"k":"` + strings.Repeat("a", 255) + `"}`, strings.Repeat("a", 255), false, ""},
		{"string of 256 characters is digested", "k", `{"k":"` + strings.Repeat("a", 256) + `"}`, digest(`"` + strings.Repeat("a", 256) + `"`), false, ""},
		{"non-ASCII string is digested", "k", `{"k":"clé"}`, digest(`"clé"`), false, ""},
		{"control character is digested", "k", `{"k":"a\tb"}`, digest(`"a\tb"`), false, ""},
		{"string with the digest prefix is digested", "k", `{"k":"sha256:abc"}`, digest(`"sha256:abc"`), false, ""},
		{"number", "n", `{"n":42}`, digest(`42`), false, ""},
		{"float spelled 1.0 is 1", "n", `{"n":1.0}`, digest(`1`), false, ""},
		{"large integer kept exact", "n", `{"n":12345678901234567891}`, digest(`12345678901234567891`), false, ""},
		{"false", "b", `{"b":false}`, digest(`false`), false, ""},
		{"zero", "n", `{"n":0}`, digest(`0`), false, ""},
		{"object, members sorted", "o", `{"o":{"b":1,"a":"<&>"}}`, digest(`{"a":"<&>","b":1}`), false, ""},
		{"multi-select list", "[a, b]", `{"a":"x","b":2}`, digest(`["x",2]`), false, ""},
		{"multi-select list with one null", "[a, b]", `{"a":"x"}`, digest(`["x",null]`), false, ""},
		{"multi-select hash", "{a: a, b: b}", `{"a":"x"}`, digest(`{"a":"x","b":null}`), false, ""},
		{"powertools_json", "powertools_json(body).id", `{"body":` + strconvQuote(body) + `}`, "ord-1", false, ""},
		{"powertools_json object", "powertools_json(body)", `{"body":` + strconvQuote(body) + `}`, digest(`{"id":"ord-1","n":7}`), false, ""},
		{"powertools_base64", "powertools_json(powertools_base64(data)).id", `{"data":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `"}`, "ord-1", false, ""},
		{"powertools_base64_gzip", "powertools_json(powertools_base64_gzip(data)).id", `{"data":"` + gzipBase64(t, []byte(body)) + `"}`, "ord-1", false, ""},
		{"absent field", "orderId", `{"other":1}`, "", true, ""},
		{"null", "orderId", `{"orderId":null}`, "", true, ""},
		{"empty string", "orderId", `{"orderId":""}`, "", true, ""},
		{"empty array", "ids", `{"ids":[]}`, "", true, ""},
		{"multi-select list of nulls", "[a, b]", `{}`, "", true, ""},
		{"multi-select hash of nulls", "{a: a, b: b}", `{}`, "", true, ""},
		{"empty object", "o", `{"o":{}}`, "", true, ""},
		{"powertools_json of no JSON", "powertools_json(body).id", `{"body":"not json"}`, "", false, "powertools_json"},
		{"powertools_json of a number", "powertools_json(n)", `{"n":1}`, "", false, "invalid type"},
		{"powertools_base64 of no base64", "powertools_base64(data)", `{"data":"***"}`, "", false, "powertools_base64"},
		{"powertools_base64 of bytes that are not text", "powertools_base64(data)", `{"data":"/w=="}`, "", false, "not UTF-8"},
		{"powertools_base64_gzip of no gzip", "powertools_base64_gzip(data)", `{"data":"aGk="}`, "", false, "powertools_base64_gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := keypath.MustCompile(tt.expr)
			got, err := p.KeyJSON([]byte(tt.doc))
			switch {
			case tt.missing:
				if !errors.Is(err, idempotency.ErrKeyMissing) || got != "" {
					t.Fatalf("KeyJSON = %q, %v, want ErrKeyMissing", got, err)
				}
			case tt.fails != "":
				if err == nil || errors.Is(err, idempotency.ErrKeyMissing) || !strings.Contains(err.Error(), tt.fails) {
					t.Fatalf("KeyJSON = %q, %v, want an error saying %q", got, err, tt.fails)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("KeyJSON = %q, %v, want %q", got, err, tt.want)
				}
				if err := idempotency.ValidateKey(got); err != nil {
					t.Errorf("the key %q fails ValidateKey: %v", got, err)
				}
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestKeyStable: documents that differ only in member order, spacing or
// the spelling of a float get one key; documents that differ otherwise,
// two large integers a float64 cannot tell apart included, do not.
func TestKeyStable(t *testing.T) {
	p := keypath.MustCompile("order")
	same := []string{
		`{"order":{"id":"a","amount":1.50,"tags":["x","y"]}}`,
		`{"order": {"tags": ["x", "y"], "amount": 1.5, "id": "a"}}`,
		`{"order":{"amount":15e-1,"id":"a","tags":["x","y"]}}`,
	}
	first, err := p.KeyJSON([]byte(same[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range same[1:] {
		if k, err := p.KeyJSON([]byte(doc)); err != nil || k != first {
			t.Errorf("KeyJSON(%s) = %q, %v, want %q", doc, k, err, first)
		}
	}
	different := []string{
		`{"order":{"id":"a","amount":1.51,"tags":["x","y"]}}`,
		`{"order":{"id":"a","amount":1.5,"tags":["y","x"]}}`,
		`{"order":{"id":"a","amount":"1.5","tags":["x","y"]}}`,
		`{"order":12345678901234567891}`,
		`{"order":12345678901234567892}`,
	}
	seen := map[string]string{first: same[0]}
	for _, doc := range different {
		k, err := p.KeyJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s have one key %s", doc, prev, k)
		}
		seen[k] = doc
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  any
		fails string
	}{
		{"2^53 is a float64", `9007199254740992`, float64(1 << 53), ""},
		{"-2^53 is a float64", `-9007199254740992`, float64(-(1 << 53)), ""},
		{"2^53+1 is kept as written", `9007199254740993`, json.Number("9007199254740993"), ""},
		{"-2^53-1 is kept as written", `-9007199254740993`, json.Number("-9007199254740993"), ""},
		{"beyond int64 is kept as written", `123456789012345678901234567890`, json.Number("123456789012345678901234567890"), ""},
		{"a fraction is a float64", `12345678901234567890.5`, 12345678901234567890.5, ""},
		{"an exponent is a float64", `1e3`, float64(1000), ""},
		{"a float beyond float64", `1e400`, nil, "out of range"},
		{"data after the document", `{} {}`, nil, "data after the document"},
		{"not JSON", `{`, nil, "decode JSON"},
		{"not UTF-8", "\"\xff\"", nil, "not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keypath.Decode([]byte(tt.in))
			if tt.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tt.fails) {
					t.Fatalf("Decode(%s) = %v, %v, want an error saying %q", tt.in, got, err, tt.fails)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Decode(%s) = %#v, %v, want %#v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"members sorted, no space", `{ "b" : 1 , "a" : [ true , null ] }`, `{"a":[true,null],"b":1}`},
		{"no HTML escapes", `"<a & b>"`, `"<a & b>"`},
		{"floats in the shortest form", `[1.0, 0.50, 1e21, 1E-7, -0.0]`, `[1,0.5,1e+21,1e-7,-0]`},
		{"large integer as written", `[12345678901234567891]`, `[12345678901234567891]`},
		{"unicode as is", `"clé \u00e9"`, `"clé é"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := keypath.Decode([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := keypath.Canonical(v)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Canonical(%s) = %s, %v, want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestGzipLimit, on a limit of 1 KiB for speed: MaxDecoded is applied the
// same way.
func TestGzipLimit(t *testing.T) {
	defer keypath.SetMaxDecoded(1024)()
	p := keypath.MustCompile("powertools_base64_gzip(data)")
	for _, tt := range []struct {
		name string
		size int
		ok   bool
	}{
		{"at the limit", 1024, true},
		{"past the limit", 1025, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := map[string]any{"data": gzipBase64(t, bytes.Repeat([]byte("a"), tt.size))}
			k, err := p.Key(doc)
			if tt.ok && (err != nil || !strings.HasPrefix(k, keypath.DigestPrefix)) {
				t.Fatalf("Key = %q, %v, want a digest", k, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "more than")) {
				t.Fatalf("Key = %q, %v, want the limit's error", k, err)
			}
		})
	}
}

func TestPayload(t *testing.T) {
	p := keypath.MustCompile("[amount, currency]")
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"selected part only", `{"amount":5,"currency":"EUR","note":"x"}`, `[5,"EUR"]`},
		{"nothing selected is null", `{"note":"x"}`, `[null,null]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.PayloadJSON([]byte(tt.doc))
			if err != nil || string(got) != tt.want {
				t.Fatalf("PayloadJSON = %s, %v, want %s", got, err, tt.want)
			}
		})
	}
	if got, err := keypath.MustCompile("nothing").PayloadJSON([]byte(`{}`)); err != nil || string(got) != "null" {
		t.Errorf("PayloadJSON of no selection = %s, %v, want null", got, err)
	}
	if _, err := p.PayloadJSON([]byte(`{`)); err == nil {
		t.Error("PayloadJSON of no JSON: no error")
	}
}

type order struct {
	Customer string `json:"customer"`
	OrderID  string `json:"orderId"`
	Amount   int    `json:"amount"`
	Note     string `json:"note"`
}

// TestWithDo: KeyFunc and PayloadFunc in an Operation: the key and the
// fingerprint come from the selections only, and a key that selects
// nothing costs no call to the store and runs nothing, unless the key is
// optional.
func TestWithDo(t *testing.T) {
	tests := []struct {
		name     string
		optional bool
		calls    []order
		wantRuns int
		wantErrs []error // per call
		wantOps  map[idemtest.Op]int
	}{
		{
			name:     "duplicate with another note is replayed",
			calls:    []order{{"alice", "o1", 5, "first"}, {"alice", "o1", 5, "second"}},
			wantRuns: 1, wantErrs: []error{nil, nil},
			wantOps: map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 1},
		},
		{
			name:     "another amount is refused",
			calls:    []order{{"alice", "o1", 5, ""}, {"alice", "o1", 6, ""}},
			wantRuns: 1, wantErrs: []error{nil, idempotency.ErrKeyReused},
			wantOps: map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 1},
		},
		{
			name:     "another order runs",
			calls:    []order{{"alice", "o1", 5, ""}, {"alice", "o2", 5, ""}},
			wantRuns: 2, wantErrs: []error{nil, nil},
			wantOps: map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 2},
		},
		{
			name:     "no order id is refused and touches nothing",
			calls:    []order{{"alice", "", 5, ""}},
			wantRuns: 0, wantErrs: []error{idempotency.ErrKeyMissing},
			wantOps: map[idemtest.Op]int{},
		},
		{
			name:     "no order id runs without idempotency when optional",
			optional: true,
			calls:    []order{{"alice", "", 5, ""}, {"alice", "", 5, ""}},
			wantRuns: 2, wantErrs: []error{nil, nil},
			wantOps: map[idemtest.Op]int{},
		},
		{
			name:     "optional key present is idempotent",
			optional: true,
			calls:    []order{{"alice", "o1", 5, ""}, {"alice", "o1", 5, ""}},
			wantRuns: 1, wantErrs: []error{nil, nil},
			wantOps: map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			idem, err := idempotency.New(idempotency.Config{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			op := idempotency.Operation[order]{
				Scope:   "orders",
				KeyFunc: keypath.KeyFunc[order](keypath.MustCompile("orderId")),
				Payload: keypath.PayloadFunc[order](keypath.MustCompile("[customer, amount]")),
			}
			runs := 0
			fn := func(context.Context, order) (string, error) { runs++; return "ok", nil }
			for n, o := range tt.calls {
				var err error
				if tt.optional {
					_, err = idempotency.DoOptionalKey(t.Context(), idem, op, o, fn)
				} else {
					_, err = idempotency.Do(t.Context(), idem, op, o, fn)
				}
				if !errors.Is(err, tt.wantErrs[n]) || (err != nil && tt.wantErrs[n] == nil) {
					t.Errorf("call %d = %v, want %v", n, err, tt.wantErrs[n])
				}
			}
			if runs != tt.wantRuns {
				t.Errorf("runs = %d, want %d", runs, tt.wantRuns)
			}
			total := 0
			for op, want := range tt.wantOps {
				total += want
				if got := store.Calls(op); got != want {
					t.Errorf("%s calls = %d, want %d", op, got, want)
				}
			}
			if got := store.TotalCalls(); got != total {
				t.Errorf("store calls = %d, want %d", got, total)
			}
		})
	}
}

func TestKeyFuncOfUnencodable(t *testing.T) {
	_, err := keypath.KeyFunc[func()](keypath.MustCompile("a"))(func() {})
	if err == nil || !strings.Contains(err.Error(), "encode the input") {
		t.Errorf("KeyFunc of a func = %v, want an encoding error", err)
	}
	_, err = keypath.PayloadFunc[chan int](keypath.MustCompile("a"))(make(chan int))
	if err == nil || !strings.Contains(err.Error(), "encode the input") {
		t.Errorf("PayloadFunc of a chan = %v, want an encoding error", err)
	}
}
