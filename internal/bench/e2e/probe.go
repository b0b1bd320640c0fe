package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithy "github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// dynamoDBTargetPrefix prefixes the operation in X-Amz-Target.
const dynamoDBTargetPrefix = "DynamoDB_20120810."

// Probe observes a local stack's DynamoDB calls for the benchmark: the
// workflow's own integration calls (through stack.Options.WorkflowDynamoDB)
// and the functions' SDK calls (through stack.Options.APIOptions). It
// wakes a client waiting for a record when the workflow's UpdateItem that
// makes the record terminal succeeds, and records the operations of one
// transfer for Capture. It adds no call of its own.
//
// Wire it into the stack before starting it:
//
//	probe := e2e.NewProbe()
//	st, err := stack.Start(ctx, probe.Options(stack.Options{}))
//
// A Probe is safe for concurrent use; it observes one stack.
type Probe struct {
	mu      sync.Mutex
	waiters map[string]*waiter // by record key
	// waiting counts the waiters, so the transport reads no request body
	// while nobody waits.
	waiting atomic.Int64
	// capture is the recording in progress, nil when none.
	capture atomic.Pointer[recording]
}

// NewProbe returns a Probe observing nothing yet; see Options.
func NewProbe() *Probe {
	return &Probe{waiters: map[string]*waiter{}}
}

// Options returns opts with the probe wired in: its SDK middleware
// appended to APIOptions and its transport inside any WorkflowDynamoDB
// already set.
func (p *Probe) Options(opts stack.Options) stack.Options {
	// The benchmark sends far more than a caller's rate limit on
	// purpose: no limit unless the options set one.
	if _, set := opts.Parameters["CallerRateLimit"]; !set {
		opts.Parameters = maps.Clone(opts.Parameters)
		if opts.Parameters == nil {
			opts.Parameters = map[string]string{}
		}
		opts.Parameters["CallerRateLimit"] = "0"
	}
	opts.APIOptions = append(append([]func(*middleware.Stack) error(nil), opts.APIOptions...), p.addMiddleware)
	outer := opts.WorkflowDynamoDB
	opts.WorkflowDynamoDB = func(next http.RoundTripper) http.RoundTripper {
		var rt http.RoundTripper = &probeTransport{p: p, next: next}
		if outer != nil {
			rt = outer(rt)
		}
		return rt
	}
	return opts
}

// waiter is a client waiting for a record to turn terminal.
type waiter struct {
	done   chan struct{}
	at     time.Time // when the terminal write succeeded
	status reservation.Status
}

// expect registers a wait for the record recordKey; call it before the
// request that creates the record, and forget after.
func (p *Probe) expect(recordKey string) *waiter {
	w := &waiter{done: make(chan struct{})}
	p.mu.Lock()
	p.waiters[recordKey] = w
	p.mu.Unlock()
	p.waiting.Add(1)
	return w
}

func (p *Probe) forget(recordKey string) {
	p.mu.Lock()
	_, ok := p.waiters[recordKey]
	delete(p.waiters, recordKey)
	p.mu.Unlock()
	if ok {
		p.waiting.Add(-1)
	}
}

// settled wakes the waiter of recordKey, if any, once.
func (p *Probe) settled(recordKey string, status reservation.Status, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waiters[recordKey]
	if w == nil || w.status != "" {
		return
	}
	w.at, w.status = at, status
	close(w.done)
}

// probeTransport observes the workflow's DynamoDB integration calls.
type probeTransport struct {
	p    *Probe
	next http.RoundTripper
}

func (t *probeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), dynamoDBTargetPrefix)
	rec := t.p.capture.Load()
	var body []byte
	if rec != nil || (op == "UpdateItem" && t.p.waiting.Load() > 0) {
		var err error
		if body, req, err = requestBody(req); err != nil {
			return nil, fmt.Errorf("e2e probe: %w", err)
		}
	}
	resp, err := t.next.RoundTrip(req)
	at := time.Now()
	if body == nil {
		return resp, err
	}
	if rec != nil && rec.wants(body) {
		code := ""
		switch {
		case err != nil:
			code = "transport: " + err.Error()
		case resp.StatusCode != http.StatusOK:
			var raw []byte
			if raw, resp, err = responseBody(resp); err != nil {
				return nil, fmt.Errorf("e2e probe: %w", err)
			}
			code = errorCode(raw)
		}
		rec.add(Op{By: ByWorkflow, Operation: op, Body: body, Error: code})
	}
	if err == nil && resp.StatusCode == http.StatusOK && op == "UpdateItem" {
		if key, status, ok := terminalUpdate(body); ok {
			t.p.settled(key, status, at)
		}
	}
	return resp, err
}

// requestBody returns the body of req without consuming it: from GetBody
// when the request has one, else by reading it and putting a copy back.
func requestBody(req *http.Request) ([]byte, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return []byte{}, req, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, req, fmt.Errorf("read request body: %w", err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, req, fmt.Errorf("read request body: %w", err)
		}
		return b, req, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, req, fmt.Errorf("read request body: %w", err)
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, req, nil
}

// responseBody reads resp's body and puts a copy back.
func responseBody(resp *http.Response) ([]byte, *http.Response, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, resp, fmt.Errorf("read response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b, resp, nil
}

// errorCode is the short error type of a DynamoDB error document
// ("ConditionalCheckFailedException"), with the cancellation reasons of a
// cancelled transaction ("TransactionCanceledException[None
// ConditionalCheckFailed]").
func errorCode(body []byte) string {
	var e struct {
		Type    string `json:"__type"`
		Reasons []struct {
			Code string `json:"Code"`
		} `json:"CancellationReasons"`
	}
	if json.Unmarshal(body, &e) != nil || e.Type == "" {
		return "unreadable error: " + truncate(string(body), 200)
	}
	code := e.Type
	if _, short, ok := strings.Cut(code, "#"); ok {
		code = short
	}
	if len(e.Reasons) > 0 {
		rs := make([]string, len(e.Reasons))
		for i, r := range e.Reasons {
			rs[i] = r.Code
		}
		code += "[" + strings.Join(rs, " ") + "]"
	}
	return code
}

// updateItem is the part of an UpdateItem request terminalUpdate reads.
type updateItem struct {
	Key                       map[string]struct{ S *string }
	UpdateExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]struct{ S *string }
}

// assignment matches "name = :value" in an update expression.
var assignment = regexp.MustCompile(`([#A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// terminalValues are the terminal statuses as they appear in a request,
// to skip parsing the requests that name none.
var terminalValues = [][]byte{[]byte(`"` + reservation.StatusCompleted + `"`), []byte(`"` + reservation.StatusFailed + `"`)}

// terminalUpdate reports whether an UpdateItem request sets an
// idempotency record's status to a terminal one, and the record's key.
func terminalUpdate(body []byte) (recordKey string, status reservation.Status, ok bool) {
	if !bytes.Contains(body, terminalValues[0]) && !bytes.Contains(body, terminalValues[1]) {
		return "", "", false
	}
	var u updateItem
	if json.Unmarshal(body, &u) != nil {
		return "", "", false
	}
	pk, found := u.Key[reservation.AttrKey]
	if !found || pk.S == nil || len(u.Key) != 1 {
		return "", "", false
	}
	set, _, _ := strings.Cut(u.UpdateExpression, " REMOVE ")
	for _, m := range assignment.FindAllStringSubmatch(set, -1) {
		name := m[1]
		if alias, isAlias := u.ExpressionAttributeNames[name]; isAlias {
			name = alias
		}
		if name != reservation.AttrStatus {
			continue
		}
		v := u.ExpressionAttributeValues[m[2]].S
		if v != nil && reservation.Status(*v).Terminal() {
			return *pk.S, reservation.Status(*v), true
		}
	}
	return "", "", false
}

// captureID names the probe's SDK middleware.
const captureID = "E2ECapture"

// addMiddleware records the functions' DynamoDB calls while a capture is
// in progress. It sits in the Finalize step before the retries, so it
// sees each operation once, serialized.
func (p *Probe) addMiddleware(s *middleware.Stack) error {
	if _, ok := s.Finalize.Get(captureID); ok {
		return nil // wired twice (Options of Options): record each call once
	}
	return s.Finalize.Add(middleware.FinalizeMiddlewareFunc(captureID,
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			rec := p.capture.Load()
			if rec == nil || awsmiddleware.GetServiceID(ctx) != "DynamoDB" {
				return next.HandleFinalize(ctx, in)
			}
			req, ok := in.Request.(*smithyhttp.Request)
			if !ok {
				return next.HandleFinalize(ctx, in)
			}
			body, err := streamBytes(req)
			if err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("e2e probe: %w", err)
			}
			out, md, err := next.HandleFinalize(ctx, in)
			if rec.wants(body) {
				by := "sdk"
				if lc, ok := lambdacontext.FromContext(ctx); ok {
					by = functionName(lc.InvokedFunctionArn)
				}
				rec.add(Op{By: by, Operation: awsmiddleware.GetOperationName(ctx), Body: body, Error: sdkErrorCode(err)})
			}
			return out, md, err
		}), middleware.Before)
}

// streamBytes reads a serialized request's body and rewinds it.
func streamBytes(req *smithyhttp.Request) ([]byte, error) {
	stream := req.GetStream()
	if stream == nil {
		return []byte{}, nil
	}
	if !req.IsStreamSeekable() {
		return nil, errors.New("the request body cannot be rewound")
	}
	b, err := io.ReadAll(stream)
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	if err := req.RewindStream(); err != nil {
		return nil, fmt.Errorf("rewind the request body: %w", err)
	}
	return b, nil
}

// sdkErrorCode names an SDK call's error as errorCode does.
func sdkErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if tce, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		rs := make([]string, len(tce.CancellationReasons))
		for i, r := range tce.CancellationReasons {
			rs[i] = aws.ToString(r.Code)
			if rs[i] == "" {
				rs[i] = "None"
			}
		}
		return tce.ErrorCode() + "[" + strings.Join(rs, " ") + "]"
	}
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		return api.ErrorCode()
	}
	return "transport: " + err.Error()
}

// functionName is the function name of a Lambda function ARN.
func functionName(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) >= 7 {
		return parts[6]
	}
	return arn
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
