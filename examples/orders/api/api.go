// Package api is the handler of POST /orders, an HTTP API's route
// (payload format 2.0), made idempotent by apigateway.HTTP.
//
// A request is validated first, before any idempotency: a bad body is
// answered 400 (application/problem+json) and stores nothing, not even
// an idempotency record, so the client may send the corrected order
// under the same Idempotency-Key. A valid one goes through the wrapper:
// the order is written to the orders table, a message is enqueued for
// the worker, and the 201 is stored and replayed to every retry of the
// key.
//
// The order's id is derived from the caller's scope and key
// (idempotency.RecordKey), so every attempt of one request writes the
// same order: the put is conditioned on the order not existing, and an
// attempt that finds it (one that crashed after the write, before the
// wrapper settled, and was retried after its lease ended) goes on with
// it. The message is sent after the write, on a standard queue: an
// attempt run again may send it again, and the worker, idempotent on
// the order id, charges the order once. See the example's README for
// why DoTx is not used here.
package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/transfers/examples/orders"
	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/apigateway"
)

// DB is the DynamoDB call the handler makes on the orders table.
type DB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Queue is the SQS call the handler makes.
type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var (
	_ DB    = (*dynamodb.Client)(nil)
	_ Queue = (*sqs.Client)(nil)
)

// AnonymousScope is the scope of a request that no authorizer named.
const AnonymousScope = "anonymous"

// Scope is the wrapper's Config.Scope: the caller apigateway.HTTPCaller
// names (a JWT authorizer's token, a Cognito identity, an IAM user),
// else AnonymousScope. The example's API has no authorizer, so every
// caller shares the anonymous key space; HTTPCaller alone would answer
// such a request 500 (apigateway.ErrNoCaller).
func Scope(req events.APIGatewayV2HTTPRequest) (string, error) {
	if s, err := apigateway.HTTPCaller(req); err == nil {
		return s, nil
	}
	return AnonymousScope, nil
}

// Handler creates orders.
type Handler struct {
	DB          DB
	OrdersTable string
	Queue       Queue
	QueueURL    string
}

// New is h's Create behind validation and apigateway.HTTP: what the
// function passes to lambda.Start.
func New(idem *idempotency.Idempotency, h *Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	wrapped := apigateway.HTTP(idem, apigateway.Config[events.APIGatewayV2HTTPRequest]{Scope: Scope}, h.Create)
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if _, err := orders.Parse(body(req)); err != nil {
			return invalid(err), nil
		}
		return wrapped(ctx, req)
	}
}

// OrderID is the id of the order that the request with key makes in
// scope: the same for every attempt of one request.
func OrderID(scope, key string) string {
	return "ord_" + idempotency.RecordKey(scope, key)[:24]
}

// Create writes the order and enqueues its message; it answers 201 with
// the order. It runs inside the wrapper, so at most once per key while
// the outcome is kept; a 5xx answer releases the key for a retry.
func (h *Handler) Create(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	r, err := orders.Parse(body(req))
	if err != nil { // New validated it; kept for a Create called alone
		return invalid(err), nil
	}
	key := header(req, apigateway.DefaultHeader)
	if key == "" { // the wrapper refuses it, unless idempotency is disabled
		return problem(http.StatusBadRequest, apigateway.CodeKeyMissing, "the "+apigateway.DefaultHeader+" header is required"), nil
	}
	scope, _ := Scope(req)
	o := orders.Order{
		OrderID:     OrderID(scope, key),
		Status:      orders.StatusPending,
		Customer:    r.Customer,
		SKU:         r.SKU,
		Quantity:    r.Quantity,
		AmountCents: r.AmountCents,
	}
	item, err := attributevalue.MarshalMap(o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	_, err = h.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(h.OrdersTable),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(orderId)"),
	})
	var exists *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &exists) {
		return problem(http.StatusServiceUnavailable, "orders-unavailable", "the order could not be stored; retry with the same Idempotency-Key"), nil
	}
	msg, err := json.Marshal(orders.Message{OrderID: o.OrderID})
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if _, err := h.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.QueueURL), MessageBody: aws.String(string(msg))}); err != nil {
		return problem(http.StatusServiceUnavailable, "queue-unavailable", "the order could not be enqueued; retry with the same Idempotency-Key"), nil
	}
	out, err := json.Marshal(o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusCreated,
		Headers:    map[string]string{"Content-Type": "application/json", "Location": "/orders/" + o.OrderID},
		Body:       string(out),
	}, nil
}

// body is the request's body, base64-decoded when API Gateway encoded
// it.
func body(req events.APIGatewayV2HTTPRequest) []byte {
	if req.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(req.Body); err == nil {
			return b
		}
	}
	return []byte(req.Body)
}

// header is the value of the header name, in any case.
func header(req events.APIGatewayV2HTTPRequest, name string) string {
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// invalid is the 400 of a body that orders.Parse refused.
func invalid(err error) events.APIGatewayV2HTTPResponse {
	return problem(http.StatusBadRequest, "invalid-order", strings.TrimPrefix(err.Error(), orders.ErrInvalid.Error()+": "))
}

// problem is an RFC 9457 answer, in the form of the wrapper's own.
func problem(status int, code, detail string) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(apigateway.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Code: code})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": apigateway.ProblemContentType},
		Body:       string(b),
	}
}
