package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// exampleOwnedAccount stores account, owned by owner, in the table accounts.
func exampleOwnedAccount(ctx context.Context, client *dynamodb.Client, accounts, account, owner string) {
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(accounts),
		Item: map[string]types.AttributeValue{
			"account": &types.AttributeValueMemberS{Value: account},
			"owner":   &types.AttributeValueMemberS{Value: owner},
		},
	}); err != nil {
		panic(err)
	}
}

// exampleOwnedBy is the condition that account exists in the table
// accounts and belongs to owner; when it fails, DynamoDB returns the
// account as it is.
func exampleOwnedBy(accounts, account, owner string) types.ConditionCheck {
	return types.ConditionCheck{
		TableName:                           aws.String(accounts),
		Key:                                 map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}},
		ConditionExpression:                 aws.String("#owner = :owner"),
		ExpressionAttributeNames:            map[string]string{"#owner": "owner"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":owner": &types.AttributeValueMemberS{Value: owner}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// Operation.Require takes the key only when the account to debit exists
// and belongs to the caller, checked in the same write: mallory's call is
// refused and stores nothing; alice's runs; her retry is replayed from its
// record even once the account has changed hands, for the record answers
// the request.
func ExampleOperation_require() {
	ctx := context.Background()
	client, records := exampleKeyedTable(ctx, idempotency.AttrKey, "")
	_, accounts := exampleKeyedTable(ctx, "account", "")
	exampleOwnedAccount(ctx, client, accounts, "acct-1", "alice")
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, records)})
	charge := func(caller string) {
		op := idempotency.Operation[payment]{
			Scope:   caller,
			KeyFunc: func(p payment) (string, error) { return p.Key, nil },
			Require: func(context.Context, payment) ([]types.ConditionCheck, error) {
				return []types.ConditionCheck{exampleOwnedBy(accounts, "acct-1", caller)}, nil
			},
		}
		res, err := idempotency.Do(ctx, idem, op, payment{"order-42", 100}, func(context.Context, payment) (paid, error) {
			return paid{ID: "pay-1"}, nil
		})
		fmt.Printf("%s: %q replayed=%v refused=%v\n", caller, res.Output.ID, res.Replayed, errors.Is(err, idempotency.ErrPreconditionFailed))
	}
	charge("mallory")
	charge("alice")
	exampleOwnedAccount(ctx, client, accounts, "acct-1", "bob")
	charge("alice")
	// Output:
	// mallory: "" replayed=false refused=true
	// alice: "pay-1" replayed=false refused=false
	// alice: "pay-1" replayed=true refused=false
}

// Do finds a Preconditioner with a type assertion on the store: on any
// other store, an Operation with a Require fails every call, before any
// store call.
func ExamplePreconditioner() {
	for _, store := range []idempotency.Persistence{
		idempotency.NewDynamoDBPersistence(nil, "table"),
		idemtest.NewMemoryStore(),
	} {
		_, ok := store.(idempotency.Preconditioner)
		fmt.Printf("%T: %v\n", store, ok)
	}
	store := idemtest.NewMemoryStore()
	idem, _ := idempotency.New(idempotency.Config{Store: store})
	op := idempotency.Operation[payment]{
		Scope: "alice", Key: "order-42",
		Require: func(context.Context, payment) ([]types.ConditionCheck, error) { return nil, nil },
	}
	_, err := idempotency.Do(context.Background(), idem, op, payment{"order-42", 100}, func(context.Context, payment) (paid, error) {
		return paid{ID: "pay-1"}, nil
	})
	fmt.Println(errors.Is(err, idempotency.ErrPreconditionsUnsupported), store.TotalCalls())
	// Output:
	// *idempotency.DynamoDBPersistence: true
	// *idemtest.MemoryStore: false
	// true 0
}

// A failed condition is named by its index among the required ones, with
// the checked item as it was, when the condition asked for it; nothing is
// stored.
func ExampleDynamoDBPersistence_AcquireRequiring() {
	ctx := context.Background()
	client, records := exampleKeyedTable(ctx, idempotency.AttrKey, "")
	_, accounts := exampleKeyedTable(ctx, "account", "")
	exampleOwnedAccount(ctx, client, accounts, "acct-1", "alice")
	exampleOwnedAccount(ctx, client, accounts, "acct-2", "bob")
	store := idempotency.NewDynamoDBPersistence(client, records)
	now := time.Now()
	in := idempotency.AcquireInput{
		Scope: "alice", Key: "order-42", Fingerprint: idempotency.Fingerprint([]byte(`{}`)),
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	}
	_, acquired, err := store.AcquireRequiring(ctx, in, []types.ConditionCheck{
		exampleOwnedBy(accounts, "acct-1", "alice"),
		exampleOwnedBy(accounts, "acct-2", "alice"),
	})
	var perr *idempotency.PreconditionError
	if errors.As(err, &perr) {
		fmt.Println(acquired, perr.Index, perr.Item["owner"].(*types.AttributeValueMemberS).Value)
	}
	_, err = store.Get(ctx, "alice", "order-42")
	fmt.Println(errors.Is(err, idempotency.ErrNotFound))
	e, acquired, err := store.AcquireRequiring(ctx, in, []types.ConditionCheck{exampleOwnedBy(accounts, "acct-1", "alice")})
	fmt.Println(e.Status, e.LeaseCount, acquired, err)
	// Output:
	// false 1 bob
	// true
	// IN_PROGRESS 1 true <nil>
}
