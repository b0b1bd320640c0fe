package idemtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// Outside a test (in an Example, say), a client of the DynamoDB Local that
// Main started, and a table for a Store made by hand. A test calls
// idemtest.Client and idemtest.Table instead, which also delete the table
// when it ends.
func ExampleCreateTable() {
	ctx := context.Background()
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		panic(err)
	}
	client := idemtest.NewClient(endpoint)
	// A name of its own: the server may be shared (idemtest.EnvEndpoint).
	table := fmt.Sprintf("ExampleCreateTable-%d", time.Now().UnixNano())
	if err := idemtest.CreateTable(ctx, client, idempotency.TableInput(table)); err != nil {
		panic(err)
	}
	store := idempotency.NewStore(client, table)
	body := []byte(`{"amount":100}`)
	rec, created, err := store.Reserve(ctx, idempotency.Reservation{
		Scope: "alice", Key: "order-42", Fingerprint: idempotency.Fingerprint(body), ResourceID: "transfer-1", Request: body,
	})
	fmt.Println(rec.Status, created, err)
	// Output:
	// RESERVED true <nil>
}
