package stack

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// DefaultDynamoDBConcurrency is Options.DynamoDBConcurrency's default.
const DefaultDynamoDBConcurrency = 4

// dynamoDBGate lets at most a few requests of the stack's clients be in
// flight at DynamoDB Local at once; the others wait their turn, in the
// order they came.
//
// DynamoDB Local runs every TransactWriteItems under one database-wide
// write lock (SQLiteDBAccess.beginTransaction) and every other operation
// under the read side of that lock; the lock is Java's non-fair
// ReentrantReadWriteLock. With many requests in flight, single-item
// writes keep the read side busy and a newly arrived transaction may take
// the lock before those already waiting, so some transactions (a
// reservation, a leg) wait far longer than the rest: a few seconds while
// the median is a few milliseconds. Queued here, in arrival order, no
// request can be overtaken by more than the gate's width, and DynamoDB
// Local does the same work without the lock's hand-offs.
//
// The gate changes the order in which requests reach DynamoDB Local, never
// what they ask: requests of different executions still run concurrently
// up to its width, so races between them (conditions, transaction
// conflicts) can happen as before.
type dynamoDBGate struct {
	host  string // DynamoDB Local's host:port
	slots chan struct{}
}

// newDynamoDBGate returns the gate of endpoint, width n; nil (no gate) when
// n is negative.
func newDynamoDBGate(endpoint string, n int) (*dynamoDBGate, error) {
	if n < 0 {
		return nil, nil
	}
	if n == 0 {
		n = DefaultDynamoDBConcurrency
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("stack: DynamoDB endpoint %q: not a URL", endpoint)
	}
	return &dynamoDBGate{host: u.Host, slots: make(chan struct{}, n)}, nil
}

// enter waits for a slot for req, when req goes to DynamoDB Local; leave
// (not nil) gives it back.
func (g *dynamoDBGate) enter(req *http.Request) (leave func(), err error) {
	if g == nil || req.URL.Host != g.host {
		return func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-req.Context().Done():
		return nil, fmt.Errorf("stack: waiting to send to DynamoDB Local: %w", context.Cause(req.Context()))
	}
}

// gatedTransport sends requests through a gate.
type gatedTransport struct {
	gate *dynamoDBGate
	next http.RoundTripper
}

func (t gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	leave, err := t.gate.enter(req)
	if err != nil {
		return nil, err
	}
	// The answer has come once RoundTrip returns: DynamoDB Local is done
	// with the request, whatever is left of the body to read.
	defer leave()
	return t.next.RoundTrip(req)
}

// gatedClient is an SDK HTTP client that sends through a gate.
type gatedClient struct {
	gate *dynamoDBGate
	next aws.HTTPClient
}

func (c gatedClient) Do(req *http.Request) (*http.Response, error) {
	leave, err := c.gate.enter(req)
	if err != nil {
		return nil, err
	}
	defer leave()
	return c.next.Do(req)
}
