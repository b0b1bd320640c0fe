package orders

import (
	"fmt"
	"os"
)

// Environment variables the functions read, as the template sets them.
const (
	EnvIdempotencyTable = "IDEMPOTENCY_TABLE"
	EnvOrdersTable      = "ORDERS_TABLE"
	EnvQueueURL         = "QUEUE_URL"
)

// Env is the functions' configuration: the names the template gives
// them. Endpoints and credentials are the AWS SDK's own (AWS_REGION,
// AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS...).
type Env struct {
	IdempotencyTable string
	OrdersTable      string
	QueueURL         string // the api function's only
}

// FromEnv reads the variables named, each of which must be set.
func FromEnv(names ...string) (Env, error) {
	var e Env
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			return Env{}, fmt.Errorf("%s is not set", n)
		}
		switch n {
		case EnvIdempotencyTable:
			e.IdempotencyTable = v
		case EnvOrdersTable:
			e.OrdersTable = v
		case EnvQueueURL:
			e.QueueURL = v
		default:
			return Env{}, fmt.Errorf("%s is no variable of the functions", n)
		}
	}
	return e, nil
}
