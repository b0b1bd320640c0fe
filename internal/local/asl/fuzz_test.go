package asl

import (
	"math/rand/v2"
	"testing"
)

// fuzzDoc is the input and context the fuzz targets evaluate against.
var fuzzDoc = map[string]any{"a": map[string]any{"b": []any{"x", map[string]any{"c": nil}}}, "items": []any{"1", "2"}}

// FuzzPath: parsing a path never panics, a path that parses evaluates
// without panicking, and a reference path
// sets without panicking either.
func FuzzPath(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		env := &evalEnv{ctx: fuzzDoc, vars: newVarScope(nil), m: &Machine{opts: Options{Rand: rand.New(rand.NewPCG(1, 2))}}}
		if p, err := parsePath(text); err == nil {
			p.eval(fuzzDoc, env)
			_, _ = p.set(fuzzDoc, "v")
		}
		if p, err := parseQueryPath(text); err == nil {
			p.eval(fuzzDoc, env)
		}
	})
}

// FuzzIntrinsic: parsing an intrinsic call never panics, and a call that
// parses evaluates to a value or a named error.
func FuzzIntrinsic(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseIntrinsic(text)
		if err != nil {
			return
		}
		env := &evalEnv{ctx: fuzzDoc, vars: newVarScope(nil), m: &Machine{opts: Options{Rand: rand.New(rand.NewPCG(1, 2))}}}
		if _, err := c.eval(fuzzDoc, env); err != nil {
			if e := asError(err); e.Name == "" {
				t.Fatalf("%q: unnamed error %v", text, err)
			}
		}
	})
}
