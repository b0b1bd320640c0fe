package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Values flowing through a run are the generic JSON tree produced by
// decodeValue: map[string]any, []any, string, json.Number, bool and nil.
// Numbers stay json.Number so that amounts keep their exact text. Values are
// never modified in place once created: every transformation builds new
// containers, so a value may be shared between states and between runs.

// decodeValue parses one JSON document, keeping numbers exact.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// encodeValue renders a value as compact JSON without HTML escaping,
// byte for byte as encoding/json's Encoder with SetEscapeHTML(false)
// does (object keys sorted, the same string escapes). The generic tree
// is written directly (appendValue); anything else, and any value
// encoding/json refuses, goes through encoding/json, so errors read the
// same.
func encodeValue(v any) (json.RawMessage, error) {
	if out, ok := appendValue(make([]byte, 0, 256), v); ok {
		return out, nil
	}
	return encodeReflect(v)
}

// encodeReflect is encodeValue through encoding/json.
func encodeReflect(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// appendValue appends the JSON of a generic tree (see decodeValue) to dst.
// It reports false for a value it does not write as encoding/json would:
// another type, or a json.Number that is no JSON number (an error there).
func appendValue(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case string:
		return appendString(dst, v), true
	case json.Number:
		n := string(v)
		if n == "" {
			n = "0" // as encoding/json writes an empty Number
		}
		if !isNumber(n) {
			return dst, false
		}
		return append(dst, n...), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendValue(dst, v[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendValue(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it without HTML escaping: '"' and '\\', the control characters
// (\b, \f, \n, \r, \t by name, the others as \u00XX), invalid UTF-8 as
// \ufffd, and U+2028 and U+2029.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isNumber reports whether s is a JSON number (RFC 8259, section 6).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}

// mustEncode renders a value for messages; it never fails on decoded values.
func mustEncode(v any) string {
	b, err := encodeValue(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// syntaxPosition converts the offset of a json.SyntaxError into a 1-based
// line and column (in characters).
func syntaxPosition(data []byte, se *json.SyntaxError) (line, col int) {
	pos := int(se.Offset)
	if pos > len(data) {
		pos = len(data)
	}
	// For "invalid character" errors the offset points just past the
	// offending byte; for an unexpected end it is the end of the input.
	if pos > 0 && !strings.HasPrefix(se.Error(), "unexpected end") {
		pos--
	}
	head := data[:pos]
	line = bytes.Count(head, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(head, '\n') + 1
	col = utf8.RuneCount(head[lineStart:]) + 1
	return line, col
}

// typeName names the JSON type of a value for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// numberRat converts a JSON number to an exact rational.
func numberRat(n json.Number) (*big.Rat, bool) {
	r, ok := new(big.Rat).SetString(string(n))
	return r, ok
}

// asInteger reports the integer value of a JSON number with no fractional
// part that fits in an int64.
func asInteger(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true
	}
	r, ok := numberRat(n)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// intNumber renders an integer as a JSON number.
func intNumber(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// valuesEqual compares two JSON values structurally; numbers compare by
// value (1 equals 1.0).
func valuesEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := numberRat(x)
		ry, oky := numberRat(y)
		if !okx || !oky {
			return x == y
		}
		return rx.Cmp(ry) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !valuesEqual(xv, yv) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// sortedKeys returns the keys of an object in a stable order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
