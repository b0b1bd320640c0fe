package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
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

func TestAttributesValidate(t *testing.T) {
	powertoolsSorted := idempotency.PowertoolsAttributes()
	powertoolsSorted.SortKey = "sk"
	with := func(f func(a *idempotency.Attributes)) idempotency.Attributes {
		a := idempotency.DefaultAttributes()
		f(&a)
		return a
	}
	for _, c := range []struct {
		name string
		a    idempotency.Attributes
		// field and attr are the refused field and its value; "" when
		// the names are accepted.
		field, attr string
	}{
		{"defaults", idempotency.DefaultAttributes(), "", ""},
		{"powertools", idempotency.PowertoolsAttributes(), "", ""},
		{"powertools with a sort key", powertoolsSorted, "", ""},
		{"sort key and partition value", with(func(a *idempotency.Attributes) { a.SortKey, a.PartitionValue = "sk", "idem" }), "", ""},
		{"a dot is part of the name", with(func(a *idempotency.Attributes) { a.Status = "call.status" }), "", ""},
		{"zero value", idempotency.Attributes{}, "PartitionKey", ""},
		{"empty status", with(func(a *idempotency.Attributes) { a.Status = "" }), "Status", ""},
		{"empty validation", with(func(a *idempotency.Attributes) { a.Validation = "" }), "Validation", ""},
		{"data named as status", with(func(a *idempotency.Attributes) { a.Data = "status" }), "Data", "status"},
		{"sort key named as the partition key", with(func(a *idempotency.Attributes) { a.SortKey = "pk" }), "SortKey", "pk"},
		{"expiry named as the lease id", with(func(a *idempotency.Attributes) { a.Expiry = idempotency.AttrLeaseID }), "Expiry", "leaseId"},
		{"status named as the format", with(func(a *idempotency.Attributes) { a.Status = idempotency.AttrFormat }), "Status", "format"},
		{"data named as the failure", with(func(a *idempotency.Attributes) { a.Data = idempotency.AttrFailure }), "Data", "failure"},
		{"bracket", with(func(a *idempotency.Attributes) { a.InProgressExpiry = "lease[0]" }), "InProgressExpiry", "lease[0]"},
		{"too long", with(func(a *idempotency.Attributes) { a.PartitionKey = strings.Repeat("k", 256) }), "PartitionKey", strings.Repeat("k", 256)},
		{"not UTF-8", with(func(a *idempotency.Attributes) { a.Status = "st\xffatus" }), "Status", "st\xffatus"},
		{"partition value without a sort key", with(func(a *idempotency.Attributes) { a.PartitionValue = "idem" }), "PartitionValue", "idem"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ae *idempotency.AttributeError
			if !errors.As(err, &ae) || !errors.Is(err, idempotency.ErrAttributes) {
				t.Fatalf("Validate = %v, want an *AttributeError", err)
			}
			if ae.Field != c.field || ae.Name != c.attr {
				t.Errorf("refused Attributes.%s %q, want Attributes.%s %q", ae.Field, ae.Name, c.field, c.attr)
			}
			if !strings.Contains(err.Error(), "Attributes."+c.field) {
				t.Errorf("the error %q does not name the field", err)
			}
		})
	}
}

// A DynamoDBPersistence whose names Validate refuses is refused by New,
// by name, and each of its calls fails with the same error, before any
// call to DynamoDB.
func TestNewDynamoDBPersistenceRefuses(t *testing.T) {
	client, calls := counted(t)
	a := idempotency.PowertoolsAttributes()
	a.SortKey = "id"
	store := idempotency.NewDynamoDBPersistence(client, "any", idempotency.WithAttributes(a))
	names := func(err error) bool {
		var ae *idempotency.AttributeError
		return errors.As(err, &ae) && ae.Field == "SortKey" && ae.Name == "id"
	}
	if !names(store.Err()) {
		t.Errorf("Err = %v, want an *AttributeError naming SortKey", store.Err())
	}
	if _, err := idempotency.New(idempotency.Config{Store: store}); !names(err) {
		t.Errorf("New = %v, want the *AttributeError naming SortKey", err)
	}
	ctx := context.Background()
	lease := idempotency.Lease{RecordKey: "rk", ID: "l", Count: 1}
	_, _, acquireErr := store.Acquire(ctx, idempotency.AcquireInput{Scope: "s", Key: "k"})
	_, getErr := store.Get(ctx, "s", "k")
	_, fenceErr := store.Fence(lease)
	for op, err := range map[string]error{
		"Acquire": acquireErr, "Get": getErr, "Fence": fenceErr,
		"Settle":     store.Settle(ctx, lease, idempotency.Outcome{Status: idempotency.EntryCompleted}),
		"Release":    store.Release(ctx, lease),
		"SettleWith": store.SettleWith(ctx, lease, idempotency.Outcome{Status: idempotency.EntryCompleted}, nil),
		"Commit":     store.Commit(ctx, []types.TransactWriteItem{{}}),
	} {
		if !names(err) {
			t.Errorf("%s = %v, want the *AttributeError", op, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("%d calls to DynamoDB, want none", calls.Load())
	}
}

// schema is a table of its own for a DynamoDBPersistence with custom
// attribute names.
type schema struct {
	name  string
	attrs idempotency.Attributes
	// env is $AWS_LAMBDA_FUNCTION_NAME at construction.
	env string
	// partition is the partition key value every record must have with a
	// sort key.
	partition string
}

func powertoolsWithSortKey(partition string) idempotency.Attributes {
	a := idempotency.PowertoolsAttributes()
	a.SortKey, a.PartitionValue = "sk", partition
	return a
}

var schemas = []schema{
	{name: "powertools", attrs: idempotency.PowertoolsAttributes()},
	{name: "powertools, sort key, default partition", attrs: powertoolsWithSortKey(""), env: "orders-fn", partition: "idempotency#orders-fn"},
	{name: "powertools, sort key, static partition", attrs: powertoolsWithSortKey("IDEMPOTENCY"), partition: "IDEMPOTENCY"},
	{name: "names with dots and spaces", attrs: idempotency.Attributes{
		PartitionKey: "call key", Status: "call.status", Expiry: "ttl", InProgressExpiry: "lease.until",
		Data: "result", Validation: "payload hash",
	}},
}

// createTable creates the table of s, with Time to Live on its expiry
// attribute, and returns its name.
func (s schema) createTable(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	table := idemtest.TableFrom(t, client, s.attrs.TableInput("custom"))
	if _, err := client.UpdateTimeToLive(t.Context(), s.attrs.TimeToLiveInput(table)); err != nil {
		t.Fatal(err)
	}
	return table
}

// open is a backend of doCases over a table of s.
func (s schema) open(t *testing.T) (backend, *dynamodb.Client, string, *idempotency.DynamoDBPersistence) {
	t.Helper()
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", s.env)
	client, n := counted(t)
	table := s.createTable(t, client)
	store := idempotency.NewDynamoDBPersistence(client, table, idempotency.WithAttributes(s.attrs))
	reader := idempotency.NewDynamoDBPersistence(idemtest.Client(t), table, idempotency.WithAttributes(s.attrs))
	return backend{
		store: store,
		calls: func() int { return int(n.Load()) },
		peek: func(t *testing.T, scope, key string) (idempotency.Entry, bool) {
			t.Helper()
			e, err := reader.Get(context.Background(), scope, key)
			if errors.Is(err, idempotency.ErrNotFound) {
				return idempotency.Entry{}, false
			}
			if err != nil {
				t.Fatalf("peek: %v", err)
			}
			return e, true
		},
	}, client, table, store
}

// key is the table key of (scope, key)'s record under s.
func (s schema) key(scope, key string) map[string]types.AttributeValue {
	rk := &types.AttributeValueMemberS{Value: idempotency.RecordKey(scope, key)}
	if s.attrs.SortKey == "" {
		return map[string]types.AttributeValue{s.attrs.PartitionKey: rk}
	}
	return map[string]types.AttributeValue{s.attrs.PartitionKey: &types.AttributeValueMemberS{Value: s.partition}, s.attrs.SortKey: rk}
}

// Every case of Do runs on tables keyed and named otherwise, with the
// same calls.
func TestDoOnCustomAttributes(t *testing.T) {
	for _, s := range schemas {
		t.Run(s.name, func(t *testing.T) {
			for _, c := range doCases {
				t.Run(c.name, func(t *testing.T) {
					b, _, _, _ := s.open(t)
					h := &harness{t: t, b: b, clock: idemtest.NewClock(time.Now().UTC().Truncate(time.Millisecond))}
					c.run(t, h)
				})
			}
		})
	}
}

// A record is stored under the configured key and names, in the units
// Powertools uses, and nothing under the default names.
func TestCustomAttributesRecord(t *testing.T) {
	for _, s := range schemas {
		t.Run(s.name, func(t *testing.T) {
			_, client, table, store := s.open(t)
			if got := store.Attributes(); s.attrs.SortKey != "" && got.PartitionValue != s.partition {
				t.Errorf("partition value %q, want %q", got.PartitionValue, s.partition)
			}
			clock := idemtest.NewClock(idemtest.Now())
			i := newIdem(t, idempotency.Config{Store: store, Clock: clock.Now, Retention: time.Hour, Lease: time.Minute})
			var inFlight map[string]types.AttributeValue
			res, err := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 100}, func(ctx context.Context, o order) (receipt, error) {
				inFlight = rawItem(t, client, table, s.key("alice", "k1"))
				return receipt{Run: 1, Amount: o.Amount}, nil
			})
			wantReceipt(t, res, err, receipt{1, 100}, false, false)
			a := s.attrs
			want := map[string]string{
				a.Status:           "IN_PROGRESS",
				a.Validation:       idempotency.Fingerprint([]byte(`{"key":"k1","amount":100}`)),
				a.InProgressExpiry: fmt.Sprint(clock.Now().Add(time.Minute).UnixMilli()),
				a.Expiry:           fmt.Sprint(clock.Now().Add(time.Hour).Unix()),
				"leaseCount":       "1",
				"format":           idempotency.EntryFormat,
			}
			for attr, v := range want {
				if got := scalar(inFlight[attr]); got != v {
					t.Errorf("in flight, %s = %q, want %q", attr, got, v)
				}
			}
			done := rawItem(t, client, table, s.key("alice", "k1"))
			if got := scalar(done[a.Status]); got != "COMPLETED" {
				t.Errorf("settled, %s = %q", a.Status, got)
			}
			if b, ok := done[a.Data].(*types.AttributeValueMemberB); !ok || string(b.Value) != `{"run":1,"amount":100}` {
				t.Errorf("settled, %s = %#v, want the output, binary", a.Data, done[a.Data])
			}
			names := slices.Sorted(maps.Keys(done))
			wantNames := []string{a.PartitionKey, a.Status, a.Validation, a.InProgressExpiry, a.Expiry, a.Data, "format", "leaseId", "leaseCount"}
			if a.SortKey != "" {
				wantNames = append(wantNames, a.SortKey)
			}
			slices.Sort(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Errorf("attributes %q, want %q", names, wantNames)
			}
			// A record Powertools wrote in the same table is refused by
			// name, and left as it is.
			theirs := s.key("alice", "k2")
			theirs[a.Status] = &types.AttributeValueMemberS{Value: "INPROGRESS"}
			if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: theirs}); err != nil {
				t.Fatal(err)
			}
			if _, err := idempotency.Do(t.Context(), i, op("alice"), order{"k2", 1}, echo); !errors.Is(err, idempotency.ErrFormat) {
				t.Errorf("Do on a record without a format = %v, want ErrFormat", err)
			}
			if got := scalar(rawItem(t, client, table, s.key("alice", "k2"))[a.Status]); got != "INPROGRESS" {
				t.Errorf("the other record's status became %q", got)
			}
		})
	}
}

// rawItem reads an item as the table holds it.
func rawItem(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		t.Fatalf("no item %v in %s", key, table)
	}
	return out.Item
}

// scalar is a string or number attribute's text.
func scalar(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return fmt.Sprintf("%T", v)
}
