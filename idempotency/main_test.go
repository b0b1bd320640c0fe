package idempotency_test

import (
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// counted is a client of DynamoDB Local that counts the calls it sends.
func counted(t *testing.T) (*dynamodb.Client, *atomic.Int64) { return idemtest.CountingClient(t) }
