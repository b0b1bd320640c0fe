// Command worker is the worker function: the orders queue's consumer
// (see package worker).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/examples/orders"
	"github.com/exactlyonce/transfers/examples/orders/worker"
	"github.com/exactlyonce/transfers/idempotency"
)

func main() {
	env, err := orders.FromEnv(orders.EnvIdempotencyTable, orders.EnvOrdersTable)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatalf("load the AWS configuration: %v", err)
	}
	db := dynamodb.NewFromConfig(cfg)
	idem, err := idempotency.New(idempotency.Config{
		Store:     idempotency.NewDynamoDBPersistence(db, env.IdempotencyTable),
		CacheSize: 1000,
	})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(worker.New(idem, &worker.Handler{
		DB:          db,
		OrdersTable: env.OrdersTable,
		Payments:    worker.FakePayments{},
	}))
}
