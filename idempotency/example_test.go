package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
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

// exampleTable creates a fresh IdempotencyTable, as template.yaml declares
// it, in the DynamoDB Local that TestMain started.
func exampleTable(ctx context.Context) (*dynamodb.Client, string) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		panic(err)
	}
	tpl, err := cfn.Load(root + "/template.yaml")
	if err != nil {
		panic(err)
	}
	tables, err := tpl.Tables(cfn.Env{})
	if err != nil {
		panic(err)
	}
	var idem []cfn.Table
	for _, t := range tables {
		if t.LogicalID == "IdempotencyTable" {
			idem = append(idem, t)
		}
	}
	name := fmt.Sprintf("ExampleIdempotency-%d", exampleTables)
	exampleTables++
	if err := cfn.CreateTables(ctx, client, idem, func(cfn.Table) string { return name }); err != nil {
		panic(err)
	}
	return client, name
}

var exampleTables int
