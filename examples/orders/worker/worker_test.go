package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/examples/orders"
	"github.com/exactlyonce/transfers/examples/orders/internal/ordertest"
	"github.com/exactlyonce/transfers/examples/orders/worker"
	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

const queueARN = "arn:aws:sqs:us-east-1:123456789012:orders"

// payments counts the charges of each order; it refuses those in
// decline.
type payments struct {
	mu      sync.Mutex
	charged map[string]int
	decline map[string]bool
}

var _ worker.Payments = (*payments)(nil)

func (p *payments) Charge(_ context.Context, orderID string, _ int64) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.decline[orderID] {
		return "", errors.New("card declined")
	}
	p.charged[orderID]++
	return "pay_" + orderID, nil
}

func (p *payments) count(orderID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charged[orderID]
}

type fixture struct {
	db       *dynamodb.Client
	table    string
	payments *payments
	handler  func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func setup(t *testing.T) *fixture {
	t.Helper()
	db := idemtest.Client(t)
	f := &fixture{
		db:       db,
		table:    ordertest.Table(t, db, "OrdersTable"),
		payments: &payments{charged: map[string]int{}, decline: map[string]bool{}},
	}
	idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(db, ordertest.Table(t, db, "IdempotencyTable"))})
	if err != nil {
		t.Fatal(err)
	}
	f.handler = worker.New(idem, &worker.Handler{DB: db, OrdersTable: f.table, Payments: f.payments})
	return f
}

// pending stores a PENDING order, as the api function does.
func (f *fixture) pending(t *testing.T, id string) {
	t.Helper()
	item, err := attributevalue.MarshalMap(orders.Order{OrderID: id, Status: orders.StatusPending, Customer: "c-42", SKU: "mug", Quantity: 1, AmountCents: 900})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &f.table, Item: item}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) status(t *testing.T, id string) orders.Order {
	t.Helper()
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: &f.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"orderId": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var o orders.Order
	if err := attributevalue.UnmarshalMap(out.Item, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// message is the api function's message for orderID, as SQS delivers
// it to Lambda.
func message(messageID, orderID string) events.SQSMessage {
	return events.SQSMessage{
		MessageId:      messageID,
		ReceiptHandle:  "rh-" + messageID,
		Body:           fmt.Sprintf(`{"orderId":%q}`, orderID),
		Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
		EventSource:    "aws:sqs",
		EventSourceARN: queueARN,
		AWSRegion:      "us-east-1",
	}
}

func (f *fixture) deliver(t *testing.T, msgs ...events.SQSMessage) []string {
	t.Helper()
	resp, err := f.handler(t.Context(), events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	var failed []string
	for _, it := range resp.BatchItemFailures {
		failed = append(failed, it.ItemIdentifier)
	}
	return failed
}

// A message delivered twice (the same message id again, in the next
// batch), and the same order enqueued twice (another message id, in the
// same batch), are one charge; neither duplicate is reported.
func TestChargedOnce(t *testing.T) {
	f := setup(t)
	f.pending(t, "ord_1")
	if failed := f.deliver(t, message("m-1", "ord_1"), message("m-2", "ord_1")); len(failed) != 0 {
		t.Errorf("reported %q, want none", failed)
	}
	if failed := f.deliver(t, message("m-1", "ord_1")); len(failed) != 0 {
		t.Errorf("redelivery reported %q, want none", failed)
	}
	if n := f.payments.count("ord_1"); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
	if o := f.status(t, "ord_1"); o.Status != orders.StatusPaid || o.PaymentID != "pay_ord_1" {
		t.Errorf("order %+v, want PAID with its payment", o)
	}
}

// A failing message (an unknown order, a declined payment) is reported
// and the others of the batch are charged; delivered again, the declined
// one is charged once it goes through, and the paid one is not charged
// again.
func TestFailuresReported(t *testing.T) {
	f := setup(t)
	f.pending(t, "ord_1")
	f.pending(t, "ord_2")
	f.pending(t, "ord_3")
	f.payments.decline["ord_3"] = true
	failed := f.deliver(t, message("m-1", "ord_1"), message("m-2", "ord_unknown"), message("m-3", "ord_2"), message("m-4", "ord_3"), events.SQSMessage{MessageId: "m-5", Body: "not json", EventSourceARN: queueARN})
	if fmt.Sprint(failed) != "[m-2 m-4 m-5]" {
		t.Errorf("reported %q, want [m-2 m-4 m-5]", failed)
	}
	for _, id := range []string{"ord_1", "ord_2"} {
		if o := f.status(t, id); o.Status != orders.StatusPaid || f.payments.count(id) != 1 {
			t.Errorf("%s: %s, charged %d times; want PAID, once", id, o.Status, f.payments.count(id))
		}
	}
	if o := f.status(t, "ord_3"); o.Status != orders.StatusPending {
		t.Errorf("ord_3 is %s after a declined charge, want PENDING", o.Status)
	}

	// SQS delivers the failed ones again, after their visibility timeout.
	f.payments.decline["ord_3"] = false
	if failed := f.deliver(t, message("m-1", "ord_1"), message("m-4", "ord_3")); len(failed) != 0 {
		t.Errorf("redelivery reported %q, want none", failed)
	}
	if o := f.status(t, "ord_3"); o.Status != orders.StatusPaid || f.payments.count("ord_3") != 1 {
		t.Errorf("ord_3: %s, charged %d times; want PAID, once", o.Status, f.payments.count("ord_3"))
	}
	if n := f.payments.count("ord_1"); n != 1 {
		t.Errorf("ord_1 charged %d times, want 1", n)
	}
}

// An order paid already, its idempotency record gone (another table
// here), is not charged again: the worker reads the order first.
func TestPaidOrderNotChargedAgain(t *testing.T) {
	f := setup(t)
	f.pending(t, "ord_1")
	if failed := f.deliver(t, message("m-1", "ord_1")); len(failed) != 0 {
		t.Fatalf("reported %q", failed)
	}
	idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(f.db, ordertest.Table(t, f.db, "IdempotencyTable"))})
	if err != nil {
		t.Fatal(err)
	}
	fresh := worker.New(idem, &worker.Handler{DB: f.db, OrdersTable: f.table, Payments: f.payments})
	resp, err := fresh(t.Context(), events.SQSEvent{Records: []events.SQSMessage{message("m-1", "ord_1")}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("got %v, %v", resp, err)
	}
	if n := f.payments.count("ord_1"); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}
