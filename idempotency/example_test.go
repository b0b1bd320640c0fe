package idempotency_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func ExampleValidateKey() {
	for _, key := range []string{"order-42", "", "tab\there"} {
		fmt.Printf("%q: %v\n", key, idempotency.ValidateKey(key))
	}
	// Output:
	// "order-42": <nil>
	// "": idempotency key is missing
	// "tab\there": idempotency key must be 1-255 printable ASCII characters
}

// A request is reserved once; the same request again gets the existing
// record back from the same single write, and another request under the
// same key is refused.
func ExampleStore_Reserve() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	store := idempotency.NewStore(client, table)

	body := []byte(`{"amount":100}`)
	req := idempotency.Reservation{
		Scope: "arn:aws:iam::123456789012:user/alice", Key: "order-42",
		Fingerprint: idempotency.Fingerprint(body), ResourceID: "transfer-1", Request: body,
	}
	rec, created, _ := store.Reserve(ctx, req)
	fmt.Println(rec.Status, rec.ResourceID, created)

	retry := req
	retry.ResourceID = "transfer-2"
	rec, created, _ = store.Reserve(ctx, retry)
	fmt.Println(rec.Status, rec.ResourceID, created, rec.Matches(retry.Fingerprint))

	other := retry
	other.Fingerprint = idempotency.Fingerprint([]byte(`{"amount":999}`))
	rec, _, _ = store.Reserve(ctx, other)
	fmt.Println(errors.Is(rec.Matches(other.Fingerprint), idempotency.ErrKeyReused))
	// Output:
	// RESERVED transfer-1 true
	// RESERVED transfer-1 false <nil>
	// true
}

// A reservation that requires a condition on another item checks it in
// the same single write: here, that the caller holds the account it wants
// to debit. A refusal reserves nothing; a key that is already taken is
// answered from its record, whatever the condition says.
func ExampleStore_Reserve_require() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	store := idempotency.NewStore(client, table)
	// The grant lives in the same table here; any table works.
	_, _ = client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"pk":     &types.AttributeValueMemberS{Value: "grant#acct-1"},
			"holder": &types.AttributeValueMemberS{Value: "alice"},
		},
	})
	holds := func(scope string) types.ConditionCheck {
		return types.ConditionCheck{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "grant#acct-1"}},
			ConditionExpression:       aws.String("holder = :scope"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":scope": &types.AttributeValueMemberS{Value: scope}},
		}
	}
	body := []byte(`{"source":"acct-1","amount":100}`)
	reserve := func(scope, id string) {
		rec, created, err := store.Reserve(ctx, idempotency.Reservation{
			Scope: scope, Key: "order-42", Fingerprint: idempotency.Fingerprint(body), ResourceID: id, Request: body,
			Attributes: map[string]types.AttributeValue{"amount": &types.AttributeValueMemberN{Value: "100"}},
			Require:    []types.ConditionCheck{holds(scope)},
		})
		fmt.Println(scope, rec.ResourceID, created, errors.Is(err, idempotency.ErrPreconditionFailed))
	}
	reserve("mallory", "transfer-1")
	reserve("alice", "transfer-2")
	reserve("alice", "transfer-3")
	// Output:
	// mallory  false true
	// alice transfer-2 true false
	// alice transfer-2 false false
}

// A table for a Store, as one CreateTable call makes it: its key and the
// indexes the Store queries. TimeToLiveInput then turns on the expiry of
// settled records.
func ExampleTableInput() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		panic(err)
	}
	fmt.Println("key:", keys(out.Table.KeySchema))
	indexes := map[string]string{}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = keys(g.KeySchema) + " " + string(g.Projection.ProjectionType)
	}
	for _, name := range slices.Sorted(maps.Keys(indexes)) {
		fmt.Println(name+":", indexes[name])
	}
	ttl := idempotency.TimeToLiveInput(table)
	fmt.Println("time to live:", aws.ToString(ttl.TimeToLiveSpecification.AttributeName))
	// Output:
	// key: pk HASH
	// ByResourceId: resourceId HASH ALL
	// ByScope: scope HASH, createdAt RANGE INCLUDE
	// time to live: expiresAt
}

func keys(ks []types.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = aws.ToString(k.AttributeName) + " " + string(k.KeyType)
	}
	return strings.Join(parts, ", ")
}

// exampleTable creates a fresh table with the schema the Store needs
// (idempotency.TableInput), in the DynamoDB Local that TestMain started.
// An Example cannot clean up after itself: its tables go with the server.
func exampleTable(ctx context.Context) (*dynamodb.Client, string) {
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		panic(err)
	}
	client := idemtest.NewClient(endpoint)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "ExampleIdempotency-" + hex.EncodeToString(b[:])
	if err := idemtest.CreateTable(ctx, client, idempotency.TableInput(name)); err != nil {
		panic(err)
	}
	if _, err := client.UpdateTimeToLive(ctx, idempotency.TimeToLiveInput(name)); err != nil {
		panic(err)
	}
	return client, name
}
