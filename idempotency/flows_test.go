package idempotency_test

import (
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// TestFlows: the request flows of Powertools' idempotency utility, run
// through Do on the in-memory store and on DynamoDB (DynamoDB Local),
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
}
