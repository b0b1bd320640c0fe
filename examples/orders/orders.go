// Package orders is the domain of the orders example: an order as the API
// takes it, its validation, the item it is stored as in the orders table,
// and the message the API enqueues for the worker.
//
// The two functions are in api (POST /orders behind apigateway.HTTP) and
// worker (the queue's consumer behind batch.SQS); functions/api and
// functions/worker wire them for Lambda from the environment (FromEnv).
package orders

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Statuses of an order in the orders table.
const (
	StatusPending = "PENDING"
	StatusPaid    = "PAID"
)

// Request is the body of POST /orders.
type Request struct {
	Customer    string `json:"customer"`
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amountCents"`
}

// Order is an order as stored in the orders table (partition key
// orderId) and answered by the API.
type Order struct {
	OrderID     string `json:"orderId" dynamodbav:"orderId"`
	Status      string `json:"status" dynamodbav:"status"`
	Customer    string `json:"customer" dynamodbav:"customer"`
	SKU         string `json:"sku" dynamodbav:"sku"`
	Quantity    int    `json:"quantity" dynamodbav:"quantity"`
	AmountCents int64  `json:"amountCents" dynamodbav:"amountCents"`
	PaymentID   string `json:"paymentId,omitempty" dynamodbav:"paymentId,omitempty"`
}

// Message is the body of the queue's message for an order: the worker
// keys its idempotency on OrderID. It holds nothing that differs between
// two sends for the same order, so a message sent again has the same
// body, and so the same fingerprint.
type Message struct {
	OrderID string `json:"orderId"`
}

// ErrInvalid is what Parse's errors match.
var ErrInvalid = errors.New("invalid order")

// MaxAmountCents bounds an order's amount.
const MaxAmountCents = 1_000_000_00

// Parse decodes and validates a POST /orders body: a JSON object with
// only the fields of Request, a customer and a sku of 1 to 64
// characters, a quantity of 1 to 100 and an amount of 1 to
// MaxAmountCents cents. Its errors match ErrInvalid and say what is
// wrong.
func Parse(body []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("%w: the body is not an order: %v", ErrInvalid, err)
	}
	if dec.More() {
		return Request{}, fmt.Errorf("%w: the body holds more than one JSON value", ErrInvalid)
	}
	var problems []string
	if n := len(r.Customer); n == 0 || n > 64 {
		problems = append(problems, "customer must be 1 to 64 characters")
	}
	if n := len(r.SKU); n == 0 || n > 64 {
		problems = append(problems, "sku must be 1 to 64 characters")
	}
	if r.Quantity < 1 || r.Quantity > 100 {
		problems = append(problems, "quantity must be 1 to 100")
	}
	if r.AmountCents < 1 || r.AmountCents > MaxAmountCents {
		problems = append(problems, fmt.Sprintf("amountCents must be 1 to %d", int64(MaxAmountCents)))
	}
	if len(problems) > 0 {
		return Request{}, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	return r, nil
}
