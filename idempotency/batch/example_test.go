package batch_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/batch"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/keypath"
)

// Each message runs once: the failed one is reported, and when the
// batch is delivered again only it runs. In a Lambda:
// lambda.Start(handler), with ReportBatchItemFailures on the event source
// mapping.
func ExampleSQS() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	down := true
	handler := batch.SQS(idem, batch.Config[events.SQSMessage]{}, func(_ context.Context, m events.SQSMessage) error {
		fmt.Println("ran", m.MessageId)
		if m.MessageId == "m2" && down {
			return errors.New("ledger down")
		}
		return nil
	})
	q := "arn:aws:sqs:eu-west-1:111122223333:orders"
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"orderId":"o-1"}`, EventSourceARN: q},
		{MessageId: "m2", Body: `{"orderId":"o-2"}`, EventSourceARN: q},
	}}
	resp, _ := handler(context.Background(), ev)
	fmt.Println("failed:", resp.BatchItemFailures)
	down = false
	resp, _ = handler(context.Background(), ev)
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// ran m1
	// ran m2
	// failed: [{m2}]
	// ran m2
	// failed: []
}

// Config: the key from the message body, so that an order sent twice
// (two messages) runs once; only the amount is fingerprinted.
func ExampleConfig() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	orderID := keypath.MustCompile("orderId")
	handler := batch.SQS(idem, batch.Config[events.SQSMessage]{
		Scope:   "orders",
		Key:     func(m events.SQSMessage) (string, error) { return orderID.KeyJSON([]byte(m.Body)) },
		Payload: keypath.PayloadFunc[events.SQSMessage](keypath.MustCompile("powertools_json(body).amount")),
		OnFailure: func(_ context.Context, m events.SQSMessage, err error) {
			fmt.Println(m.MessageId, "failed:", err)
		},
	}, func(_ context.Context, m events.SQSMessage) error {
		fmt.Println("ran", m.MessageId)
		return nil
	})
	resp, _ := handler(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"orderId":"o-1","amount":5}`},
		{MessageId: "m2", Body: `{"orderId":"o-1","amount":5,"resent":true}`},
		{MessageId: "m3", Body: `{"orderId":"o-1","amount":7}`},
		{MessageId: "m4", Body: `{"amount":7}`},
	}})
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// ran m1
	// m3 failed: idempotency key was already used with a different request
	// m4 failed: idempotency: key: keypath: "orderId" selected nothing: idempotency key is missing
	// failed: [{m3} {m4}]
}

// A Kinesis batch stops at its first failure and reports it alone: Lambda
// delivers again from there.
func ExampleKinesis() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	handler := batch.Kinesis(idem, batch.Config[events.KinesisEventRecord]{}, func(_ context.Context, r events.KinesisEventRecord) error {
		fmt.Println("ran", r.Kinesis.SequenceNumber)
		if string(r.Kinesis.Data) == "bad" {
			return errors.New("cannot parse")
		}
		return nil
	})
	rec := func(seq, data string) events.KinesisEventRecord {
		return events.KinesisEventRecord{EventID: "shardId-0:" + seq, Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: []byte(data)}}
	}
	resp, _ := handler(context.Background(), events.KinesisEvent{Records: []events.KinesisEventRecord{rec("101", "ok"), rec("102", "bad"), rec("103", "ok")}})
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// ran 101
	// ran 102
	// failed: [{102}]
}

// DynamoDB Streams records are keyed by their eventID by default; here by
// the item's key, so a change seen twice runs once.
func ExampleDynamoDB() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	handler := batch.DynamoDB(idem, batch.Config[events.DynamoDBEventRecord]{
		Key: keypath.KeyFunc[events.DynamoDBEventRecord](keypath.MustCompile("dynamodb.NewImage.paymentId.S")),
	}, func(_ context.Context, r events.DynamoDBEventRecord) error {
		fmt.Println("ran", r.EventID)
		return nil
	})
	paid := func(id string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: id, EventName: "INSERT", Change: events.DynamoDBStreamRecord{
			SequenceNumber: id,
			NewImage:       map[string]events.DynamoDBAttributeValue{"paymentId": events.NewStringAttribute("pay-1")},
		}}
	}
	resp, _ := handler(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{paid("e1"), paid("e2")}})
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// ran e1
	// failed: []
}
