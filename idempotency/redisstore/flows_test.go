package redisstore_test

import (
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/redisstore"
	"github.com/exactlyonce/transfers/idempotency/redisstore/internal/redistest"
)

// TestFlows: Powertools' request flows through Do on a real Redis, each
// asserting the answers, the stored record and the store calls, as on
// the in-memory store and DynamoDB.
func TestFlows(t *testing.T) {
	client := redistest.Client(t)
	idemtest.RunFlows(t, func(t *testing.T) idempotency.Persistence {
		return redisstore.New(client, redistest.Prefix(t))
	})
}
