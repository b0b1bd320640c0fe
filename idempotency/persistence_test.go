package idempotency_test

import (
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
)

func TestEntryFree(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		e    idempotency.Entry
		fp   string
		want bool
	}{
		{"released", idempotency.Entry{Status: idempotency.EntryReleased, Fingerprint: "other"}, "a", true},
		{"in progress, lease running", idempotency.Entry{Status: idempotency.EntryInProgress, Fingerprint: "a", LeaseUntil: now.Add(time.Millisecond)}, "a", false},
		{"in progress, lease expired", idempotency.Entry{Status: idempotency.EntryInProgress, Fingerprint: "a", LeaseUntil: now}, "a", true},
		{"in progress, lease expired, another payload", idempotency.Entry{Status: idempotency.EntryInProgress, Fingerprint: "b", LeaseUntil: now}, "a", false},
		{"completed, retained", idempotency.Entry{Status: idempotency.EntryCompleted, Fingerprint: "a", ExpiresAt: now.Add(time.Second)}, "a", false},
		{"completed, expired", idempotency.Entry{Status: idempotency.EntryCompleted, Fingerprint: "b", ExpiresAt: now}, "a", true},
		{"failed, expired", idempotency.Entry{Status: idempotency.EntryFailed, ExpiresAt: now.Add(-time.Hour)}, "a", true},
		{"completed, no expiry", idempotency.Entry{Status: idempotency.EntryCompleted}, "a", false},
		{"unknown status", idempotency.Entry{Status: "RECONCILING", ExpiresAt: now.Add(-time.Hour)}, "a", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.e.Free(c.fp, now); got != c.want {
				t.Errorf("Free = %v, want %v", got, c.want)
			}
		})
	}
}

func TestEntryCloneSharesNothing(t *testing.T) {
	e := idempotency.Entry{Output: []byte("abc")}
	c := e.Clone()
	c.Output[0] = 'X'
	if string(e.Output) != "abc" {
		t.Errorf("the original changed: %s", e.Output)
	}
}
