// Package batch makes the record handlers of Lambda's SQS, Kinesis and
// DynamoDB Streams event sources idempotent per record, with
// idempotency.Do, and reports the records that failed as a partial batch
// response (the function's event source mapping needs
// ReportBatchItemFailures):
//
//   - each record runs through Do under its own key (Config.Key, by
//     default the SQS messageId or the stream record's eventID);
//   - a record already done is not run again and is not reported;
//   - a record whose handler failed, whose key is held by another
//     invocation (idempotency.ErrInProgress), whose key was used with
//     another payload (idempotency.ErrKeyReused), whose key is missing or
//     malformed, or whose store call failed, is reported in
//     BatchItemFailures, so that it is delivered again;
//   - records run one at a time, in the batch's order. From an SQS FIFO
//     queue (eventSourceARN ending in ".fifo"), and from Kinesis and
//     DynamoDB Streams, processing stops at the first failure: for FIFO
//     that record and every one after it are reported (Powertools' batch
//     processor does the same), so that none is delivered out of order;
//     for a stream only that record is reported, as Lambda resumes the
//     shard from the lowest failed sequence number and so delivers every
//     later record again. From a standard queue every record runs, and
//     each failed one is reported.
//
// A package of its own, so that a program that uses idempotency.Do
// without these event sources builds none of aws-lambda-go's events.
package batch

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
)

// Config configures the wrapper of a handler of records R.
type Config[R any] struct {
	// Scope keeps the records of different sources or uses apart: the
	// record's eventSourceARN (its queue or stream) when "".
	Scope string
	// Key derives a record's key (keypath.KeyFunc, say): when nil, the
	// SQS message's messageId, or the Kinesis or DynamoDB Streams
	// record's eventID. A message id tells apart two sends of the same
	// content, so that default only keeps a message delivered twice from
	// running twice; take the key from the body to also recognise a
	// message sent twice.
	Key func(R) (string, error)
	// Payload is what a record's fingerprint is taken of
	// (keypath.PayloadFunc, say): when nil, the SQS message's body, the
	// Kinesis record's data, or the JSON of the DynamoDB Streams record's
	// eventName, Keys, NewImage and OldImage. A key seen again with
	// another payload is reported failed (idempotency.ErrKeyReused).
	Payload func(R) ([]byte, error)
	// OptionalKey runs a record without a key (Key answers "" or an error
	// matching idempotency.ErrKeyMissing) without idempotency, as
	// idempotency.DoOptionalKey does. Without it such a record is
	// reported failed.
	OptionalKey bool
	// OnFailure, when set, is called for each record reported failed
	// that ran or was refused, with the reason (the handler's error, or
	// the idempotency error), so that it can be logged.
	OnFailure func(ctx context.Context, record R, err error)
}

// source is what differs between the event sources.
type source[R any] struct {
	scope   func(R) string
	key     func(R) (string, error)
	payload func(R) ([]byte, error)
}

// process runs the records in order and returns the indexes of those to
// report. A failed record for which stop holds ends the processing; then
// reportRest reports every record from it on, else only that one. A
// record not started because ctx is done counts as a failure.
func process[R any](ctx context.Context, i *idempotency.Idempotency, c Config[R], s source[R], records []R, stop func(R) bool, reportRest bool, fn func(context.Context, R) error) []int {
	if c.Key == nil {
		c.Key = s.key
	}
	if c.Payload == nil {
		c.Payload = s.payload
	}
	var failed []int
	for n, r := range records {
		err := ctx.Err()
		if err == nil {
			err = one(ctx, i, c, s, r, fn)
			if err != nil && c.OnFailure != nil {
				c.OnFailure(ctx, r, err)
			}
		}
		if err == nil {
			continue
		}
		if !stop(r) {
			failed = append(failed, n)
			continue
		}
		if !reportRest {
			return append(failed, n)
		}
		for k := n; k < len(records); k++ {
			failed = append(failed, k)
		}
		return failed
	}
	return failed
}

// one runs one record through Do.
func one[R any](ctx context.Context, i *idempotency.Idempotency, c Config[R], s source[R], r R, fn func(context.Context, R) error) error {
	scope := c.Scope
	if scope == "" {
		scope = s.scope(r)
	}
	op := idempotency.Operation[R]{Scope: scope, KeyFunc: c.Key, Payload: c.Payload}
	run := func(ctx context.Context, r R) (struct{}, error) { return struct{}{}, fn(ctx, r) }
	var err error
	if c.OptionalKey {
		_, err = idempotency.DoOptionalKey(ctx, i, op, r, run)
	} else {
		_, err = idempotency.Do(ctx, i, op, r, run)
	}
	return err
}

var sqsSource = source[events.SQSMessage]{
	scope:   func(m events.SQSMessage) string { return m.EventSourceARN },
	key:     func(m events.SQSMessage) (string, error) { return m.MessageId, nil },
	payload: func(m events.SQSMessage) ([]byte, error) { return []byte(m.Body), nil },
}

// SQS returns fn, a handler of one SQS message, as the handler of an SQS
// event that runs each message at most once per key (see the package's
// documentation) and reports the failed ones by messageId. Pass the
// result to lambda.Start.
func SQS(i *idempotency.Idempotency, c Config[events.SQSMessage], fn func(context.Context, events.SQSMessage) error) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	fifo := func(m events.SQSMessage) bool { return strings.HasSuffix(m.EventSourceARN, ".fifo") }
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for _, n := range process(ctx, i, c, sqsSource, ev.Records, fifo, true, fn) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[n].MessageId})
		}
		return resp, nil
	}
}

var kinesisSource = source[events.KinesisEventRecord]{
	scope:   func(r events.KinesisEventRecord) string { return r.EventSourceArn },
	key:     func(r events.KinesisEventRecord) (string, error) { return r.EventID, nil },
	payload: func(r events.KinesisEventRecord) ([]byte, error) { return r.Kinesis.Data, nil },
}

// always stops at the first failure.
func always[R any](R) bool { return true }

// Kinesis returns fn, a handler of one Kinesis record, as the handler of
// a Kinesis event that runs each record at most once per key (see the
// package's documentation), stops at the first failure and reports it by
// its sequence number. Pass the result to lambda.Start.
func Kinesis(i *idempotency.Idempotency, c Config[events.KinesisEventRecord], fn func(context.Context, events.KinesisEventRecord) error) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	return func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
		for _, n := range process(ctx, i, c, kinesisSource, ev.Records, always, false, fn) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: ev.Records[n].Kinesis.SequenceNumber})
		}
		return resp, nil
	}
}

// dynamoDBPayload is the default payload of a DynamoDB Streams record.
type dynamoDBPayload struct {
	EventName string                                   `json:"eventName"`
	Keys      map[string]events.DynamoDBAttributeValue `json:"Keys,omitempty"`
	NewImage  map[string]events.DynamoDBAttributeValue `json:"NewImage,omitempty"`
	OldImage  map[string]events.DynamoDBAttributeValue `json:"OldImage,omitempty"`
}

var dynamoDBSource = source[events.DynamoDBEventRecord]{
	scope: func(r events.DynamoDBEventRecord) string { return r.EventSourceArn },
	key:   func(r events.DynamoDBEventRecord) (string, error) { return r.EventID, nil },
	payload: func(r events.DynamoDBEventRecord) ([]byte, error) {
		return json.Marshal(dynamoDBPayload{EventName: r.EventName, Keys: r.Change.Keys, NewImage: r.Change.NewImage, OldImage: r.Change.OldImage})
	},
}

// DynamoDB returns fn, a handler of one DynamoDB Streams record, as the
// handler of a DynamoDB Streams event that runs each record at most once
// per key (see the package's documentation), stops at the first failure
// and reports it by its sequence number. Pass the result to lambda.Start.
func DynamoDB(i *idempotency.Idempotency, c Config[events.DynamoDBEventRecord], fn func(context.Context, events.DynamoDBEventRecord) error) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
		for _, n := range process(ctx, i, c, dynamoDBSource, ev.Records, always, false, fn) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[n].Change.SequenceNumber})
		}
		return resp, nil
	}
}
