package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/transfers/examples/orders"
	"github.com/exactlyonce/transfers/examples/orders/api"
	"github.com/exactlyonce/transfers/examples/orders/internal/ordertest"
	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/apigateway"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// sent records the messages the handler sends, as SQS would take them.
type sent struct {
	mu   sync.Mutex
	msgs []sqs.SendMessageInput
	err  error
}

var _ api.Queue = (*sent)(nil)

func (s *sent) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	s.msgs = append(s.msgs, *in)
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

func (s *sent) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		out = append(out, aws.ToString(m.MessageBody))
	}
	return out
}

type fixture struct {
	db          *dynamodb.Client
	idemTable   string
	ordersTable string
	queue       *sent
	handler     func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
}

// setup makes the template's two tables in DynamoDB Local and the
// handler as the function wires it, with a recording queue.
func setup(t *testing.T) *fixture {
	t.Helper()
	db := idemtest.Client(t)
	f := &fixture{
		db:          db,
		idemTable:   ordertest.Table(t, db, "IdempotencyTable"),
		ordersTable: ordertest.Table(t, db, "OrdersTable"),
		queue:       &sent{},
	}
	idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(db, f.idemTable)})
	if err != nil {
		t.Fatal(err)
	}
	f.handler = api.New(idem, &api.Handler{DB: db, OrdersTable: f.ordersTable, Queue: f.queue, QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/orders"})
	return f
}

// post is POST /orders as an HTTP API without an authorizer passes it
// (payload format 2.0: header names in lower case).
func post(key, body string) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{"content-type": "application/json"}
	if key != "" {
		headers["idempotency-key"] = key
	}
	return events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "POST /orders",
		RawPath:  "/orders",
		Headers:  headers,
		Body:     body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "POST /orders",
			Stage:    "$default",
			HTTP:     events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/orders", Protocol: "HTTP/1.1", SourceIP: "203.0.113.7"},
		},
	}
}

const order = `{"customer":"c-42","sku":"mug","quantity":2,"amountCents":1800}`

func (f *fixture) call(t *testing.T, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.handler(t.Context(), req)
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	return resp
}

func (f *fixture) stored(t *testing.T, id string) (orders.Order, bool) {
	t.Helper()
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: &f.ordersTable, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"orderId": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return orders.Order{}, false
	}
	var o orders.Order
	if err := attributevalue.UnmarshalMap(out.Item, &o); err != nil {
		t.Fatal(err)
	}
	return o, true
}

func problemCode(t *testing.T, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != apigateway.ProblemContentType {
		t.Errorf("Content-Type %q, want %q", ct, apigateway.ProblemContentType)
	}
	var p apigateway.Problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	if p.Status != resp.StatusCode {
		t.Errorf("problem status %d, response %d", p.Status, resp.StatusCode)
	}
	return p.Code
}

// A new order is stored PENDING and enqueued once; the same key again is
// the stored 201, marked replayed, with no second write or message.
func TestNewOrderThenReplay(t *testing.T) {
	f := setup(t)
	first := f.call(t, post("k-1", order))
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	if first.Headers[apigateway.ReplayedHeader] != "" {
		t.Errorf("first answer marked replayed")
	}
	var o orders.Order
	if err := json.Unmarshal([]byte(first.Body), &o); err != nil {
		t.Fatal(err)
	}
	want := orders.Order{OrderID: api.OrderID(api.AnonymousScope, "k-1"), Status: orders.StatusPending, Customer: "c-42", SKU: "mug", Quantity: 2, AmountCents: 1800}
	if o != want {
		t.Errorf("answered %+v, want %+v", o, want)
	}
	if got := first.Headers["Location"]; got != "/orders/"+want.OrderID {
		t.Errorf("Location %q", got)
	}
	if got, ok := f.stored(t, want.OrderID); !ok || got != want {
		t.Errorf("stored %+v (%v), want %+v", got, ok, want)
	}
	if got := f.queue.bodies(); len(got) != 1 || got[0] != `{"orderId":"`+want.OrderID+`"}` {
		t.Errorf("messages %q, want the order's one", got)
	}

	again := f.call(t, post("k-1", order))
	if again.StatusCode != http.StatusCreated || again.Body != first.Body {
		t.Errorf("retry: %d %s, want the first answer", again.StatusCode, again.Body)
	}
	if again.Headers[apigateway.ReplayedHeader] != "true" {
		t.Errorf("retry not marked %s: %v", apigateway.ReplayedHeader, again.Headers)
	}
	if n := len(f.queue.bodies()); n != 1 {
		t.Errorf("%d messages after the retry, want 1", n)
	}
	if n := ordertest.Count(t, f.db, f.ordersTable); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

// Two keys are two orders.
func TestTwoKeysTwoOrders(t *testing.T) {
	f := setup(t)
	for _, k := range []string{"k-1", "k-2"} {
		if resp := f.call(t, post(k, order)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: %d %s", k, resp.StatusCode, resp.Body)
		}
	}
	if n := ordertest.Count(t, f.db, f.ordersTable); n != 2 {
		t.Errorf("%d orders, want 2", n)
	}
	if n := len(f.queue.bodies()); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// The same key with another order is refused 422 and changes nothing.
func TestSameKeyOtherBody(t *testing.T) {
	f := setup(t)
	if resp := f.call(t, post("k-1", order)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", resp.StatusCode, resp.Body)
	}
	other := strings.Replace(order, `"quantity":2`, `"quantity":3`, 1)
	resp := f.call(t, post("k-1", other))
	if resp.StatusCode != http.StatusUnprocessableEntity || problemCode(t, resp) != apigateway.CodeKeyReused {
		t.Errorf("got %d %s, want 422 %s", resp.StatusCode, resp.Body, apigateway.CodeKeyReused)
	}
	if o, _ := f.stored(t, api.OrderID(api.AnonymousScope, "k-1")); o.Quantity != 2 {
		t.Errorf("stored quantity %d, want 2", o.Quantity)
	}
	if n := len(f.queue.bodies()); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// Without the header: 400, nothing stored, nothing sent.
func TestMissingKey(t *testing.T) {
	f := setup(t)
	resp := f.call(t, post("", order))
	if resp.StatusCode != http.StatusBadRequest || problemCode(t, resp) != apigateway.CodeKeyMissing {
		t.Errorf("got %d %s, want 400 %s", resp.StatusCode, resp.Body, apigateway.CodeKeyMissing)
	}
	f.nothingStored(t)
}

// A bad order is 400 before any idempotency: no order, no message, no
// idempotency record, so the corrected order may use the same key.
func TestBadBody(t *testing.T) {
	f := setup(t)
	for _, body := range []string{
		`not json`,
		`{"customer":"c-42","sku":"mug","quantity":0,"amountCents":1800}`,
		`{"customer":"","sku":"mug","quantity":1,"amountCents":-5}`,
		`{"customer":"c-42","sku":"mug","quantity":1,"amountCents":5,"coupon":"FREE"}`,
	} {
		resp := f.call(t, post("k-1", body))
		if resp.StatusCode != http.StatusBadRequest || problemCode(t, resp) != "invalid-order" {
			t.Errorf("%s: got %d %s, want 400 invalid-order", body, resp.StatusCode, resp.Body)
		}
	}
	f.nothingStored(t)
	if resp := f.call(t, post("k-1", order)); resp.StatusCode != http.StatusCreated {
		t.Errorf("the corrected order under the same key: %d %s", resp.StatusCode, resp.Body)
	}
}

func (f *fixture) nothingStored(t *testing.T) {
	t.Helper()
	if n := ordertest.Count(t, f.db, f.ordersTable); n != 0 {
		t.Errorf("%d orders stored, want none", n)
	}
	if n := ordertest.Count(t, f.db, f.idemTable); n != 0 {
		t.Errorf("%d idempotency records stored, want none", n)
	}
	if n := len(f.queue.bodies()); n != 0 {
		t.Errorf("%d messages sent, want none", n)
	}
}

// The queue fails: 503, the key is released, and the retry (same key)
// finds the order written and enqueues it.
func TestQueueDownThenRetry(t *testing.T) {
	f := setup(t)
	f.queue.err = context.DeadlineExceeded
	resp := f.call(t, post("k-1", order))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got %d %s, want 503", resp.StatusCode, resp.Body)
	}
	f.queue.err = nil
	resp = f.call(t, post("k-1", order))
	if resp.StatusCode != http.StatusCreated || resp.Headers[apigateway.ReplayedHeader] != "" {
		t.Fatalf("retry: %d %v %s, want a fresh 201", resp.StatusCode, resp.Headers, resp.Body)
	}
	if n := ordertest.Count(t, f.db, f.ordersTable); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
	if n := len(f.queue.bodies()); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// A caller an authorizer names has keys of its own: the same key from
// another caller is another order.
func TestScopePerCaller(t *testing.T) {
	f := setup(t)
	anon := post("k-1", order)
	alice := post("k-1", order)
	alice.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"iss": "https://issuer.example", "sub": "alice"}},
	}
	a, b := f.call(t, anon), f.call(t, alice)
	if a.StatusCode != http.StatusCreated || b.StatusCode != http.StatusCreated || b.Headers[apigateway.ReplayedHeader] != "" {
		t.Fatalf("got %d and %d %v, want two new orders", a.StatusCode, b.StatusCode, b.Headers)
	}
	if a.Body == b.Body {
		t.Error("two callers' key made one order")
	}
	if s, _ := api.Scope(alice); s != `jwt "https://issuer.example" "alice"` {
		t.Errorf("alice's scope %q", s)
	}
}
