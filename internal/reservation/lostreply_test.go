package reservation_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestReserveAnswerLost: a reservation whose PutItem committed but whose
// answer was lost, retried by the SDK, is told it created the record (the
// record holds its own resource), and not that an earlier request holds
// the key.
func TestReserveAnswerLost(t *testing.T) {
	client, attempts := idemtest.LoseFirstReply(t, "PutItem")
	store := reservation.NewStore(client, table(t, client))
	rec, created, err := store.Reserve(context.Background(), reservationFor("alice", "k1", `{"a":1}`, "t-1"))
	if n := attempts.Load(); n != 2 {
		t.Fatalf("%d PutItem attempts, want 2 (the first answer lost)", n)
	}
	if err != nil || !created || rec.ResourceID != "t-1" || rec.Status != reservation.StatusReserved {
		t.Fatalf("Reserve = %+v, %v, %v; want the record created for t-1", rec, created, err)
	}
	// A later request with the same key is still a duplicate.
	rec, created, err = store.Reserve(context.Background(), reservationFor("alice", "k1", `{"a":1}`, "t-2"))
	if err != nil || created || rec.ResourceID != "t-1" {
		t.Fatalf("the duplicate = %+v, %v, %v; want t-1's record, not created", rec, created, err)
	}
}
