package asl

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestMathRandom follows the developer guide's "Intrinsic functions"
// (https://docs.aws.amazon.com/step-functions/latest/dg/intrinsic-functions.html#asl-intrsc-func-math-operation):
// States.MathRandom(start, end[, seed]) gives an integer from start
// (inclusive) to end (exclusive); the same seed gives the same number, and
// without a seed the machine's Options.Rand decides.
func TestMathRandom(t *testing.T) {
	run := func(t *testing.T, expr string, seed uint64) string {
		t.Helper()
		m, err := Load(testFile, []byte(passDef(`"Parameters":{"v.$":"`+expr+`"},"OutputPath":"$.v"`)), Options{Rand: rand.New(rand.NewPCG(seed, 1))})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		r := execute(t, context.Background(), m, `{"start":1,"end":999}`)
		if r.Status != StatusSucceeded {
			t.Fatalf("status %s: %s %s", r.Status, r.Error, r.Cause)
		}
		return string(r.Output)
	}
	t.Run("in range", func(t *testing.T) {
		for seed := range uint64(200) {
			got := run(t, "States.MathRandom(1, 3)", seed)
			if got != "1" && got != "2" {
				t.Fatalf("seed %d: %s, want 1 or 2", seed, got)
			}
		}
	})
	t.Run("seeded argument", func(t *testing.T) {
		a := run(t, "States.MathRandom($.start, $.end, 1234)", 1)
		if b := run(t, "States.MathRandom($.start, $.end, 1234)", 2); a != b {
			t.Fatalf("same seed argument: %s then %s", a, b)
		}
	})
	t.Run("seedable through Options.Rand", func(t *testing.T) {
		a := run(t, "States.MathRandom(0, 1000000)", 7)
		if b := run(t, "States.MathRandom(0, 1000000)", 7); a != b {
			t.Fatalf("same Options.Rand seed: %s then %s", a, b)
		}
		if c := run(t, "States.MathRandom(0, 1000000)", 8); c == a {
			t.Fatalf("another seed gave the same number %s", a)
		}
	})
	for _, tc := range []struct{ name, expr string }{
		{"end not above start", "States.MathRandom(5, 5)"},
		{"not integers", "States.MathRandom(1.5, 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantFailed(t, runDef(t, passDef(`"Parameters":{"v.$":"`+tc.expr+`"}`), nil, `{}`), ErrIntrinsicFailure, "")
		})
	}
}
