package batch_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/batch"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// counted is a client of DynamoDB Local that counts the calls it sends.
func counted(t *testing.T) (*dynamodb.Client, *atomic.Int64) { return idemtest.CountingClient(t) }

// TestSQSOnDynamoDB: an SQS batch over DynamoDB Local, one of whose
// messages fails, then delivered again: only that message runs again,
// and each delivery costs the DynamoDB calls Do's contract says (an
// acquisition per message, a settle or release per message run).
func TestSQSOnDynamoDB(t *testing.T) {
	client, n := counted(t)
	store := idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))
	idem, err := idempotency.New(idempotency.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	failing := "m2"
	h := batch.SQS(idem, batch.Config[events.SQSMessage]{}, func(_ context.Context, m events.SQSMessage) error {
		ran = append(ran, m.MessageId)
		if m.MessageId == failing {
			return errLedger
		}
		return nil
	})
	ev := events.SQSEvent{Records: []events.SQSMessage{msg(queue, "m1", "a"), msg(queue, "m2", "b"), msg(queue, "m3", "c")}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	n.Store(0) // the table's creation
	resp, err := h(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Fatalf("first delivery = %+v, %v, want m2 failed", resp, err)
	}
	if got := n.Load(); got != 3+2+1 {
		t.Errorf("first delivery: %d DynamoDB calls, want 6", got)
	}
	e, err := store.Get(ctx, queue, "m2")
	if err != nil || e.Status != idempotency.EntryReleased {
		t.Errorf("record of m2 = %+v, %v, want RELEASED", e, err)
	}

	failing = ""
	n.Store(0)
	resp, err = h(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second delivery = %+v, %v, want no failure", resp, err)
	}
	if got := n.Load(); got != 3+1 {
		t.Errorf("second delivery: %d DynamoDB calls, want 4", got)
	}
	if want := []string{"m1", "m2", "m3", "m2"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		if e, err := store.Get(ctx, queue, id); err != nil || e.Status != idempotency.EntryCompleted {
			t.Errorf("record of %s = %+v, %v, want COMPLETED", id, e, err)
		}
	}
}
