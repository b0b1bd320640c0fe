package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// notesTable creates a table of the caller's own items, keyed by "pk".
func notesTable(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	return idemtest.TableFrom(t, client, &dynamodb.CreateTableInput{
		TableName:            aws.String("notes"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
}

func putNote(table, id string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: id}},
	}}
}

func noteExists(t *testing.T, client *dynamodb.Client, table, id string) bool {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Item) > 0
}

// acquire takes (alice, key) with a lease of a minute at clock's time.
func acquire(t *testing.T, p idempotency.Persistence, clock *idemtest.Clock, key string) idempotency.Entry {
	t.Helper()
	now := clock.Now()
	e, acquired, err := p.Acquire(context.Background(), idempotency.AcquireInput{
		Scope: "alice", Key: key, Fingerprint: "fp", Now: now,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	})
	if err != nil || !acquired {
		t.Fatalf("Acquire = %+v, %v, %v", e, acquired, err)
	}
	return e
}

func nothing(*testing.T, idempotency.Persistence, *idemtest.Clock, idempotency.Entry) {}

// A transaction of the caller's with the fence commits while the lease
// holds the record, and is cancelled, writing nothing, once it does not.
func TestFence(t *testing.T) {
	for _, c := range []struct {
		name string
		// after moves the record on from the lease's acquisition.
		after func(t *testing.T, p idempotency.Persistence, clock *idemtest.Clock, e idempotency.Entry)
		holds bool
		// forge, when set, makes the lease the fence is of.
		forge func(l idempotency.Lease) idempotency.Lease
	}{
		{"live lease", nothing, true, nil},
		{"lease expired, not taken over", func(_ *testing.T, _ idempotency.Persistence, clock *idemtest.Clock, _ idempotency.Entry) {
			clock.Advance(time.Hour)
		}, true, nil},
		{"taken over", func(t *testing.T, p idempotency.Persistence, clock *idemtest.Clock, _ idempotency.Entry) {
			clock.Advance(time.Minute)
			if e := acquire(t, p, clock, "k1"); e.LeaseCount != 2 {
				t.Fatalf("takeover lease %d, want 2", e.LeaseCount)
			}
		}, false, nil},
		{"released", func(t *testing.T, p idempotency.Persistence, _ *idemtest.Clock, e idempotency.Entry) {
			if err := p.Release(context.Background(), e.Lease()); err != nil {
				t.Fatal(err)
			}
		}, false, nil},
		{"settled", func(t *testing.T, p idempotency.Persistence, clock *idemtest.Clock, e idempotency.Entry) {
			o := idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte("{}"), ExpiresAt: clock.Now().Add(time.Hour)}
			if err := p.Settle(context.Background(), e.Lease(), o); err != nil {
				t.Fatal(err)
			}
		}, false, nil},
		{"another lease id", nothing, false,
			func(l idempotency.Lease) idempotency.Lease { l.ID = idempotency.NewLeaseID(); return l }},
		{"an earlier lease count", nothing, false,
			func(l idempotency.Lease) idempotency.Lease { l.Count--; return l }},
	} {
		for _, s := range []schema{{name: "default", attrs: idempotency.DefaultAttributes()}, schemas[2]} {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				_, client, _, store := s.open(t)
				notes := notesTable(t, client)
				clock := idemtest.NewClock(idemtest.Now())
				e := acquire(t, store, clock, "k1")
				c.after(t, store, clock, e)

				lease := e.Lease()
				if c.forge != nil {
					lease = c.forge(lease)
				}
				fence, err := store.Fence(lease)
				if err != nil {
					t.Fatal(err)
				}
				_, err = client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
					TransactItems: []types.TransactWriteItem{putNote(notes, "n1"), fence},
				})
				if c.holds {
					if err != nil {
						t.Fatalf("TransactWriteItems = %v, want it committed", err)
					}
					if !noteExists(t, client, notes, "n1") {
						t.Error("the note was not written")
					}
					return
				}
				var tce *types.TransactionCanceledException
				if !errors.As(err, &tce) {
					t.Fatalf("TransactWriteItems = %v, want a TransactionCanceledException", err)
				}
				if r := tce.CancellationReasons; len(r) != 2 || aws.ToString(r[1].Code) != "ConditionalCheckFailed" || aws.ToString(r[0].Code) == "ConditionalCheckFailed" {
					t.Errorf("cancellation reasons %+v, want ConditionalCheckFailed on the fence (1) only", r)
				}
				if noteExists(t, client, notes, "n1") {
					t.Error("the note was written after all")
				}
			})
		}
	}
}
