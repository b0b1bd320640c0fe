package idemtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// Outside a test (in an Example, say), a client of the DynamoDB Local that
// Main started, and a table made by hand. A test calls idemtest.Client and
// idemtest.Table instead, which also delete the table when it ends.
func ExampleCreateTable() {
	ctx := context.Background()
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		panic(err)
	}
	client := idemtest.NewClient(endpoint)
	// A name of its own: the server may be shared (idemtest.EnvEndpoint).
	table := fmt.Sprintf("ExampleCreateTable-%d", time.Now().UnixNano())
	if err := idemtest.CreateTable(ctx, client, idempotency.DefaultAttributes().TableInput(table)); err != nil {
		panic(err)
	}
	store := idempotency.NewDynamoDBPersistence(client, table)
	now := time.Now()
	e, acquired, err := store.Acquire(ctx, idempotency.AcquireInput{
		Scope: "alice", Key: "order-42", Fingerprint: idempotency.Fingerprint([]byte(`{"amount":100}`)),
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	})
	fmt.Println(e.Status, e.LeaseCount, acquired, err)
	// Output:
	// IN_PROGRESS 1 true <nil>
}
