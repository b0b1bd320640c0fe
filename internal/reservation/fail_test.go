package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// FailReserved settles a record that no operation has taken yet, in one
// call, and leaves any other record as it is, answering it as it is.
func TestFailReserved(t *testing.T) {
	const response = `{"status":"FAILED"}`
	tests := []struct {
		name string
		// status moves the record there first; "" leaves it RESERVED,
		// and none means there is no record.
		status     reservation.Status
		none       bool
		attempt    int64 // the record's attempt: 1 for a resumed one
		resourceID string
		wantSettle bool
		wantStatus reservation.Status
		wantErr    error
	}{
		{name: "reserved", resourceID: "t-1", wantSettle: true, wantStatus: reservation.StatusFailed},
		{name: "reserved for another operation", resourceID: "t-other", wantStatus: reservation.StatusReserved},
		{name: "taken by its operation", status: reservation.StatusInProgress, resourceID: "t-1", wantStatus: reservation.StatusInProgress},
		{name: "completed", status: reservation.StatusCompleted, resourceID: "t-1", wantStatus: reservation.StatusCompleted},
		{name: "no record", none: true, resourceID: "t-1", wantErr: idempotency.ErrNotFound},
		// RESERVED again under its next attempt: an earlier run may have
		// done part of the work, so it was not refused before it started.
		{name: "resumed", attempt: 1, resourceID: "t-1", wantStatus: reservation.StatusReserved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, calls := counted(t)
			table := table(t, client)
			clk := &clock{now: idemtest.Now()}
			store := reservation.NewStore(client, table, reservation.WithClock(clk.Now), reservation.WithRetention(2*time.Hour))
			ctx := context.Background()
			key := idempotency.RecordKey("alice", "k1")
			if !tt.none {
				if _, _, err := store.Reserve(ctx, reservationFor("alice", "k1", `{"a":1}`, "t-1")); err != nil {
					t.Fatal(err)
				}
			}
			if tt.status != "" {
				settle(t, client, table, key, tt.status, clk.now)
			}
			if tt.attempt != 0 {
				if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:                 aws.String(table),
					Key:                       map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: key}},
					UpdateExpression:          aws.String("SET attempt = :a"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: fmt.Sprint(tt.attempt)}},
				}); err != nil {
					t.Fatal(err)
				}
			}
			clk.now = clk.now.Add(time.Minute)
			calls.Store(0)
			rec, settled, err := store.FailReserved(ctx, key, tt.resourceID, response)
			if !errors.Is(err, tt.wantErr) || settled != tt.wantSettle {
				t.Fatalf("FailReserved = %t, %v; want %t, %v", settled, err, tt.wantSettle, tt.wantErr)
			}
			if err != nil {
				return
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
			stored, err := store.GetByRecordKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if rec != stored || stored.Status != tt.wantStatus {
				t.Fatalf("returned %+v\nstored %+v\nwant status %s", rec, stored, tt.wantStatus)
			}
			if !tt.wantSettle {
				return
			}
			if stored.Response != response || stored.Pending != "" || stored.ExpiresAt != clk.now.Add(2*time.Hour).Unix() ||
				stored.UpdatedAt != clk.now.UTC().Format(reservation.TimeFormat) {
				t.Errorf("settled %+v: want the response, no pending, expiry at settlement plus the retention", stored)
			}
			// Settled, it is a record like any other: the key stays taken.
			again, created, err := store.Reserve(ctx, reservationFor("alice", "k1", `{"a":1}`, "t-2"))
			if err != nil || created || again.ResourceID != "t-1" {
				t.Errorf("Reserve after = %+v, %t, %v; want the settled record", again, created, err)
			}
		})
	}
}
