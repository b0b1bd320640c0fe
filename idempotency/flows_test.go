package idempotency_test

import (
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// TestFlows: the request flows of Powertools' idempotency utility, run
// through Do on the in-memory store and on DynamoDB (DynamoDB Local,
// with the default names and each schema of custom names),
// each asserting the answers, the stored record and the store calls.
func TestFlows(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		idemtest.RunFlows(t, func(*testing.T) idempotency.Persistence { return idemtest.NewMemoryStore() })
	})
	t.Run("dynamodb", func(t *testing.T) {
		client := idemtest.Client(t)
		idemtest.RunFlows(t, func(t *testing.T) idempotency.Persistence {
			return idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))
		})
	})
	for _, s := range schemas {
		t.Run("dynamodb, "+s.name, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_FUNCTION_NAME", s.env)
			client := idemtest.Client(t)
			idemtest.RunFlows(t, func(t *testing.T) idempotency.Persistence {
				return idempotency.NewDynamoDBPersistence(client, s.createTable(t, client), idempotency.WithAttributes(s.attrs))
			})
		})
	}
}
