package transfer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/exactlyonce/transfers/idempotency"
)

const fuzzMaxAmount = 100000000

// bodySeeds are bodies of the table tests: accepted, over a limit, and
// refused.
var bodySeeds = []string{
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR"}`,
	`{"sourceAccountId":"demo-alice","destinationAccountId":"demo-bob","amount":1050,"currency":"USD","reference":"rent – März"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":100000000,"currency":"JPY"}`,
	`{"destinationAccountId":"b",  "sourceAccountId":"a","currency":"EUR","amount":5,"reference":""}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":100000001,"currency":"EUR"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"XYZ"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"eur"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":99999999999999999999,"currency":"EUR"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"amount":5}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"Amount":7}`,
	`{"sourceAccountId":"a","destinationAccountId":"a","currency":"EUR","amount":5}`,
	`{"sourceAccountId":5,"destinationAccountId":"c","currency":"EUR","amount":5}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":10.0}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":1e3}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":"10"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"reference":"a\u0007b"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"reference":"\u00e9\ud83d\ude00<&>\u2028\/"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"reference":null}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5} {}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5`,
	"{\"sourceAccountId\":\"a\",\"destinationAccountId\":\"b\",\"currency\":\"EUR\",\"amount\":5,\"reference\":\"\xff\"}",
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"reference":"\ud800"}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR","amount":5,"reference":"\ufffd"}`,
	``, `[]`, `null`, `{}`,
}

// FuzzParse: Parse never panics; a body it accepts (limits aside) has a
// canonical form that parses to the same request and fingerprint, and so
// does any equivalent body written from the request with its names in
// another order, other whitespace and other escapes of the same strings.
func FuzzParse(f *testing.F) {
	for i, b := range bodySeeds {
		f.Add([]byte(b), uint64(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		r, limits, err := Parse(body, fuzzMaxAmount)
		if err != nil {
			var verr *ValidationError
			if !errors.Is(err, ErrBodyTooLarge) && (!errors.As(err, &verr) || len(verr.Fields) == 0) {
				t.Fatalf("Parse(%q): error %v is neither ErrBodyTooLarge nor a ValidationError with fields", body, err)
			}
			if r != (Request{}) || limits != nil {
				t.Fatalf("Parse(%q) = %+v, %v with error %v", body, r, limits, err)
			}
			return
		}
		canonical := r.Canonical()
		fp := idempotency.Fingerprint(canonical)
		check := func(what string, b []byte) {
			t.Helper()
			r2, limits2, err := Parse(b, fuzzMaxAmount)
			if err != nil {
				t.Fatalf("body %q parses to %+v, but its %s %q: %v", body, r, what, b, err)
			}
			if r2 != r {
				t.Fatalf("body %q parses to %+v, its %s %q to %+v", body, r, what, b, r2)
			}
			if (limits == nil) != (limits2 == nil) {
				t.Fatalf("body %q: limits %v, its %s %q: limits %v", body, limits, what, b, limits2)
			}
			if got := idempotency.Fingerprint(r2.Canonical()); got != fp {
				t.Fatalf("body %q: fingerprint %s, its %s %q: %s", body, fp, what, b, got)
			}
		}
		check("canonical form", canonical)
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		for range 3 {
			equivalent := rewrite(r, rng)
			if len(equivalent) > MaxBodyBytes {
				continue
			}
			check("equivalent", equivalent)
		}
	})
}

// FuzzFingerprintDistinct: of two accepted bodies, the fingerprints are
// equal exactly when the requests are.
func FuzzFingerprintDistinct(f *testing.F) {
	for i := range bodySeeds {
		f.Add([]byte(bodySeeds[i]), []byte(bodySeeds[(i+1)%len(bodySeeds)]))
	}
	f.Add([]byte(bodySeeds[0]), []byte(`{"amount":1,"currency":"EUR","destinationAccountId":"b","sourceAccountId":"a","reference":""}`))
	f.Add([]byte(`{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","reference":"x\",\"y"}`),
		[]byte(`{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","reference":"x"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ra, _, errA := Parse(a, fuzzMaxAmount)
		rb, _, errB := Parse(b, fuzzMaxAmount)
		if errA != nil || errB != nil {
			return
		}
		ca, cb := ra.Canonical(), rb.Canonical()
		if fa, fb := idempotency.Fingerprint(ca), idempotency.Fingerprint(cb); (fa == fb) != (ra == rb) {
			t.Fatalf("%q -> %+v (%s), %q -> %+v (%s)", a, ra, fa, b, rb, fb)
		}
		if bytes.Equal(ca, cb) != (ra == rb) {
			t.Fatalf("%q -> %+v, %q -> %+v: canonical forms %s and %s", a, ra, b, rb, ca, cb)
		}
	})
}

// rewrite writes r as another body with the same meaning: its names in a
// random order, random insignificant whitespace, and each character of
// its strings written as itself or escaped.
func rewrite(r Request, rng *rand.Rand) []byte {
	type field struct{ name, value string }
	fields := []field{
		{"sourceAccountId", jsonString(r.SourceAccountID, rng)},
		{"destinationAccountId", jsonString(r.DestinationAccountID, rng)},
		{"amount", fmt.Sprint(r.Amount)},
		{"currency", jsonString(r.Currency, rng)},
	}
	switch {
	case r.Reference != "":
		fields = append(fields, field{"reference", jsonString(r.Reference, rng)})
	case rng.IntN(3) == 0:
		fields = append(fields, field{"reference", `""`})
	case rng.IntN(2) == 0:
		fields = append(fields, field{"reference", `null`})
	}
	rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	var b strings.Builder
	ws := func() {
		for range rng.IntN(3) {
			b.WriteByte(" \t\r\n"[rng.IntN(4)])
		}
	}
	ws()
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		ws()
		b.WriteString(jsonString(f.name, rng))
		ws()
		b.WriteByte(':')
		ws()
		b.WriteString(f.value)
		ws()
	}
	b.WriteByte('}')
	ws()
	return []byte(b.String())
}

// jsonString is a JSON string of s, each character chosen at random to be
// written as itself (where JSON allows), with its short escape, or as
// \u escapes (a surrogate pair beyond the BMP, hex digits in either case).
func jsonString(s string, rng *rand.Rand) string {
	short := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		mustEscape := c == '"' || c == '\\' || c < 0x20
		choice := rng.IntN(3)
		switch {
		case choice == 0 && !mustEscape:
			b.WriteRune(c)
		case choice == 1 && short[c] != "":
			b.WriteString(short[c])
		default:
			u := func(v rune) {
				h := fmt.Sprintf(`\u%04x`, v)
				if rng.IntN(2) == 0 {
					h = `\u` + strings.ToUpper(h[2:])
				}
				b.WriteString(h)
			}
			if c > 0xffff {
				c -= 0x10000
				u(0xd800 + c>>10)
				u(0xdc00 + c&0x3ff)
			} else {
				u(c)
			}
		}
	}
	b.WriteByte('"')
	if !utf8.ValidString(b.String()) {
		panic("jsonString wrote invalid UTF-8")
	}
	return b.String()
}

// FuzzReadWire: whatever body the one-pass reader accepts, the decoder
// accepts too (checkFieldNames finds nothing wrong) and reads into the
// same fields; the well-formed seeds take the one-pass path.
func FuzzReadWire(f *testing.F) {
	for _, b := range bodySeeds {
		f.Add([]byte(b))
	}
	for _, b := range []string{
		`{"amount":{"a":[1,"}",{"b":"]\""}]},"currency":"EUR"}`,
		`{"amount":[1,2] , "reference" : "x\"y" }`,
		`{"\u0061mount":1}`,
		` { } `,
		`{"amount":true,"currency":false}`,
		`{"amount":-0.5e+3,"reference":"\ud83d\ude00"}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w, ok := readWire(body)
		if !ok {
			return
		}
		if verr := (&ValidationError{}); !checkFieldNames(verr, body) {
			t.Fatalf("readWire accepts %q, checkFieldNames finds %v", body, verr.Fields)
		}
		var want wire
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("readWire accepts %q, json.Unmarshal: %v", body, err)
		}
		for f := range wireFields {
			if f == fieldAmount {
				if !bytes.Equal(w.Amount, want.Amount) {
					t.Fatalf("%q: amount %q, json.Unmarshal reads %q", body, w.Amount, want.Amount)
				}
				continue
			}
			got, exp := *w.strings(f), *want.strings(f)
			if (got == nil) != (exp == nil) || got != nil && *got != *exp {
				t.Fatalf("%q: %s = %s, json.Unmarshal reads %s", body, wireFields[f], show(got), show(exp))
			}
		}
	})
}

func show(s *string) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *s)
}

// The bodies every client sends, well-formed ones, are read in one pass.
func TestReadWireTakesWellFormedBodies(t *testing.T) {
	for _, b := range []string{bodySeeds[0], bodySeeds[1], bodySeeds[3], bodySeeds[16], bodySeeds[17], `{}`, " {\n\t\"amount\" : 7 \r} "} {
		if _, ok := readWire([]byte(b)); !ok {
			t.Errorf("readWire(%q) declines a well-formed body", b)
		}
	}
}
