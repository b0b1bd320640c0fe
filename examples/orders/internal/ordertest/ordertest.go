// Package ordertest makes the example's tables in DynamoDB Local for a
// test, from template.yaml, with idemtest.
package ordertest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/examples/orders/internal/template"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// Table creates the template's table logicalID for the test (idemtest
// deletes it when the test ends), with its Time to Live, and returns its
// name.
func Table(t *testing.T, client *dynamodb.Client, logicalID string) string {
	t.Helper()
	tbl, err := template.Find(template.Path(), logicalID)
	if err != nil {
		t.Fatal(err)
	}
	name := idemtest.TableFrom(t, client, tbl.Create)
	if in := tbl.TTLInput(name); in != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := client.UpdateTimeToLive(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// Count is the number of items in table.
func Count(t *testing.T, client *dynamodb.Client, table string) int {
	t.Helper()
	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: &table, ConsistentRead: new(true)})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}
