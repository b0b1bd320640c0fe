package asl

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The direct encoder must write what encoding/json writes, byte for byte,
// and fail where it fails.
func TestEncodeValueMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{name: "null", v: nil},
		{name: "booleans", v: []any{true, false}},
		{name: "numbers", v: []any{json.Number("0"), json.Number("-12.5e+3"), json.Number("1E9"), json.Number("123456789012345678901234567890")}},
		{name: "empty number", v: json.Number("")},
		{name: "strings with escapes", v: "quote \" backslash \\ slash / tab \t newline \n cr \r bell \a nul \x00 del \x7f"},
		{name: "html characters", v: "<script>&amp;</script>"},
		{name: "line and paragraph separators", v: "a\u2028b\u2029c"},
		{name: "invalid UTF-8", v: "ok \xff\xfe then \xe2\x82 truncated"},
		{name: "non-ASCII", v: "€ 日本 🙂 é"},
		{name: "keys sorted bytewise", v: map[string]any{"b": 1, "a": json.Number("2"), "B": "x", "é": nil, "": true}},
		{name: "escaped keys", v: map[string]any{"a\"b": "1", "\n": "2"}},
		{name: "nested", v: map[string]any{"list": []any{map[string]any{"z": []any{}, "y": map[string]any{}}}, "n": nil}},
		{name: "nil containers", v: map[string]any{"m": map[string]any(nil), "s": []any(nil)}},
		{name: "other types", v: map[string]any{"int": 3, "float": 2.5, "strings": []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertSameEncoding(t, tt.v)
		})
	}
}

func TestEncodeValueRefusesWhatEncodingJSONRefuses(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{name: "not a number", v: json.Number("12abc")},
		{name: "nested bad number", v: map[string]any{"a": []any{json.Number("1."), "x"}}},
		{name: "leading zero", v: json.Number("01")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := encodeValue(tt.v)
			_, want := encodeReflect(tt.v)
			if err == nil || want == nil || err.Error() != want.Error() {
				t.Fatalf("error %v, encoding/json's %v", err, want)
			}
		})
	}
}

func TestEncodeValueOfRandomTrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		assertSameEncoding(t, randomValue(r, 4))
	}
}

// The decoded form of a document encodes as encoding/json encodes it.
func TestEncodeValueOfDecodedDocuments(t *testing.T) {
	docs := []string{
		`{"transferId":"t-1","amount":2500,"request":{"currency":"EUR","reference":"Lunch <3 & more"},"list":[1,2.50,-0,1e3]}`,
		`[{"a":{"b":{"c":[null,true,false,"\u0001\u2028"]}}}]`,
		`"just a string \ud83d\ude00"`,
	}
	for _, d := range docs {
		t.Run(d[:10], func(t *testing.T) {
			v, err := decodeValue([]byte(d))
			if err != nil {
				t.Fatal(err)
			}
			assertSameEncoding(t, v)
		})
	}
}

func assertSameEncoding(t *testing.T, v any) {
	t.Helper()
	got, err := encodeValue(v)
	if err != nil {
		t.Fatalf("encodeValue: %v", err)
	}
	want, err := encodeReflect(v)
	if err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeValue wrote\n%s\nencoding/json\n%s", got, want)
	}
}

// randomValue builds a generic tree with strings drawn from awkward
// characters.
func randomValue(r *rand.Rand, depth int) any {
	kind := r.IntN(7)
	if depth == 0 {
		kind = r.IntN(4)
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return randomString(r)
	case 3:
		nums := []string{"0", "-1", "3.25", "1e-7", "-0.5E+10", "18446744073709551616"}
		return json.Number(nums[r.IntN(len(nums))])
	case 4, 5:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth-1)
		}
		return m
	default:
		s := make([]any, r.IntN(5))
		for i := range s {
			s[i] = randomValue(r, depth-1)
		}
		return s
	}
}

func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "\"", "\\", "/", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "\u2028", "\u2029", "\xff", "\xe2\x82", "🙂", "\ufffd"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}
