package asl

import (
	"bytes"
	"encoding/json"
	"math"
)

// jsonObject is one object of the definition, with its fields in document
// order and its JSON place for messages. Duplicate field names are
// rejected.
type jsonObject struct {
	place  string
	keys   []string
	fields map[string]json.RawMessage
}

// parseObject splits a raw JSON object into its fields. The definition
// has already been checked to be syntactically valid JSON.
func parseObject(place string, raw json.RawMessage) (*jsonObject, error) {
	if kind := rawKind(raw); kind != "object" {
		return nil, errAt(place, "must be an object, got %s", kind)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, wrapAt(place, err)
	}
	o := &jsonObject{place: place, fields: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, wrapAt(place, err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, wrapAt(join(place, key), err)
		}
		if _, dup := o.fields[key]; dup {
			return nil, errAt(join(place, key), "duplicate field")
		}
		o.keys = append(o.keys, key)
		o.fields[key] = val
	}
	return o, nil
}

// rawKind names the JSON type of a raw value.
func rawKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

func (o *jsonObject) at(key string) string { return join(o.place, key) }

func (o *jsonObject) has(key string) bool {
	_, ok := o.fields[key]
	return ok
}

func (o *jsonObject) isNull(key string) bool {
	raw, ok := o.fields[key]
	return ok && rawKind(raw) == "null"
}

// str returns a string field; ok is false when the field is absent.
func (o *jsonObject) str(key string) (s string, ok bool, err error) {
	raw, ok := o.fields[key]
	if !ok {
		return "", false, nil
	}
	if kind := rawKind(raw); kind != "string" {
		return "", true, errAt(o.at(key), "must be a string, got %s", kind)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, wrapAt(o.at(key), err)
	}
	return s, true, nil
}

// requiredStr returns a string field that must be present and non-empty.
func (o *jsonObject) requiredStr(key string) (string, error) {
	s, ok, err := o.str(key)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", errAt(o.at(key), "is required")
	case s == "":
		return "", errAt(o.at(key), "must not be empty")
	}
	return s, nil
}

func (o *jsonObject) boolean(key string) (b bool, ok bool, err error) {
	raw, ok := o.fields[key]
	if !ok {
		return false, false, nil
	}
	if kind := rawKind(raw); kind != "boolean" {
		return false, true, errAt(o.at(key), "must be a boolean, got %s", kind)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, true, wrapAt(o.at(key), err)
	}
	return b, true, nil
}

// number returns a numeric field.
func (o *jsonObject) number(key string) (n json.Number, ok bool, err error) {
	raw, ok := o.fields[key]
	if !ok {
		return "", false, nil
	}
	if kind := rawKind(raw); kind != "number" {
		return "", true, errAt(o.at(key), "must be a number, got %s", kind)
	}
	return json.Number(bytes.TrimSpace(raw)), true, nil
}

// integer returns an integer field within [lo, hi].
func (o *jsonObject) integer(key string, lo, hi int64) (i int64, ok bool, err error) {
	n, ok, err := o.number(key)
	if !ok || err != nil {
		return 0, ok, err
	}
	i, isInt := asInteger(n)
	switch {
	case !isInt:
		return 0, true, errAt(o.at(key), "must be an integer, got %s", n)
	case i < lo:
		return 0, true, errAt(o.at(key), "must be >= %d, got %d", lo, i)
	case i > hi:
		return 0, true, errAt(o.at(key), "must be <= %d, got %d", hi, i)
	}
	return i, true, nil
}

// float returns a numeric field as a float64.
func (o *jsonObject) float(key string) (f float64, ok bool, err error) {
	n, ok, err := o.number(key)
	if !ok || err != nil {
		return 0, ok, err
	}
	f, perr := n.Float64()
	if perr != nil || math.IsInf(f, 0) {
		return 0, true, errAt(o.at(key), "number %s is out of range", n)
	}
	return f, true, nil
}

// array returns the elements of an array field.
func (o *jsonObject) array(key string) (elems []json.RawMessage, ok bool, err error) {
	raw, ok := o.fields[key]
	if !ok {
		return nil, false, nil
	}
	if kind := rawKind(raw); kind != "array" {
		return nil, true, errAt(o.at(key), "must be an array, got %s", kind)
	}
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, true, wrapAt(o.at(key), err)
	}
	return elems, true, nil
}

// object returns an object field.
func (o *jsonObject) object(key string) (*jsonObject, bool, error) {
	raw, ok := o.fields[key]
	if !ok {
		return nil, false, nil
	}
	obj, err := parseObject(o.at(key), raw)
	return obj, true, err
}

// value returns any field as a decoded JSON value.
func (o *jsonObject) value(key string) (v any, ok bool, err error) {
	raw, ok := o.fields[key]
	if !ok {
		return nil, false, nil
	}
	v, err = decodeValue(raw)
	if err != nil {
		return nil, true, wrapAt(o.at(key), err)
	}
	return v, true, nil
}
