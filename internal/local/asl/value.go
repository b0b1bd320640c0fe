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

// encodeValue renders a value as compact JSON without HTML escaping.
func encodeValue(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
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
