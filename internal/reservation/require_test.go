package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// grantsTable creates another table, keyed as many are (pk, sk), for the
// items a reservation may require.
func grantsTable(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	return idemtest.TableFrom(t, client, &dynamodb.CreateTableInput{
		TableName:   aws.String("grants"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
	})
}

// putGrant stores an item of another table that a reservation may
// require: the holder of a resource.
func putGrant(t *testing.T, client *dynamodb.Client, table, resource, holder string) {
	t.Helper()
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"pk":     &types.AttributeValueMemberS{Value: "GRANT#" + resource},
			"sk":     &types.AttributeValueMemberS{Value: "GRANT"},
			"holder": &types.AttributeValueMemberS{Value: holder},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

// heldBy is the condition that resource exists and is held by holder.
func heldBy(t *testing.T, table, resource, holder string) types.ConditionCheck {
	t.Helper()
	expr, err := expression.NewBuilder().WithCondition(
		expression.Name("holder").Equal(expression.Value(holder))).Build()
	if err != nil {
		t.Fatal(err)
	}
	return types.ConditionCheck{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "GRANT#" + resource},
			"sk": &types.AttributeValueMemberS{Value: "GRANT"},
		},
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
}

func TestReserveRequire(t *testing.T) {
	client, calls := counted(t)
	records, other := table(t, client), grantsTable(t, client)
	clk := &clock{now: idemtest.Now()}
	store := reservation.NewStore(client, records, reservation.WithClock(clk.Now))
	ctx := context.Background()
	putGrant(t, client, other, "acct-1", "alice")

	tests := []struct {
		name string
		// existing is the status of a record of the key stored first
		// (without conditions), settledAgo before the request; "" for none.
		existing   reservation.Status
		settledAgo time.Duration
		resource   string // the resource the request requires alice to hold
		// wantCreated, wantErr: the outcome; wantID the record's transfer.
		wantCreated bool
		wantErr     error
		wantID      string
		wantCalls   int64
	}{
		{name: "free key, condition holds", resource: "acct-1",
			wantCreated: true, wantID: "new", wantCalls: 1},
		{name: "free key, held by another", resource: "acct-2-bob",
			wantErr: idempotency.ErrPreconditionFailed, wantCalls: 2},
		{name: "free key, resource missing", resource: "acct-missing",
			wantErr: idempotency.ErrPreconditionFailed, wantCalls: 2},
		{name: "taken key, condition holds", existing: reservation.StatusInProgress, resource: "acct-1",
			wantID: "old", wantCalls: 1},
		{name: "taken key, condition fails: the record answers", existing: reservation.StatusInProgress, resource: "acct-missing",
			wantID: "old", wantCalls: 1},
		{name: "settled key within retention, condition fails", existing: reservation.StatusCompleted, settledAgo: time.Hour, resource: "acct-missing",
			wantID: "old", wantCalls: 1},
		{name: "expired key, condition holds", existing: reservation.StatusFailed, settledAgo: 48 * time.Hour, resource: "acct-1",
			wantCreated: true, wantID: "new", wantCalls: 1},
		{name: "expired key, condition fails", existing: reservation.StatusCompleted, settledAgo: 48 * time.Hour, resource: "acct-missing",
			wantErr: idempotency.ErrPreconditionFailed, wantCalls: 2},
	}
	putGrant(t, client, other, "acct-2-bob", "bob")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("k-%d", i)
			clk.now = idemtest.Now()
			if tt.existing != "" {
				old, _, err := store.Reserve(ctx, reservationFor("alice", key, `{"a":1}`, "old"))
				if err != nil {
					t.Fatal(err)
				}
				settle(t, client, records, old.Key, tt.existing, clk.now.Add(-tt.settledAgo))
			}
			before, _ := store.Get(ctx, "alice", key)

			r := reservationFor("alice", key, `{"a":1}`, "new")
			r.Require = []types.ConditionCheck{heldBy(t, other, tt.resource, "alice")}
			calls.Store(0)
			rec, created, err := store.Reserve(ctx, r)
			if n := calls.Load(); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if !errors.Is(err, tt.wantErr) || (err != nil && tt.wantErr == nil) {
				t.Fatalf("Reserve = %+v, %v, %v; want error %v", rec, created, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				var pe *idempotency.PreconditionError
				if !errors.As(err, &pe) || pe.Index != 0 {
					t.Errorf("error %v: want a *PreconditionError for condition 0", err)
				}
				after, gerr := store.Get(ctx, "alice", key)
				if before.Key == "" && !errors.Is(gerr, idempotency.ErrNotFound) {
					t.Errorf("a refused reservation stored %+v (%v)", after, gerr)
				}
				if before.Key != "" && after != before {
					t.Errorf("a refused reservation changed the record %+v to %+v", before, after)
				}
				return
			}
			if created != tt.wantCreated || rec.ResourceID != tt.wantID {
				t.Fatalf("Reserve = %s created %v, want %s created %v", rec.ResourceID, created, tt.wantID, tt.wantCreated)
			}
			if stored, err := store.Get(ctx, "alice", key); err != nil || stored.ResourceID != tt.wantID {
				t.Fatalf("stored %+v, %v; want transfer %s", stored, err, tt.wantID)
			}
		})
	}
}

func TestReserveAttributes(t *testing.T) {
	tests := []struct {
		name    string
		require bool
		attrs   map[string]types.AttributeValue
		wantErr bool
	}{
		{name: "put", attrs: map[string]types.AttributeValue{"amount": &types.AttributeValueMemberN{Value: "250"}}},
		{name: "transaction", require: true, attrs: map[string]types.AttributeValue{"amount": &types.AttributeValueMemberN{Value: "250"}}},
		{name: "a record attribute", attrs: map[string]types.AttributeValue{reservation.AttrStatus: &types.AttributeValueMemberS{Value: "COMPLETED"}}, wantErr: true},
		{name: "an unset record attribute", attrs: map[string]types.AttributeValue{reservation.AttrExpiresAt: &types.AttributeValueMemberN{Value: "1"}}, wantErr: true},
	}
	client := idemtest.Client(t)
	records, grants := table(t, client), grantsTable(t, client)
	store := reservation.NewStore(client, records)
	putGrant(t, client, grants, "acct-1", "alice")
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("attrs-%d", i)
			r := reservationFor("alice", key, `{"a":1}`, "t")
			r.Attributes = tt.attrs
			if tt.require {
				r.Require = []types.ConditionCheck{heldBy(t, grants, "acct-1", "alice")}
			}
			_, created, err := store.Reserve(ctx, r)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Reserve with attributes %v succeeded", tt.attrs)
				}
				if _, gerr := store.Get(ctx, "alice", key); !errors.Is(gerr, idempotency.ErrNotFound) {
					t.Fatalf("a refused reservation stored a record (%v)", gerr)
				}
				return
			}
			if err != nil || !created {
				t.Fatalf("Reserve = %v, %v", created, err)
			}
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(records),
				Key:       map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", key)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Amount int64  `dynamodbav:"amount"`
				Status string `dynamodbav:"status"`
			}
			if err := attributevalue.UnmarshalMap(out.Item, &got); err != nil || got.Amount != 250 || got.Status != "RESERVED" {
				t.Fatalf("stored %+v (%v), want amount 250 beside the record", got, err)
			}
		})
	}
}
