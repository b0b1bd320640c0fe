package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	st := newStats()
	for label, n := range map[string]int{"202": 90, "200": 5, "422 insufficient_funds": 3, "422 idempotency_key_reused": 2} {
		for range n {
			st.add(opNew, label, time.Millisecond)
		}
	}
	ok := &result{stats: st, elapsed: time.Second, accepted: 95, outcomes: map[string]int{"COMPLETED": 92, "FAILED insufficient_funds": 3},
		before: map[string]int64{"EUR": 300000, "JPY": 500}, after: map[string]int64{"EUR": 300000, "JPY": 500}}
	failed := *ok
	failed.after = map[string]int64{"EUR": 299900}
	failed.failures = []string{"EUR: 300000 before, 299900 after", "2 transfers not terminal"}
	tests := []struct {
		name   string
		r      *result
		want   []string
		absent []string
	}{
		{"a good run", ok, []string{
			"422 insufficient_funds: duplicates replaying a transfer that settled FAILED",
			"422 idempotency_key_reused: keys sent again with another body",
			"200: duplicates replaying a COMPLETED transfer",
			"balances: EUR 3,000.00 before, EUR 3,000.00 after, over 2 accounts",
			"balances: JPY 500 before, JPY 500 after",
			"OK: money conserved",
		}, []string{"FAILED:", "  FAIL:"}},
		{"a failed run lists its failures in the same output", &failed, []string{
			"balances: EUR 3,000.00 before, EUR 2,999.00 after",
			"FAILED: 2 checks",
			"  FAIL: EUR: 300000 before, 299900 after",
			"  FAIL: 2 transfers not terminal",
		}, []string{"OK:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			report(&out, config{clients: 8, accounts: []string{"a", "b"}}, tc.r)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out.String(), a) {
					t.Errorf("report has %q:\n%s", a, out.String())
				}
			}
		})
	}
}
