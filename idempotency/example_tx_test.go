package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// exampleAccount is the key of an account's item, in the same table as
// the idempotency records.
func exampleAccount(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: "ACCOUNT#" + name}}
}

func exampleOpen(ctx context.Context, client *dynamodb.Client, table, name string, balance int) {
	item := exampleAccount(name)
	item["balance"] = &types.AttributeValueMemberN{Value: strconv.Itoa(balance)}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		panic(err)
	}
}

// exampleMove is an Update of an account's balance by delta, conditioned
// on the funds for a debit, on the account existing for a credit.
func exampleMove(table, name string, delta int) types.TransactWriteItem {
	balance := expression.Name("balance")
	cond := expression.AttributeExists(balance)
	if delta < 0 {
		cond = balance.GreaterThanEqual(expression.Value(-delta))
	}
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Set(balance, balance.Plus(expression.Value(delta)))).
		WithCondition(cond).Build()
	if err != nil {
		panic(err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: exampleAccount(name),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}
}

func exampleBalances(ctx context.Context, client *dynamodb.Client, table string, names ...string) string {
	var out []string
	for _, name := range names {
		got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: exampleAccount(name), ConsistentRead: aws.Bool(true)})
		if err != nil {
			panic(err)
		}
		out = append(out, name+"="+got.Item["balance"].(*types.AttributeValueMemberN).Value)
	}
	return fmt.Sprint(out)
}

type exampleTransfer struct {
	Key      string `json:"key"`
	From, To string
	Amount   int
}

// A transfer's two updates and the settlement of its outcome commit in
// one transaction: the money moves exactly when the outcome is stored,
// and a retry replays the outcome without moving it again.
func ExampleDoTx() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	exampleOpen(ctx, client, table, "A", 100)
	exampleOpen(ctx, client, table, "B", 0)
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	op := idempotency.Operation[exampleTransfer]{Scope: "alice", KeyFunc: func(t exampleTransfer) (string, error) { return t.Key, nil }}
	transfer := func(_ context.Context, t exampleTransfer, tx *idempotency.Tx) (string, error) {
		err := tx.Add(exampleMove(table, t.From, -t.Amount), exampleMove(table, t.To, t.Amount))
		return fmt.Sprintf("moved %d from %s to %s", t.Amount, t.From, t.To), err
	}
	for range 2 {
		res, err := idempotency.DoTx(ctx, idem, op, exampleTransfer{"t-1", "A", "B", 30}, transfer)
		fmt.Println(res.Output, res.Replayed, err)
	}
	fmt.Println(exampleBalances(ctx, client, table, "A", "B"))
	// Output:
	// moved 30 from A to B false <nil>
	// moved 30 from A to B true <nil>
	// [A=70 B=30]
}

var errInsufficientFunds = errors.New("insufficient funds")

// A condition of the caller's that fails cancels the transaction:
// nothing is written, and OnCancel says what the call answers. A
// Permanent answer is stored and replayed.
func ExampleTx_OnCancel() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	exampleOpen(ctx, client, table, "A", 10)
	exampleOpen(ctx, client, table, "B", 0)
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	op := idempotency.Operation[exampleTransfer]{Scope: "alice", KeyFunc: func(t exampleTransfer) (string, error) { return t.Key, nil }}
	transfer := func(_ context.Context, t exampleTransfer, tx *idempotency.Tx) (string, error) {
		tx.OnCancel(func(e *idempotency.TxItemError) error {
			if e.Index == 0 && e.ConditionFailed() { // the debit
				return idempotency.Permanent(errInsufficientFunds)
			}
			return e
		})
		return "moved", tx.Add(exampleMove(table, t.From, -t.Amount), exampleMove(table, t.To, t.Amount))
	}
	for range 2 {
		_, err := idempotency.DoTx(ctx, idem, op, exampleTransfer{"t-2", "A", "B", 30}, transfer)
		fmt.Println(errors.Is(err, errInsufficientFunds), errors.Is(err, idempotency.ErrStoredFailure))
	}
	fmt.Println(exampleBalances(ctx, client, table, "A", "B"))
	// Output:
	// true false
	// false true
	// [A=10 B=0]
}

// Without OnCancel the answer is a *TxItemError naming the staged item,
// and the key is released: a retry runs the function again.
func ExampleTxItemError() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	exampleOpen(ctx, client, table, "A", 100)
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	op := idempotency.Operation[exampleTransfer]{Scope: "alice", KeyFunc: func(t exampleTransfer) (string, error) { return t.Key, nil }}
	_, err := idempotency.DoTx(ctx, idem, op, exampleTransfer{"t-3", "A", "Z", 30}, func(_ context.Context, t exampleTransfer, tx *idempotency.Tx) (string, error) {
		// Z has no account: the credit's condition fails.
		return "moved", tx.Add(exampleMove(table, t.From, -t.Amount), exampleMove(table, t.To, t.Amount))
	})
	var ie *idempotency.TxItemError
	if errors.As(err, &ie) {
		fmt.Println(ie.Index, ie.Code, errors.Is(err, idempotency.ErrTxItem))
	}
	fmt.Println(exampleBalances(ctx, client, table, "A"))
	// Output:
	// 1 ConditionalCheckFailed true
	// [A=100]
}

// The function commits a write of its own before it returns, fenced: it
// commits only while the call holds its key. The rest is staged, and
// commits with the outcome.
func ExampleTx_Fence() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	exampleOpen(ctx, client, table, "A", 100)
	exampleOpen(ctx, client, table, "B", 0)
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	op := idempotency.Operation[exampleTransfer]{Scope: "alice", KeyFunc: func(t exampleTransfer) (string, error) { return t.Key, nil }}
	res, err := idempotency.DoTx(ctx, idem, op, exampleTransfer{"t-4", "A", "B", 30}, func(ctx context.Context, t exampleTransfer, tx *idempotency.Tx) (string, error) {
		fence, err := tx.Fence()
		if err != nil {
			return "", err
		}
		// Hold the funds now, under the lease.
		if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{fence, exampleMove(table, t.From, -t.Amount)},
		}); err != nil {
			return "", err
		}
		lease, _ := tx.Lease()
		return fmt.Sprintf("held under lease %d", lease.Count), tx.Add(exampleMove(table, t.To, t.Amount))
	})
	fmt.Println(res.Output, err)
	fmt.Println(exampleBalances(ctx, client, table, "A", "B"))
	// Output:
	// held under lease 1 <nil>
	// [A=70 B=30]
}

// A function that stages more than MaxTxItems gets ErrTxTooLarge, and
// then nothing it staged is written, even if it goes on.
func ExampleTx_Add() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	exampleOpen(ctx, client, table, "A", 100)
	exampleOpen(ctx, client, table, "B", 0)
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	op := idempotency.Operation[exampleTransfer]{Scope: "alice", KeyFunc: func(t exampleTransfer) (string, error) { return t.Key, nil }}
	_, err := idempotency.DoTx(ctx, idem, op, exampleTransfer{"t-5", "A", "B", 1}, func(_ context.Context, t exampleTransfer, tx *idempotency.Tx) (string, error) {
		for range idempotency.MaxTxItems / 2 {
			_ = tx.Add(exampleMove(table, t.From, -t.Amount), exampleMove(table, t.To, t.Amount))
		}
		fmt.Println("staged", tx.Len())
		fmt.Println(tx.Add(exampleMove(table, t.From, -t.Amount), exampleMove(table, t.To, t.Amount)))
		return "moved", nil
	})
	fmt.Println(errors.Is(err, idempotency.ErrTxTooLarge))
	fmt.Println(exampleBalances(ctx, client, table, "A", "B"))
	// Output:
	// staged 98
	// idempotency: 100 items: idempotency transaction has too many items (at most 99)
	// true
	// [A=100 B=0]
}

// SettleWith without DoTx: the holder of a lease commits its writes and
// its outcome at once, or, fenced, nothing.
func ExampleDynamoDBPersistence_SettleWith() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	exampleOpen(ctx, client, table, "A", 100)
	exampleOpen(ctx, client, table, "B", 0)
	store := idempotency.NewDynamoDBPersistence(client, table)
	now := time.Now()
	e, _, _ := store.Acquire(ctx, idempotency.AcquireInput{
		Scope: "alice", Key: "t-6", Fingerprint: "fp", Now: now,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	})
	o := idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`"moved"`), ExpiresAt: now.Add(time.Hour)}
	items := []types.TransactWriteItem{exampleMove(table, "A", -30), exampleMove(table, "B", 30)}
	fmt.Println(store.SettleWith(ctx, e.Lease(), o, items))
	fmt.Println(errors.Is(store.SettleWith(ctx, e.Lease(), o, items), idempotency.ErrFenced)) // settled: the lease holds no more
	fmt.Println(exampleBalances(ctx, client, table, "A", "B"))
	// Output:
	// <nil>
	// true
	// [A=70 B=30]
}

// FenceCondition joins conditions of one's own on the record: here that
// the lease has not expired either, which the fence alone does not ask.
func ExampleDynamoDBPersistence_FenceCondition() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	store := idempotency.NewDynamoDBPersistence(client, table)
	start := time.Now()
	e, _, _ := store.Acquire(ctx, idempotency.AcquireInput{
		Scope: "alice", Key: "t-7", Fingerprint: "fp", Now: start,
		LeaseUntil: start.Add(time.Minute), ExpiresAt: start.Add(time.Hour),
	})
	check := func(now time.Time) error {
		cond := store.FenceCondition(e.Lease()).And(
			expression.Name(store.Attributes().InProgressExpiry).GreaterThan(expression.Value(now.UnixMilli())))
		expr, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return err
		}
		_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(table), Key: map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: e.RecordKey}},
				ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			}},
			{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				idempotency.AttrKey: &types.AttributeValueMemberS{Value: "NOTE#" + now.String()},
			}}},
		}})
		return err
	}
	fmt.Println(check(start) == nil)
	fmt.Println(check(start.Add(time.Minute)) == nil)
	// Output:
	// true
	// false
}

// With a sort key and no PartitionValue, every record's partition key is
// "idempotency#" and the Lambda function's name, as with Powertools.
func ExampleDynamoDBPersistence_Attributes() {
	os.Setenv("AWS_LAMBDA_FUNCTION_NAME", "payments")
	defer os.Unsetenv("AWS_LAMBDA_FUNCTION_NAME")
	attrs := idempotency.PowertoolsAttributes()
	attrs.SortKey = "sk"
	store := idempotency.NewDynamoDBPersistence(nil, "table", idempotency.WithAttributes(attrs))
	a := store.Attributes()
	fmt.Println(a.PartitionKey, a.PartitionValue, a.SortKey)
	// Output:
	// id idempotency#payments sk
}

// DoTx needs a store that commits transactions: DynamoDBPersistence is
// one, the memory store of idemtest is not.
func ExampleTransactionalPersistence() {
	var store idempotency.Persistence = idempotency.NewDynamoDBPersistence(nil, "table")
	_, ok := store.(idempotency.TransactionalPersistence)
	fmt.Println(ok)

	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	_, err := idempotency.DoTx(context.Background(), idem, idempotency.Operation[payment]{Scope: "alice", Key: "order-1"}, payment{"order-1", 1},
		func(context.Context, payment, *idempotency.Tx) (paid, error) { return paid{}, nil })
	fmt.Println(errors.Is(err, idempotency.ErrNotTransactional))
	// Output:
	// true
	// true
}
