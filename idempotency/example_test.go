package idempotency_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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

// exampleTable creates a fresh table with the schema a DynamoDBPersistence
// needs with DefaultAttributes, in the DynamoDB Local that TestMain started.
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
	attrs := idempotency.DefaultAttributes()
	if err := idemtest.CreateTable(ctx, client, attrs.TableInput(name)); err != nil {
		panic(err)
	}
	if _, err := client.UpdateTimeToLive(ctx, attrs.TimeToLiveInput(name)); err != nil {
		panic(err)
	}
	return client, name
}
