package api_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/transfers/internal/reservation"
)

// Every timestamp is answered in one format, RFC 3339 UTC with
// milliseconds, whatever precision stored it (the workflow's context
// object, the reaper, an older release). conforms checks the pattern on
// every answer; this checks the values.
func TestTimestampsHaveMilliseconds(t *testing.T) {
	e := newEnv(t)
	e.do(post(alice, "k", body))
	rec, _ := e.store.Get(context.Background(), aliceScope, "k")
	e.setRecord(rec.Key, reservation.StatusCompleted,
		`{"transferId":"transfer-1","status":"COMPLETED","sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR","createdAt":"2026-05-04T09:08:07Z","settledAt":"2026-05-04T11:08:07.912345678+02:00"}`)
	tr := transferOf(t, e.do(get(alice, "/transfers/{transferId}", "/transfers/transfer-1", map[string]string{"transferId": "transfer-1"})))
	if tr.CreatedAt != "2026-05-04T09:08:07.000Z" || tr.SettledAt != "2026-05-04T09:08:07.912Z" {
		t.Fatalf("createdAt %q settledAt %q, want 2026-05-04T09:08:07.000Z and 2026-05-04T09:08:07.912Z", tr.CreatedAt, tr.SettledAt)
	}
}
