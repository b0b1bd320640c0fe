// Package worker is the consumer of the orders queue: it charges each
// order once, behind batch.SQS.
//
// Each message runs through idempotency.Do under the order id read from
// its body (keypath "powertools_json(body).orderId"), so a message
// delivered twice, or the same order enqueued twice by an API attempt
// that ran again, is charged once; the duplicate is skipped and not
// reported. The charge is then recorded with a conditional write (the
// order must exist and be PENDING), the second line of defence should
// the idempotency record be gone. The order is read first, so that an
// unknown or paid order is never charged. A message that fails (an unknown
// order, a payment refused, DynamoDB unavailable) is reported in the
// batch item failures, and SQS delivers it again after its visibility
// timeout, to the dead-letter queue after the template's
// maxReceiveCount.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/examples/orders"
	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/batch"
	"github.com/exactlyonce/transfers/idempotency/keypath"
)

// DB is the DynamoDB calls the worker makes on the orders table.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ DB = (*dynamodb.Client)(nil)

// Payments charges an order: the call that must happen once per order.
type Payments interface {
	Charge(ctx context.Context, orderID string, amountCents int64) (paymentID string, err error)
}

// FakePayments is the example's payment provider: it accepts every
// charge and names it after the order.
type FakePayments struct{}

// Charge answers "pay_" and the order id.
func (FakePayments) Charge(_ context.Context, orderID string, _ int64) (string, error) {
	return "pay_" + orderID, nil
}

var _ Payments = FakePayments{}

// Scope is the idempotency scope of the worker's records: the order id
// is the key whichever queue (the main one, or the dead-letter queue
// redriven) delivered it.
const Scope = "orders-worker"

// OrderKey is the key of a message: its body's orderId.
var OrderKey = keypath.MustCompile("powertools_json(body).orderId")

// ErrUnknownOrder reports a message for an order the table does not
// hold.
var ErrUnknownOrder = errors.New("unknown order")

// Handler charges orders.
type Handler struct {
	DB          DB
	OrdersTable string
	Payments    Payments
}

// New is h's Charge behind batch.SQS: what the function passes to
// lambda.Start.
func New(idem *idempotency.Idempotency, h *Handler) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return batch.SQS(idem, batch.Config[events.SQSMessage]{
		Scope: Scope,
		Key:   keypath.KeyFunc[events.SQSMessage](OrderKey),
		OnFailure: func(ctx context.Context, m events.SQSMessage, err error) {
			slog.WarnContext(ctx, "message failed", "messageId", m.MessageId, "error", err)
		},
	}, h.Charge)
}

// Charge charges the message's order and marks it PAID.
func (h *Handler) Charge(ctx context.Context, m events.SQSMessage) error {
	var msg orders.Message
	if err := json.Unmarshal([]byte(m.Body), &msg); err != nil || msg.OrderID == "" {
		return fmt.Errorf("message %s is no order message: %v", m.MessageId, err)
	}
	key := map[string]types.AttributeValue{"orderId": &types.AttributeValueMemberS{Value: msg.OrderID}}
	got, err := h.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(h.OrdersTable), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("read %s: %w", msg.OrderID, err)
	}
	if len(got.Item) == 0 {
		return fmt.Errorf("charge %s: %w", msg.OrderID, ErrUnknownOrder)
	}
	var o orders.Order
	if err := attributevalue.UnmarshalMap(got.Item, &o); err != nil {
		return fmt.Errorf("read %s: %w", msg.OrderID, err)
	}
	if o.Status == orders.StatusPaid {
		return nil // paid already
	}
	paymentID, err := h.Payments.Charge(ctx, o.OrderID, o.AmountCents)
	if err != nil {
		return fmt.Errorf("charge %s: %w", msg.OrderID, err)
	}
	_, err = h.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(h.OrdersTable),
		Key:                      key,
		UpdateExpression:         aws.String("SET #status = :paid, paymentId = :payment"),
		ConditionExpression:      aws.String("attribute_exists(orderId) AND #status = :pending"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":paid":    &types.AttributeValueMemberS{Value: orders.StatusPaid},
			":pending": &types.AttributeValueMemberS{Value: orders.StatusPending},
			":payment": &types.AttributeValueMemberS{Value: paymentID},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		slog.InfoContext(ctx, "order paid", "orderId", o.OrderID, "paymentId", paymentID, "messageId", m.MessageId)
		return nil
	case errors.As(err, &failed) && len(failed.Item) == 0:
		return fmt.Errorf("charge %s: %w", msg.OrderID, ErrUnknownOrder)
	case errors.As(err, &failed):
		if s, ok := failed.Item["status"].(*types.AttributeValueMemberS); ok && s.Value == orders.StatusPaid {
			return nil // paid already
		}
		return fmt.Errorf("charge %s: the order is not %s", msg.OrderID, orders.StatusPending)
	default:
		return fmt.Errorf("mark %s paid: %w", msg.OrderID, err)
	}
}
