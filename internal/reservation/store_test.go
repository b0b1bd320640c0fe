package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// counted is a client of DynamoDB Local that counts the calls it sends.
func counted(t *testing.T) (*dynamodb.Client, *atomic.Int64) { return idemtest.CountingClient(t) }

type clock struct{ now time.Time }

// describeItem renders a stored item's attributes for a failure message.
func describeItem(item map[string]types.AttributeValue) string {
	if item == nil {
		return "none"
	}
	names := make([]string, 0, len(item))
	for name := range item {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			fmt.Fprintf(&b, "%s=%q ", name, v.Value)
		case *types.AttributeValueMemberN:
			fmt.Fprintf(&b, "%s=%s ", name, v.Value)
		default:
			fmt.Fprintf(&b, "%s=%T ", name, v)
		}
	}
	return strings.TrimSpace(b.String())
}

func (c *clock) Now() time.Time { return c.now }

func reservationFor(scope, key, body, id string) reservation.Reservation {
	return reservation.Reservation{
		Scope: scope, Key: key, Fingerprint: idempotency.Fingerprint([]byte(body)),
		ResourceID: id, Request: []byte(body),
	}
}

// settle moves a record to status at settledAt, as the workflow does: a
// terminal record gets its expiry, settledAt plus the retention.
func settle(t *testing.T, client *dynamodb.Client, table, recordKey string, status reservation.Status, settledAt time.Time) {
	t.Helper()
	update := expression.Set(expression.Name(reservation.AttrStatus), expression.Value(status))
	if status.Terminal() {
		update = update.Remove(expression.Name(reservation.AttrPending)).
			Set(expression.Name(reservation.AttrExpiresAt), expression.Value(settledAt.Add(reservation.DefaultRetention).Unix()))
	}
	expr, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: recordKey}},
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}); err != nil {
		t.Fatal(err)
	}
}

func TestReserveNewKey(t *testing.T) {
	client, calls := counted(t)
	table := table(t, client)
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	store := reservation.NewStore(client, table, reservation.WithClock(clk.Now), reservation.WithRetention(2*time.Hour))

	calls.Store(0)
	rec, created, err := store.Reserve(context.Background(), reservationFor("alice", "k1", `{"a":1}`, "t-1"))
	if err != nil || !created {
		t.Fatalf("Reserve = %v, %v", created, err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls, want 1", calls.Load())
	}
	got, err := store.Get(context.Background(), "alice", "k1")
	if err != nil {
		t.Fatal(err)
	}
	want := reservation.Record{
		Key: idempotency.RecordKey("alice", "k1"), Scope: "alice", Status: reservation.StatusReserved,
		Fingerprint: idempotency.Fingerprint([]byte(`{"a":1}`)), ResourceID: "t-1", Request: `{"a":1}`,
		CreatedAt: "2026-03-01T12:00:00.000Z", RetentionSeconds: 7200, Pending: "RESERVED", SweepAt: "2026-03-01T12:00:00.000Z",
	}
	if got != want || rec != want {
		t.Fatalf("stored %+v\nreturned %+v\nwant %+v", got, rec, want)
	}
}

func TestReserveExistingKey(t *testing.T) {
	client, calls := counted(t)
	table := table(t, client)
	clk := &clock{now: idemtest.Now()}
	store := reservation.NewStore(client, table, reservation.WithClock(clk.Now))
	ctx := context.Background()

	tests := []struct {
		name   string
		status reservation.Status
		// settled is when the record settled, after the reservation.
		settled     time.Duration
		after       time.Duration
		wantCreated bool
	}{
		{"reserved", reservation.StatusReserved, 0, time.Minute, false},
		{"in progress", reservation.StatusInProgress, 0, time.Hour, false},
		{"completed within retention", reservation.StatusCompleted, 0, 23 * time.Hour, false},
		{"failed within retention", reservation.StatusFailed, 0, 23 * time.Hour, false},
		{"completed past retention", reservation.StatusCompleted, 0, 24 * time.Hour, true},
		{"failed past retention", reservation.StatusFailed, 0, 48 * time.Hour, true},
		// Retention runs from settlement, not from the reservation.
		{"settled late, within retention from the settlement", reservation.StatusCompleted, 12 * time.Hour, 30 * time.Hour, false},
		// Expiry never frees a transfer that has not finished.
		{"reserved past retention", reservation.StatusReserved, 0, 48 * time.Hour, false},
		{"in progress past retention", reservation.StatusInProgress, 0, 48 * time.Hour, false},
		{"reconciling past retention", reservation.StatusReconciling, 0, 48 * time.Hour, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.now = idemtest.Now()
			key := fmt.Sprintf("key-%d", i)
			first, _, err := store.Reserve(ctx, reservationFor("alice", key, `{"a":1}`, "first"))
			if err != nil {
				t.Fatal(err)
			}
			settle(t, client, table, first.Key, tt.status, clk.now.Add(tt.settled))
			clk.now = clk.now.Add(tt.after)
			// The record as stored before the second reservation, to say
			// what the condition was judged on when the answer is wrong.
			before, err := client.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: first.Key}},
			})
			if err != nil {
				t.Fatal(err)
			}

			calls.Store(0)
			rec, created, err := store.Reserve(ctx, reservationFor("alice", key, `{"a":1}`, "second"))
			if err != nil {
				t.Fatal(err)
			}
			if calls.Load() != 1 {
				t.Errorf("%d calls, want 1 (the conditional write returns the existing record)", calls.Load())
			}
			if created != tt.wantCreated {
				t.Fatalf("created = %v, want %v, at %s; the record before: %s", created, tt.wantCreated, clk.now.Format(time.RFC3339), describeItem(before.Item))
			}
			wantID, wantStatus := "first", tt.status
			if tt.wantCreated {
				wantID, wantStatus = "second", reservation.StatusReserved
			}
			if rec.ResourceID != wantID || rec.Status != wantStatus {
				t.Fatalf("record %s in %s, want %s in %s", rec.ResourceID, rec.Status, wantID, wantStatus)
			}
		})
	}
}

func TestReserveFingerprintMismatch(t *testing.T) {
	client := idemtest.Client(t)
	store := reservation.NewStore(client, table(t, client))
	ctx := context.Background()
	if _, _, err := store.Reserve(ctx, reservationFor("alice", "k", `{"amount":1}`, "t-1")); err != nil {
		t.Fatal(err)
	}
	other := reservationFor("alice", "k", `{"amount":2}`, "t-2")
	rec, created, err := store.Reserve(ctx, other)
	if err != nil || created {
		t.Fatalf("Reserve = %v, %v", created, err)
	}
	if err := rec.Matches(other.Fingerprint); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Fatalf("Matches = %v, want ErrKeyReused", err)
	}
	if rec.Request != `{"amount":1}` {
		t.Fatalf("stored request changed to %s", rec.Request)
	}
}

func TestReserveScopesKeys(t *testing.T) {
	client := idemtest.Client(t)
	store := reservation.NewStore(client, table(t, client))
	ctx := context.Background()
	for _, scope := range []string{"alice", "bob"} {
		rec, created, err := store.Reserve(ctx, reservationFor(scope, "shared", `{"a":1}`, "t-"+scope))
		if err != nil || !created || rec.ResourceID != "t-"+scope {
			t.Fatalf("%s: Reserve = %+v, %v, %v", scope, rec, created, err)
		}
	}
	for _, c := range []struct {
		scope, id string
		want      error
	}{
		{"alice", "t-alice", nil},
		{"bob", "t-bob", nil},
		{"bob", "t-alice", idempotency.ErrNotFound},
		{"alice", "t-bob", idempotency.ErrNotFound},
		{"alice", "t-unknown", idempotency.ErrNotFound},
	} {
		t.Run(c.scope+"/"+c.id, func(t *testing.T) {
			rec, err := store.FindByResourceID(ctx, c.scope, c.id)
			if !errors.Is(err, c.want) {
				t.Fatalf("FindByResourceID = %+v, %v; want %v", rec, err, c.want)
			}
			if err == nil && (rec.Scope != c.scope || rec.ResourceID != c.id) {
				t.Fatalf("found %+v", rec)
			}
		})
	}
}

func TestReserveConcurrently(t *testing.T) {
	client := idemtest.Client(t)
	store := reservation.NewStore(client, table(t, client))
	const n = 20
	var wg sync.WaitGroup
	var created atomic.Int64
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, ok, err := store.Reserve(context.Background(), reservationFor("alice", "race", `{"a":1}`, fmt.Sprintf("t-%d", i)))
			if ok {
				created.Add(1)
			}
			ids[i], errs[i] = rec.ResourceID, err
		}()
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d reservations created, want 1", created.Load())
	}
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("request %d: %s, %v; want %s", i, ids[i], errs[i], ids[0])
		}
	}
}

func TestReserveRejectsBadKey(t *testing.T) {
	client, calls := counted(t)
	store := reservation.NewStore(client, "never-called")
	calls.Store(0)
	if _, _, err := store.Reserve(context.Background(), reservationFor("alice", "", `{}`, "t")); !errors.Is(err, idempotency.ErrKeyMissing) {
		t.Fatalf("err = %v, want ErrKeyMissing", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d calls for an invalid key", calls.Load())
	}
}

func TestStoreUnavailable(t *testing.T) {
	// A closed port: a real connection failure, surfaced as an error.
	client := dynamodb.New(idemtest.Client(t).Options(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.RetryMaxAttempts = 1
	})
	store := reservation.NewStore(client, "t")
	if _, _, err := store.Reserve(context.Background(), reservationFor("alice", "k", `{}`, "t")); err == nil {
		t.Fatal("Reserve against an unreachable endpoint succeeded")
	}
}

// table creates a table of the reservation store's schema (TableInput,
// its indexes included), with Time to Live on, for this test.
func table(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	name := idemtest.TableFrom(t, client, reservation.TableInput("reservations"))
	if _, err := client.UpdateTimeToLive(t.Context(), reservation.TimeToLiveInput(name)); err != nil {
		t.Fatalf("enable time to live on %s: %v", name, err)
	}
	return name
}
