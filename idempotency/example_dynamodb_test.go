package idempotency_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// exampleKeyedTable creates a fresh table keyed by partition and, when
// set, sort (strings), in the DynamoDB Local that TestMain started.
func exampleKeyedTable(ctx context.Context, partition, sort string) (*dynamodb.Client, string) {
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		panic(err)
	}
	client := idemtest.NewClient(endpoint)
	var b [6]byte
	_, _ = rand.Read(b[:])
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String("Example-" + hex.EncodeToString(b[:])),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(partition), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(partition), KeyType: types.KeyTypeHash}},
	}
	if sort != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sort), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sort), KeyType: types.KeyTypeRange})
	}
	if err := idemtest.CreateTable(ctx, client, in); err != nil {
		panic(err)
	}
	return client, aws.ToString(in.TableName)
}

// A table made for Powertools' DynamoDBPersistenceLayer (partition key
// "id", Time to Live on "expiration") serves as it is.
func ExamplePowertoolsAttributes() {
	ctx := context.Background()
	client, table := exampleKeyedTable(ctx, "id", "")
	store := idempotency.NewDynamoDBPersistence(client, table, idempotency.WithAttributes(idempotency.PowertoolsAttributes()))
	idem, _ := idempotency.New(idempotency.Config{Store: store})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-42"}
	res, err := idempotency.Do(ctx, idem, op, payment{"order-42", 100}, func(context.Context, payment) (paid, error) {
		return paid{ID: "pay-1"}, nil
	})
	fmt.Println(res.Output.ID, err)
	out, _ := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", "order-42")}},
	})
	for _, name := range []string{"status", "expiration", "in_progress_expiration", "data", "validation"} {
		_, ok := out.Item[name]
		fmt.Println(name, ok)
	}
	// Output:
	// pay-1 <nil>
	// status true
	// expiration true
	// in_progress_expiration true
	// data true
	// validation true
}

// With a sort key, every record has the same partition key value
// (Powertools' static_pk_value) and the record key is the sort key.
func ExampleWithAttributes() {
	ctx := context.Background()
	client, table := exampleKeyedTable(ctx, "pk", "sk")
	attrs := idempotency.DefaultAttributes()
	attrs.SortKey, attrs.PartitionValue = "sk", "IDEMPOTENCY#payments"
	store := idempotency.NewDynamoDBPersistence(client, table, idempotency.WithAttributes(attrs))
	idem, _ := idempotency.New(idempotency.Config{Store: store})
	_, _ = idempotency.Do(ctx, idem, idempotency.Operation[payment]{Scope: "alice", Key: "order-7"}, payment{"order-7", 5},
		func(context.Context, payment) (paid, error) { return paid{ID: "pay-7"}, nil })
	out, _ := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "IDEMPOTENCY#payments"},
			"sk": &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", "order-7")},
		},
	})
	fmt.Println(out.Item["status"].(*types.AttributeValueMemberS).Value)
	// Output:
	// COMPLETED
}

// DefaultAttributes are the names of a table of TableInput's schema.
func ExampleDefaultAttributes() {
	a := idempotency.DefaultAttributes()
	fmt.Println(a.PartitionKey, a.Status, a.Expiry, a.InProgressExpiry, a.Data, a.Validation)
	// Output:
	// pk status expiresAt leaseUntil output fingerprint
}

// Validate says what is wrong with names that come from configuration;
// New refuses a store made with them for the same reason.
func ExampleAttributes_Validate() {
	a := idempotency.PowertoolsAttributes()
	a.Data = "status"
	err := a.Validate()
	var ae *idempotency.AttributeError
	fmt.Println(errors.Is(err, idempotency.ErrAttributes), errors.As(err, &ae) && ae.Field == "Data")
	fmt.Println(err)
	_, err = idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(nil, "t", idempotency.WithAttributes(a))})
	fmt.Println(err)
	// Output:
	// true true
	// idempotency attribute name refused: Attributes.Data "status" is also Attributes.Status
	// idempotency: DynamoDB store: idempotency attribute name refused: Attributes.Data "status" is also Attributes.Status
}

// A transaction of one's own commits only while the lease holds the
// record: once another call took the key over, DynamoDB cancels it and
// writes none of it.
func ExampleDynamoDBPersistence_Fence() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	store := idempotency.NewDynamoDBPersistence(client, table)
	now := time.Now()
	in := idempotency.AcquireInput{Scope: "alice", Key: "order-1", Fingerprint: "fp", Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	e, _, _ := store.Acquire(ctx, in)
	note := func(id string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			idempotency.AttrKey: &types.AttributeValueMemberS{Value: id},
		}}}
	}
	fence, _ := store.Fence(e.Lease())
	_, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{note("note-1"), fence}})
	fmt.Println("under the lease:", err)

	in.Now, in.LeaseUntil = now.Add(time.Minute), now.Add(2*time.Minute)
	taken, _, _ := store.Acquire(ctx, in) // the lease expired: another call takes the key over
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{note("note-2"), fence}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		fmt.Println("after the takeover (lease", taken.LeaseCount, "):", aws.ToString(tce.CancellationReasons[1].Code))
	}
	// Output:
	// under the lease: <nil>
	// after the takeover (lease 2 ): ConditionalCheckFailed
}

// An *AttributeError names the field refused and says why.
func ExampleAttributeError() {
	a := idempotency.DefaultAttributes()
	a.Expiry = idempotency.AttrLeaseID
	var ae *idempotency.AttributeError
	if errors.As(a.Validate(), &ae) {
		fmt.Printf("%s %q: %s\n", ae.Field, ae.Name, ae.Reason)
	}
	// Output:
	// Expiry "leaseId": is the attribute of the lease id
}

// noTransactions is a client with the calls of PersistenceAPI and not
// TransactWriteItems.
type noTransactions struct{ idempotency.PersistenceAPI }

// A client without TransactWriteItems (TransactAPI) serves Persistence's
// methods; SettleWith and Commit refuse it.
func ExampleTransactAPI() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	var _ idempotency.TransactAPI = client // *dynamodb.Client has it
	store := idempotency.NewDynamoDBPersistence(noTransactions{client}, table)
	err := store.Commit(ctx, []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(table), Item: map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: "NOTE#1"}},
	}}})
	fmt.Println(errors.Is(err, idempotency.ErrNotTransactional))
	// Output:
	// true
}

// The table of a store with Powertools' names: a string partition key
// "id", and Time to Live on "expiration".
func ExampleAttributes_TableInput() {
	a := idempotency.PowertoolsAttributes()
	in := a.TableInput("idempotency")
	ttl := a.TimeToLiveInput("idempotency")
	fmt.Println(*in.KeySchema[0].AttributeName, in.KeySchema[0].KeyType, in.AttributeDefinitions[0].AttributeType, *ttl.TimeToLiveSpecification.AttributeName)
	// Output:
	// id HASH S expiration
}
