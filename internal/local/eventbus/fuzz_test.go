package eventbus

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// patternSeeds are patterns and events of the table tests.
var patternSeeds = [][2]string{
	{`{"source":["aws.states"],"detail-type":["Step Functions Execution Status Change"],"detail":{"status":["FAILED","TIMED_OUT","ABORTED"],"stateMachineArn":["arn:aws:states:us-east-1:123456789012:stateMachine:m"]}}`,
		`{"source":"aws.states","detail-type":"Step Functions Execution Status Change","detail":{"status":"FAILED","stateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:m"}}`},
	{`{"a":["x"]}`, `{"a":"x"}`},
	{`{"a":[5]}`, `{"a":5.0}`},
	{`{"a":[null,true]}`, `{"a":[false,null]}`},
	{`{"a":{"b":["x"]}}`, `{"a":[{"b":"y"},{"b":"x"}]}`},
	{`{"a":[{"prefix":"ab"},{"suffix":{"equals-ignore-case":"YZ"}}]}`, `{"a":"abc"}`},
	{`{"a":[{"anything-but":{"prefix":"x"}}]}`, `{"a":["xa","b"]}`},
	{`{"a":[{"anything-but":{"equals-ignore-case":["A","b"]}}]}`, `{"a":"B"}`},
	{`{"a":[{"anything-but":[1,"x"]}]}`, `{"a":1e0}`},
	{`{"a":[{"exists":false}],"b":[{"exists":true}]}`, `{"a":{},"b":[0]}`},
	{`{"a":[{"numeric":[">",0,"<=",1e400]}]}`, `{"a":1e399}`},
	{`{"a":[{"numeric":["=",-0.0]}]}`, `{"a":0}`},
	{`{"a":[{"equals-ignore-case":"ǅ"}]}`, `{"a":"ǆ"}`},
	{`{"a":[1e99999999999]}`, `{"a":1e99999999999}`},
	{`{"a":[]}`, `{}`},
	{`{"a":[[1]]}`, `[]`},
	{`{"a":[{"unknown":1}]}`, `{"a":1} x`},
}

// FuzzPattern: compiling any pattern never panics, matching any event
// against a compiled pattern never panics, and the pattern compiled again
// from its String() matches the same way.
func FuzzPattern(f *testing.F) {
	for _, s := range patternSeeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, pattern, event []byte) {
		p, err := Compile(pattern)
		if err != nil {
			if !errors.Is(err, ErrInvalidPattern) {
				t.Fatalf("Compile(%q): %v is not ErrInvalidPattern", pattern, err)
			}
			return
		}
		ok, err := p.Match(event)
		if err != nil && !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("Match(%q): %v is not ErrInvalidEvent", event, err)
		}
		again, err2 := Compile([]byte(p.String()))
		if err2 != nil {
			t.Fatalf("Compile(%q) compiles, its String() %q does not: %v", pattern, p.String(), err2)
		}
		if ok2, _ := again.Match(event); ok2 != ok {
			t.Fatalf("pattern %q matches %q: %v, its String() %q: %v", pattern, event, ok, p.String(), ok2)
		}
	})
}

// FuzzPatternFromEvent: a pattern made of an event's own leaf values (a
// field's scalar values as exact values, an object's fields as nested
// patterns, an array of objects through one of its elements) matches that
// event.
func FuzzPatternFromEvent(f *testing.F) {
	for _, s := range patternSeeds {
		f.Add([]byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, event []byte) {
		v, err := decodeJSON(event)
		if err != nil {
			return
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		built, ok := patternOf(obj)
		if !ok {
			return // no leaf values: an empty pattern is not allowed
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(built); err != nil {
			t.Fatalf("encoding the pattern of %q: %v", event, err)
		}
		p, err := Compile(buf.Bytes())
		if err != nil {
			t.Fatalf("pattern %s of event %q: %v", buf.Bytes(), event, err)
		}
		if ok, err := p.Match(event); err != nil || !ok {
			t.Fatalf("pattern %s does not match its own event %q (%v)", buf.Bytes(), event, err)
		}
	})
}

// patternOf is the pattern of an object's leaves; false when it has none.
func patternOf(obj map[string]any) (map[string]any, bool) {
	out := map[string]any{}
	for k, v := range obj {
		if p, ok := fieldPatternOf(v); ok {
			out[k] = p
		}
	}
	return out, len(out) > 0
}

func fieldPatternOf(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return patternOf(v)
	case []any:
		// Scalars (at any depth of arrays) make a list of values; without
		// any, the first element object that has leaves stands for the
		// array.
		if values := leaves(v, nil); len(values) > 0 {
			return values, true
		}
		for _, e := range v {
			if o, ok := e.(map[string]any); ok {
				if p, ok := patternOf(o); ok {
					return p, true
				}
			}
		}
		return nil, false
	default:
		return []any{v}, true
	}
}
