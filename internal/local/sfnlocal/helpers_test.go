package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/local/ddbtest"
)

// TestMain gives the dynamodb:* integration tests a DynamoDB Local.
func TestMain(m *testing.M) { ddbtest.Main(m) }

// testTimeout bounds every wait in the tests; nothing waits for real
// intervals, so reaching it means a hang.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Definitions used across the tests.
const (
	// passMachine succeeds at once with its input plus a marker.
	passMachine = `{
  "StartAt": "Mark",
  "States": {
    "Mark": {"Type": "Pass", "Result": "marked", "ResultPath": "$.mark", "End": true}
  }
}`

	// failMachine fails at once with a fixed error and cause.
	failMachine = `{
  "StartAt": "Reject",
  "States": {
    "Reject": {"Type": "Fail", "Error": "Transfer.Rejected", "Cause": "limit exceeded"}
  }
}`

	// blockMachine calls the "block" function, which returns only when the
	// test releases it (or its context ends).
	blockMachine = `{
  "StartAt": "Block",
  "States": {
    "Block": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "block", "Payload.$": "$"},
      "ResultPath": "$.block",
      "End": true
    }
  }
}`

	// timeoutMachine blocks in a task beyond the machine's TimeoutSeconds.
	timeoutMachine = `{
  "StartAt": "Block",
  "TimeoutSeconds": 1,
  "States": {
    "Block": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "block", "Payload.$": "$"},
      "End": true
    }
  }
}`

	// transferMachine is the end-to-end sample: Pass -> lambda:invoke ->
	// Choice -> Succeed / Fail.
	transferMachine = `{
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Result": {"channel": "api"}, "ResultPath": "$.meta", "Next": "Debit"},
    "Debit": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:debit", "Payload.$": "$"},
      "ResultPath": "$.debit",
      "Next": "Approved?"
    },
    "Approved?": {
      "Type": "Choice",
      "Choices": [{"Variable": "$.debit.Payload.status", "StringEquals": "APPROVED", "Next": "Done"}],
      "Default": "Rejected"
    },
    "Done": {"Type": "Succeed"},
    "Rejected": {"Type": "Fail", "Error": "Transfer.Rejected", "Cause": "debit was not approved"}
  }
}`
)

// lambdaHandler is a fake function.
type lambdaHandler func(ctx context.Context, payload []byte) ([]byte, *FunctionError, error)

// lambdaCall records one invocation of the fake runtime.
type lambdaCall struct {
	Function string
	Payload  string
}

// fakeLambda is an in-memory LambdaInvoker: unknown functions report
// ErrFunctionNotFound.
type fakeLambda struct {
	mu       sync.Mutex
	handlers map[string]lambdaHandler
	calls    []lambdaCall
}

func newFakeLambda() *fakeLambda { return &fakeLambda{handlers: map[string]lambdaHandler{}} }

func (f *fakeLambda) handle(name string, h lambdaHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[name] = h
}

func (f *fakeLambda) InvokeFunction(ctx context.Context, name string, payload []byte) ([]byte, *FunctionError, error) {
	f.mu.Lock()
	f.calls = append(f.calls, lambdaCall{Function: name, Payload: string(payload)})
	h, ok := f.handlers[name]
	f.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("invoke %s: %w", name, ErrFunctionNotFound)
	}
	return h(ctx, payload)
}

func (f *fakeLambda) recorded() []lambdaCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]lambdaCall(nil), f.calls...)
}

// blocker is a fake function that signals each call on started and returns
// once released (echoing its payload) or its context ends.
type blocker struct {
	started chan string // receives each call's payload
	release chan struct{}
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 16), release: make(chan struct{})}
}

func (b *blocker) handler(ctx context.Context, payload []byte) ([]byte, *FunctionError, error) {
	b.started <- string(payload)
	select {
	case <-b.release:
		return []byte(`{"released":true}`), nil, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// awaitStart waits until the blocked function has been called.
func (b *blocker) awaitStart(t *testing.T) string {
	t.Helper()
	select {
	case p := <-b.started:
		return p
	case <-time.After(testTimeout):
		t.Fatal("the blocking function was never called")
		return ""
	}
}

func (b *blocker) unblock() { b.once.Do(func() { close(b.release) }) }

// recordingPublisher records published events.
type recordingPublisher struct {
	mu     sync.Mutex
	events [][]byte
	err    error // returned by Publish when set
}

func (p *recordingPublisher) Publish(_ context.Context, event []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, append([]byte(nil), event...))
	return p.err
}

// eventsFor returns the decoded events about executionARN, in publishing
// order.
func (p *recordingPublisher) eventsFor(t *testing.T, executionARN string) []map[string]any {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, raw := range p.events {
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("published event is not JSON: %v: %s", err, raw)
		}
		if detail, ok := ev["detail"].(map[string]any); ok && detail["executionArn"] == executionARN {
			out = append(out, ev)
		}
	}
	return out
}

// testEnv is a Server behind an httptest server with an SDK client.
type testEnv struct {
	srv     *Server
	client  *sfn.Client
	url     string
	lambda  *fakeLambda
	pub     *recordingPublisher
	blocker *blocker
}

// newTestEnv starts a server with the named state machines (name ->
// definition), a fake Lambda runtime whose "block" function is env.blocker,
// and a recording publisher. configure, when set, adjusts the Config.
func newTestEnv(t *testing.T, machines map[string]string, configure func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{lambda: newFakeLambda(), pub: &recordingPublisher{}, blocker: newBlocker()}
	env.lambda.handle("block", env.blocker.handler)
	cfg := Config{Lambda: env.lambda, Publisher: env.pub, Logger: quietLogger(), TimeScale: 0.001}
	if configure != nil {
		configure(&cfg)
	}
	env.srv = New(cfg)
	for name, def := range machines {
		if err := env.srv.AddStateMachine(StateMachine{Name: name, Definition: []byte(def), FileName: "statemachine/" + name + ".asl.json"}); err != nil {
			t.Fatalf("add state machine %s: %v", name, err)
		}
	}
	ts := httptest.NewServer(env.srv)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		env.blocker.unblock()
		if err := env.srv.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
	})
	env.url = ts.URL
	env.client = newSFNClient(ts.URL)
	return env
}

// newSFNClient returns an unmodified SDK client for endpoint, with static
// credentials and the SDK's default retries (which cover net/http's rare
// closed-connection race on a reused connection, aws/aws-sdk-go-v2#2737;
// none of the errors the tests expect is retryable).
func newSFNClient(endpoint string, optFns ...func(*sfn.Options)) *sfn.Client {
	return sfn.New(sfn.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
	}, optFns...)
}

// noRetries makes a client report the first failure, for calls that are
// meant to fail retryably (a closed endpoint, ServiceUnavailable).
func noRetries(o *sfn.Options) { o.RetryMaxAttempts = 1 }

func (env *testEnv) smARN(name string) string { return env.srv.StateMachineARN(name) }

// start starts an execution through the SDK and fails the test on error.
func (env *testEnv) start(t *testing.T, machine, name, input string) string {
	t.Helper()
	in := &sfn.StartExecutionInput{StateMachineArn: aws.String(env.smARN(machine))}
	if name != "" {
		in.Name = aws.String(name)
	}
	if input != "" {
		in.Input = aws.String(input)
	}
	out, err := env.client.StartExecution(testContext(t), in)
	if err != nil {
		t.Fatalf("start execution %s on %s: %v", name, machine, err)
	}
	return aws.ToString(out.ExecutionArn)
}

// wait waits for an execution to finish.
func (env *testEnv) wait(t *testing.T, executionARN string) ExecutionInfo {
	t.Helper()
	info, err := env.srv.Wait(testContext(t), executionARN)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return info
}

// errorAs reports whether err wraps an error of type T.
func errorAs[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// assertJSONEqual compares two JSON documents semantically.
func assertJSONEqual(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("%s: not JSON: %v: %s", what, err, got)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}
