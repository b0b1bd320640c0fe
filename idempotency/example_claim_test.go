package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
)

// A store with a record schema of its own: a reservation that names the
// order its request creates. The first request takes the key with one
// PutItem; a retry gets the reservation back from its own failed write,
// and learns the order id the first one chose.
func ExampleClaim() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	reserve := func(orderID string) {
		rk := idempotency.RecordKey("alice", "order-42")
		c := idempotency.Claim{
			Table:     table,
			Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: rk}},
			Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: rk}, "orderId": &types.AttributeValueMemberS{Value: orderID}},
			Condition: "attribute_not_exists(pk)",
		}
		got, err := c.Write(ctx, client)
		fmt.Println(got.OK, got.Found, got.Item["orderId"].(*types.AttributeValueMemberS).Value, err)
	}
	reserve("ord-1")
	reserve("ord-2")
	// Output:
	// true false ord-1 <nil>
	// false true ord-1 <nil>
}

// Claimed says whether the claim holds the record, and whether the
// record it carries was found or written.
func ExampleClaimed() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	c := idempotency.Claim{
		Table:     table,
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
		Update:    "SET #n = if_not_exists(#n, :zero) + :one",
		Condition: "attribute_not_exists(pk) OR #n < :two",
		Names:     map[string]string{"#n": "n"},
		Values: map[string]types.AttributeValue{
			":zero": &types.AttributeValueMemberN{Value: "0"}, ":one": &types.AttributeValueMemberN{Value: "1"}, ":two": &types.AttributeValueMemberN{Value: "2"},
		},
	}
	for range 3 {
		got, _ := c.Write(ctx, client)
		fmt.Println(got.OK, got.Found, got.Item["n"].(*types.AttributeValueMemberN).Value)
	}
	// Output:
	// true false 1
	// true false 2
	// false true 2
}

// A claim that cannot be sent is refused before any call.
func ExampleErrClaim() {
	c := idempotency.Claim{Table: "t", Condition: "attribute_not_exists(pk)"}
	_, err := c.Write(context.Background(), nil)
	fmt.Println(errors.Is(err, idempotency.ErrClaim))
	// Output:
	// true
}

// PutAPI is the PutItem a claim of a whole Item needs besides
// PersistenceAPI; the SDK's client has it.
func ExamplePutAPI() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	var api idempotency.PutAPI = client
	_, isPersistence := api.(idempotency.PersistenceAPI)
	c := idempotency.Claim{
		Table:     table,
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
		Condition: "attribute_not_exists(pk)",
	}
	got, err := c.Write(ctx, client)
	fmt.Println(isPersistence, got.OK, err)
	// Output:
	// true true <nil>
}
