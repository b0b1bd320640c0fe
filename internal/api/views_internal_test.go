package api

import (
	"math/rand/v2"
	"testing"
	"time"
)

// restamp's shortcut for a timestamp already in TimeLayout gives what
// parsing and formatting it gives, dates that do not exist included.
func TestRestampInLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	inputs := []string{"2026-11-26T10:00:00.123Z", "2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
		"2026-00-10T00:00:00.000Z", "2026-01-00T00:00:00.000Z", "2026-04-31T00:00:00.000Z", "2026-01-01T24:00:00.000Z",
		"2026-01-01T00:60:00.000Z", "2026-01-01T00:00:60.000Z", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"}
	for range 20000 {
		b := []byte(TimeLayout)
		for i := range b {
			if '0' <= b[i] && b[i] <= '9' {
				b[i] = byte('0' + rng.IntN(10))
			}
		}
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		if !inTimeLayout(s) {
			t.Fatalf("inTimeLayout(%q) = false", s)
		}
		want := s
		if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
			want = stamp(tm)
		}
		if got := restamp(s); got != want {
			t.Fatalf("restamp(%q) = %q, parsing and formatting give %q", s, got, want)
		}
	}
	for _, s := range []string{"", "2026-11-26T10:00:00Z", "2026-11-26T10:00:00.123456Z", "2026-11-26T10:00:00.123+00:00", "2026-11-26t10:00:00.123Z", "2026-11-26T10:00:00.123z", "2026-11-2aT10:00:00.123Z"} {
		if inTimeLayout(s) {
			t.Errorf("inTimeLayout(%q) = true", s)
		}
	}
}
