package fault

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// dynamoDBTargetPrefix prefixes the operation in X-Amz-Target.
const dynamoDBTargetPrefix = "DynamoDB_20120810."

// IntegrationFault is a fault applied to the requests of the Step Functions
// endpoint's direct DynamoDB integrations (arn:aws:states:::dynamodb:*),
// which do not go through the SDK. The task then fails as Step Functions
// reports a client-side failure: DynamoDB.AmazonDynamoDBException; or, with
// ServerError, as it reports DynamoDB's own 500: DynamoDB.InternalServerError.
type IntegrationFault struct {
	// Operation is the DynamoDB operation ("UpdateItem", ...); "" is any.
	Operation string
	When      When
	// Times and Prob: as in LambdaFault.
	Times int
	Prob  float64
	// Match, when set, filters requests by their JSON body.
	Match func(body []byte) bool
	// ServerError answers HTTP 500 with DynamoDB's InternalServerError
	// document instead of failing the connection.
	ServerError bool
}

// internalServerError is the body DynamoDB answers a 500 with.
const internalServerError = `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`

// Integration arms an integration fault.
func (in *Injector) Integration(f IntegrationFault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.integ = append(in.integ, &armed[IntegrationFault]{f: f, times: f.Times, prob: f.Prob})
}

// Transport wraps next (nil: http.DefaultTransport) with the integration
// faults, for sfnlocal.DynamoDBConfig.HTTPClient. Before returns a
// connection error without sending; After sends, reads and discards the
// response, then returns a connection error.
func (in *Injector) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{in: in, next: next}
}

type transport struct {
	in   *Injector
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("fault: read request body: %w", err)
		}
		body = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), dynamoDBTargetPrefix)
	in := t.in
	in.mu.Lock()
	f, ok := take(in, &in.integ, func(f IntegrationFault) bool {
		return (f.Operation == "" || f.Operation == op) && (f.Match == nil || f.Match(body))
	})
	name := CountIntegrationBefore
	if f.When == After {
		name = CountIntegrationAfter
	}
	if ok {
		in.counts[name]++
	}
	in.mu.Unlock()
	if !ok {
		return t.next.RoundTrip(req)
	}
	if f.When == After {
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if f.ServerError {
		return &http.Response{
			StatusCode: http.StatusInternalServerError,
			Status:     "500 Internal Server Error",
			Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body:          io.NopCloser(strings.NewReader(internalServerError)),
			ContentLength: int64(len(internalServerError)),
			Request:       req,
		}, nil
	}
	return nil, connectionReset(name + " DynamoDB." + op)
}
