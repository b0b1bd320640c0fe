package keypath_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/keypath"
)

// The Powertools way: the key is taken from the event with a JMESPath
// expression, compiled once, and only part of the event is fingerprinted.
func Example() {
	type event struct {
		Body string `json:"body"`
	}
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	op := idempotency.Operation[event]{
		Scope:   "orders",
		KeyFunc: keypath.KeyFunc[event](keypath.MustCompile("powertools_json(body).orderId")),
		Payload: keypath.PayloadFunc[event](keypath.MustCompile("powertools_json(body).amount")),
	}
	runs := 0
	handle := func(_ context.Context, e event) (int, error) { runs++; return runs, nil }
	for _, body := range []string{
		`{"orderId":"o-1","amount":5,"sentAt":"10:00"}`,
		`{"orderId":"o-1","amount":5,"sentAt":"10:01"}`, // a resend: replayed
		`{"orderId":"o-1","amount":6}`,                  // the same key, another amount
	} {
		res, err := idempotency.Do(context.Background(), idem, op, event{Body: body}, handle)
		fmt.Println(res.Output, res.Replayed, err)
	}
	// Output:
	// 1 false <nil>
	// 1 true <nil>
	// 0 false idempotency key was already used with a different request
}

// An expression that does not compile is refused when it is compiled,
// not at the first event.
func ExampleCompile() {
	_, err := keypath.Compile("powertools_jsn(body).id")
	fmt.Println(err)
	_, err = keypath.Compile("body.[")
	fmt.Println(err)
	p, err := keypath.Compile("powertools_json(body).id")
	fmt.Println(p, err)
	// Output:
	// keypath: compile "powertools_jsn(body).id": unknown function powertools_jsn()
	// keypath: compile "body.[": SyntaxError: Incomplete expression (at offset 6)
	// powertools_json(body).id <nil>
}

// MustCompile suits expressions written in the program.
func ExampleMustCompile() {
	p := keypath.MustCompile("detail.orderId")
	k, _ := p.KeyJSON([]byte(`{"detail":{"orderId":"o-7"}}`))
	fmt.Println(k)
	// Output:
	// o-7
}

// A CompileError says where a syntax error is.
func ExampleCompileError() {
	_, err := keypath.Compile("a ||| b")
	var ce *keypath.CompileError
	if errors.As(err, &ce) {
		fmt.Printf("%q at %d\n", ce.Expr, ce.Offset)
	}
	// Output:
	// "a ||| b" at 4
}

func ExamplePath_String() {
	fmt.Println(keypath.MustCompile("[customer, orderId]").String())
	// Output:
	// [customer, orderId]
}

// Key takes a document already decoded; a selection of nothing is
// ErrKeyMissing.
func ExamplePath_Key() {
	doc, _ := keypath.Decode([]byte(`{"customer":"alice","orderId":"o-1"}`))
	k, err := keypath.MustCompile("orderId").Key(doc)
	fmt.Println(k, err)
	k, err = keypath.MustCompile("[customer, orderId]").Key(doc)
	fmt.Println(k, err)
	_, err = keypath.MustCompile("invoiceId").Key(doc)
	fmt.Println(errors.Is(err, idempotency.ErrKeyMissing))
	// Output:
	// o-1 <nil>
	// sha256:00ea5c25bee8681a71d4a5dbcb62bd35ea313d51e474ab9db2dd2e98ed550edb <nil>
	// true
}

// KeyJSON decodes the JSON first: here an SQS record, whose body is JSON
// in a string.
func ExamplePath_KeyJSON() {
	record := []byte(`{"messageId":"m-1","body":"{\"orderId\":\"o-9\"}"}`)
	k, err := keypath.MustCompile("powertools_json(body).orderId").KeyJSON(record)
	fmt.Println(k, err)
	// Output:
	// o-9 <nil>
}

// Payload is the canonical JSON of the selection, for
// Operation.Payload: only that part is fingerprinted.
func ExamplePath_Payload() {
	doc, _ := keypath.Decode([]byte(`{"amount":5,"currency":"EUR","note":"thanks"}`))
	b, _ := keypath.MustCompile("{currency: currency, amount: amount}").Payload(doc)
	fmt.Println(string(b))
	// Output:
	// {"amount":5,"currency":"EUR"}
}

func ExamplePath_PayloadJSON() {
	b, _ := keypath.MustCompile("order").PayloadJSON([]byte(`{"order": {"b": 2.0, "a": [1, 2]}, "sentAt": "10:00"}`))
	fmt.Println(string(b))
	// Output:
	// {"a":[1,2],"b":2}
}

// KeyFunc evaluates the expression on the JSON of the input, so a Go
// struct is addressed by its JSON names.
func ExampleKeyFunc() {
	type transfer struct {
		From   string `json:"from"`
		Ref    string `json:"reference"`
		Amount int    `json:"amount"`
	}
	key := keypath.KeyFunc[transfer](keypath.MustCompile("reference"))
	k, err := key(transfer{From: "alice", Ref: "rent-2026-03", Amount: 900})
	fmt.Println(k, err)
	_, err = key(transfer{From: "alice"})
	fmt.Println(err)
	// Output:
	// rent-2026-03 <nil>
	// keypath: "reference" selected nothing: idempotency key is missing
}

func ExamplePayloadFunc() {
	type transfer struct {
		Ref    string `json:"reference"`
		Amount int    `json:"amount"`
		SentAt string `json:"sentAt"`
	}
	payload := keypath.PayloadFunc[transfer](keypath.MustCompile("[reference, amount]"))
	b, _ := payload(transfer{Ref: "rent", Amount: 900, SentAt: "10:00"})
	fmt.Println(string(b))
	// Output:
	// ["rent",900]
}

// A short printable string is its own key; anything else is digested:
// "clé" is the SHA-256 of "\"clé\"", 42 of "42", the object of
// {"a":1,"b":"x"}.
func ExampleKey() {
	for _, v := range []any{"order-42", "clé", float64(42), map[string]any{"b": "x", "a": float64(1)}} {
		k, _ := keypath.Key(v)
		fmt.Println(k)
	}
	_, err := keypath.Key([]any{nil, nil})
	fmt.Println(err)
	// Output:
	// order-42
	// sha256:f78084c23e5af1ee894c9d02b8e9184d43ad7da93a7fb9b6d2c2ff6d8fdd93d5
	// sha256:73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049
	// sha256:ecf9e98ec0641e23113ff3ce8bdc78d0ddd249886517fd4a7f68cc83d4e65667
	// keypath: the selection is empty: idempotency key is missing
}

// A string that looks like a digest is digested too, so it never
// stands for another value's key.
func ExampleDigestPrefix() {
	k, _ := keypath.Key(keypath.DigestPrefix + "abc")
	fmt.Println(k != keypath.DigestPrefix+"abc", len(k))
	// Output:
	// true 71
}

func ExampleCanonical() {
	v, _ := keypath.Decode([]byte(`{"z": 1.50, "a": "<b>", "m": [true, null]}`))
	b, _ := keypath.Canonical(v)
	fmt.Println(string(b))
	// Output:
	// {"a":"<b>","m":[true,null],"z":1.5}
}

// Decode keeps an integer too large for a float64 as it is written.
func ExampleDecode() {
	v, _ := keypath.Decode([]byte(`{"small": 42, "large": 1234567890123456789}`))
	m := v.(map[string]any)
	fmt.Printf("%T %T\n", m["small"], m["large"])
	// Output:
	// float64 json.Number
}

// powertools_base64_gzip reads CloudWatch Logs subscription data, say;
// it inflates at most MaxDecoded bytes.
func ExampleMaxDecoded() {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"logGroup":"/aws/lambda/pay","logEvents":[{"id":"e-1"}]}`))
	_ = zw.Close()
	doc := map[string]any{"awslogs": map[string]any{"data": base64.StdEncoding.EncodeToString(buf.Bytes())}}
	k, err := keypath.MustCompile("powertools_json(powertools_base64_gzip(awslogs.data)).logEvents[0].id").Key(doc)
	fmt.Println(k, err, keypath.MaxDecoded)
	// Output:
	// e-1 <nil> 33554432
}
