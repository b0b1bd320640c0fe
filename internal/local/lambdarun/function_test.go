package lambdarun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

type valueError struct{ code int }

func (e valueError) Error() string { return fmt.Sprintf("value error %d", e.code) }

type pointerError struct{ reason string }

func (e *pointerError) Error() string { return "pointer error: " + e.reason }

type InsufficientFunds struct{}

func (*InsufficientFunds) Error() string { return "balance too low" }

// runtimeOracle returns the error document aws-lambda-go's own runtime
// produces for handler, through its (deprecated) net/rpc entry point, which
// shares lambdaErrorResponse and lambdaPanicResponse with the Runtime API loop.
func runtimeOracle(t *testing.T, handler any) *messages.InvokeResponse_Error {
	t.Helper()
	//lint:ignore SA1019 the rpc Function is the only exported way to reach the runtime's error conversion
	fn := lambda.NewFunction(lambda.NewHandler(handler))
	var resp messages.InvokeResponse
	req := &messages.InvokeRequest{
		Payload:   []byte(`{}`),
		RequestId: "oracle",
		Deadline:  messages.InvokeRequest_Timestamp{Seconds: time.Now().Add(time.Minute).Unix()},
	}
	if err := fn.Invoke(req, &resp); err != nil {
		t.Fatalf("oracle invoke: %v", err)
	}
	if resp.Error == nil {
		t.Fatalf("oracle: handler did not fail")
	}
	return resp.Error
}

func newFunction(t *testing.T, handler any) *lambdarun.Function {
	t.Helper()
	return &lambdarun.Function{Name: "fn", Timeout: 5 * time.Second, Handler: lambda.NewHandler(handler)}
}

func TestInvokeErrorTypes(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantType string
		wantMsg  string
	}{
		{"value type", valueError{code: 7}, "valueError", "value error 7"},
		{"pointer type", &pointerError{reason: "x"}, "pointerError", "pointer error: x"},
		{"domain error", &InsufficientFunds{}, "InsufficientFunds", "balance too low"},
		{"errors.New", errors.New("boom"), "errorString", "boom"},
		{"fmt.Errorf wrapping", fmt.Errorf("debit: %w", &InsufficientFunds{}), "wrapError", "debit: balance too low"},
		{"InvokeResponse_Error keeps its type",
			messages.InvokeResponse_Error{Type: "Transfer.Rejected", Message: "limit exceeded"},
			"Transfer.Rejected", "limit exceeded"},
		{"pointer InvokeResponse_Error is named by reflection",
			&messages.InvokeResponse_Error{Type: "Transfer.Rejected", Message: "limit exceeded"},
			"InvokeResponse_Error", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			handler := func(context.Context) error { return tc.err }
			res, fnErr, err := newFunction(t, handler).Invoke(context.Background(), []byte(`{}`))
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if res != nil {
				t.Errorf("result = %s, want none", res)
			}
			if fnErr == nil {
				t.Fatal("no function error")
			}
			if fnErr.Type != tc.wantType {
				t.Errorf("Type = %q, want %q", fnErr.Type, tc.wantType)
			}
			if tc.wantMsg != "" && fnErr.Message != tc.wantMsg {
				t.Errorf("Message = %q, want %q", fnErr.Message, tc.wantMsg)
			}
			oracle := runtimeOracle(t, handler)
			if fnErr.Type != oracle.Type || fnErr.Message != oracle.Message {
				t.Errorf("got (%q, %q), aws-lambda-go runtime reports (%q, %q)", fnErr.Type, fnErr.Message, oracle.Type, oracle.Message)
			}
		})
	}
}

func TestFunctionErrorJSON(t *testing.T) {
	fe := &lambdarun.FunctionError{Type: "T", Message: "m", StackTrace: []string{"a.go:1 f"}}
	b, err := json.Marshal(fe)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"errorMessage":"m","errorType":"T","stackTrace":["a.go:1 f"]}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	b, _ = json.Marshal(&lambdarun.FunctionError{Type: "T", Message: "m"})
	if want := `{"errorMessage":"m","errorType":"T"}`; string(b) != want {
		t.Errorf("JSON without stack = %s, want %s", b, want)
	}
}

func elementAt(s []int, i int) int { return s[i] }

func TestInvokePanic(t *testing.T) {
	tests := []struct {
		name      string
		handler   func(context.Context) error
		wantType  string
		wantMsg   string
		wantStack bool
	}{
		{"string", func(context.Context) error { panic("kaboom") }, "string", "kaboom", true},
		{"pointer error", func(context.Context) error { panic(&pointerError{reason: "p"}) }, "pointerError", "pointer error: p", true},
		{"runtime error", func(context.Context) error { return fmt.Errorf("%d", elementAt(nil, 3)) }, "boundsError", "runtime error: index out of range [3] with length 0", true},
		{"InvokeResponse_Error", func(context.Context) error {
			panic(messages.InvokeResponse_Error{Type: "Custom", Message: "custom panic"})
		}, "Custom", "custom panic", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn := newFunction(t, tc.handler)
			_, fnErr, err := fn.Invoke(context.Background(), nil)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if fnErr == nil {
				t.Fatal("no function error")
			}
			if fnErr.Type != tc.wantType || fnErr.Message != tc.wantMsg {
				t.Errorf("got (%q, %q), want (%q, %q)", fnErr.Type, fnErr.Message, tc.wantType, tc.wantMsg)
			}
			oracle := runtimeOracle(t, tc.handler)
			if fnErr.Type != oracle.Type || fnErr.Message != oracle.Message {
				t.Errorf("got (%q, %q), aws-lambda-go runtime reports (%q, %q)", fnErr.Type, fnErr.Message, oracle.Type, oracle.Message)
			}
			if !tc.wantStack {
				return
			}
			if len(fnErr.StackTrace) == 0 {
				t.Fatal("no stack trace")
			}
			top := fnErr.StackTrace[0]
			if !strings.Contains(top, "lambdarun/function_test.go:") || (!strings.Contains(top, "TestInvokePanic") && !strings.Contains(top, "elementAt")) {
				t.Errorf("stack trace does not start at the panic: %q", fnErr.StackTrace)
			}
			for _, fr := range fnErr.StackTrace {
				if strings.Contains(fr, "runHandler") {
					t.Errorf("stack trace shows the local runtime's own frames: %q", fnErr.StackTrace)
				}
			}
			// The process survives and the function keeps serving.
			if _, fnErr, err := fn.Invoke(context.Background(), nil); err != nil || fnErr == nil || fnErr.Type != tc.wantType {
				t.Errorf("second invoke = (%v, %v), want the same function error", fnErr, err)
			}
		})
	}
}

func TestInvokeTimeout(t *testing.T) {
	release := make(chan struct{})
	handlerDone := make(chan struct{})
	t.Cleanup(func() {
		close(release)
		<-handlerDone
	})
	var seenID atomic.Value
	var seenDeadline atomic.Value
	fn := &lambdarun.Function{
		Name:    "slow",
		Timeout: 20 * time.Millisecond,
		Handler: lambda.NewHandler(func(ctx context.Context) error {
			defer close(handlerDone)
			lc, _ := lambdacontext.FromContext(ctx)
			seenID.Store(lc.AwsRequestID)
			d, _ := ctx.Deadline()
			seenDeadline.Store(d)
			<-release // ignores ctx: Invoke must not wait for it
			return nil
		}),
	}
	start := time.Now()
	res, fnErr, err := fn.Invoke(context.Background(), []byte(`{}`))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if res != nil {
		t.Errorf("result = %s, want none", res)
	}
	if fnErr == nil || fnErr.Type != "Sandbox.Timedout" {
		t.Fatalf("function error = %v, want Sandbox.Timedout", fnErr)
	}
	msgRE := regexp.MustCompile(`^(\S+) (\S+) Task timed out after 0\.02 seconds$`)
	m := msgRE.FindStringSubmatch(fnErr.Message)
	if m == nil {
		t.Fatalf("Message = %q, want <time> <request id> Task timed out after 0.02 seconds", fnErr.Message)
	}
	if _, err := time.Parse(time.RFC3339, m[1]); err != nil || !strings.HasSuffix(m[1], "Z") {
		t.Errorf("time %q is not an RFC 3339 UTC time: %v", m[1], err)
	}
	if id, _ := seenID.Load().(string); m[2] != id || !uuidRE.MatchString(id) {
		t.Errorf("request id in message = %q, handler saw %q", m[2], id)
	}
	d, _ := seenDeadline.Load().(time.Time)
	if d.Before(start.Add(20*time.Millisecond)) || d.After(time.Now()) {
		t.Errorf("handler deadline %v is not the function timeout after the start %v", d, start)
	}
	select {
	case <-handlerDone:
		t.Error("handler finished before release: Invoke waited for it")
	default:
	}
}

func TestTimedOutEnvironmentIsDiscarded(t *testing.T) {
	release := make(chan struct{})
	blockedDone := make(chan struct{})
	var built atomic.Int32
	t.Cleanup(func() {
		close(release)
		<-blockedDone
	})
	fn := &lambdarun.Function{
		Name:    "envs",
		Timeout: 20 * time.Millisecond,
		NewHandler: func() lambda.Handler {
			built.Add(1)
			return lambda.NewHandler(func(_ context.Context, in struct{ Block bool }) (string, error) {
				if in.Block {
					defer close(blockedDone)
					<-release
				}
				return "ok", nil
			})
		},
	}
	if _, fnErr, err := fn.Invoke(context.Background(), []byte(`{"Block":true}`)); err != nil || fnErr == nil {
		t.Fatalf("blocking invoke = (%v, %v), want a timeout", fnErr, err)
	}
	for i := range 3 {
		res, fnErr, err := fn.Invoke(context.Background(), []byte(`{}`))
		if err != nil || fnErr != nil || string(res) != `"ok"` {
			t.Fatalf("invoke %d = (%s, %v, %v)", i, res, fnErr, err)
		}
	}
	// One environment for the timed-out invocation, one reused for the rest.
	if n := built.Load(); n != 2 {
		t.Errorf("built %d environments, want 2", n)
	}
}

func TestSingleEnvironmentWaitsForTimedOutHandler(t *testing.T) {
	release := make(chan struct{})
	blockedDone := make(chan struct{})
	fn := &lambdarun.Function{
		Name:    "single",
		Timeout: 20 * time.Millisecond,
		Handler: lambda.NewHandler(func(in struct{ Block bool }) (string, error) {
			if in.Block {
				defer close(blockedDone)
				<-release
			}
			return "ok", nil
		}),
	}
	if _, fnErr, err := fn.Invoke(context.Background(), []byte(`{"Block":true}`)); err != nil || fnErr == nil || fnErr.Type != lambdarun.ErrorTypeTimeout {
		t.Fatalf("blocking invoke = (%v, %v), want a timeout", fnErr, err)
	}
	// The only environment is still busy with the timed-out handler.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, fnErr, err := fn.Invoke(ctx, []byte(`{}`)); !errors.Is(err, context.DeadlineExceeded) || fnErr != nil {
		t.Fatalf("invoke while busy = (%v, %v), want context.DeadlineExceeded", fnErr, err)
	}
	close(release)
	<-blockedDone
	res, fnErr, err := fn.Invoke(context.Background(), []byte(`{}`))
	if err != nil || fnErr != nil || string(res) != `"ok"` {
		t.Errorf("invoke after the handler returned = (%s, %v, %v)", res, fnErr, err)
	}
}

type transferIn struct {
	TransferID string  `json:"transferId"`
	Amount     float64 `json:"amount"`
}

type transferOut struct {
	TransferID string `json:"transferId"`
	Status     string `json:"status"`
	RequestID  string `json:"requestId"`
	ARN        string `json:"arn"`
	Remaining  bool   `json:"deadlineInFuture"`
}

func TestInvokePayloadRoundTrip(t *testing.T) {
	handler := func(ctx context.Context, in transferIn) (transferOut, error) {
		lc, ok := lambdacontext.FromContext(ctx)
		if !ok {
			return transferOut{}, errors.New("no lambda context")
		}
		d, ok := ctx.Deadline()
		return transferOut{
			TransferID: in.TransferID,
			Status:     fmt.Sprintf("amount=%v", in.Amount),
			RequestID:  lc.AwsRequestID,
			ARN:        lc.InvokedFunctionArn,
			Remaining:  ok && time.Until(d) > 0 && time.Until(d) <= 5*time.Second,
		}, nil
	}
	fn := newFunction(t, handler)
	res, fnErr, err := fn.Invoke(context.Background(), []byte(`{"transferId":"t-1","amount":12.5,"ignored":{"x":1}}`))
	if err != nil || fnErr != nil {
		t.Fatalf("Invoke = (%v, %v)", fnErr, err)
	}
	var out transferOut
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	if out.TransferID != "t-1" || out.Status != "amount=12.5" || !out.Remaining {
		t.Errorf("result = %+v", out)
	}
	if !uuidRE.MatchString(out.RequestID) {
		t.Errorf("AwsRequestID = %q, want a UUID", out.RequestID)
	}
	if want := "arn:aws:lambda:us-east-1:123456789012:function:fn"; out.ARN != want {
		t.Errorf("InvokedFunctionArn = %q, want %q", out.ARN, want)
	}
	if strings.HasSuffix(string(res), "\n") {
		t.Errorf("result %q has the encoder's trailing newline", res)
	}
}

func TestInvokeResultsAreNotOverwritten(t *testing.T) {
	fn := newFunction(t, func(s string) (string, error) { return s, nil })
	// Repeated because the race detector makes sync.Pool drop items at random.
	for i := range 20 {
		first, _, err := fn.Invoke(context.Background(), []byte(`"AAAA"`))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := fn.Invoke(context.Background(), []byte(`"BBBB"`)); err != nil {
			t.Fatal(err)
		}
		if string(first) != `"AAAA"` {
			t.Fatalf("round %d: first result now reads %s, want \"AAAA\"", i, first)
		}
	}
}

func TestInvokeConcurrently(t *testing.T) {
	echo := func(s string) (string, error) { return s, nil }
	tests := []struct {
		name string
		fn   *lambdarun.Function
	}{
		{"single environment", &lambdarun.Function{Name: "single", Handler: lambda.NewHandler(echo)}},
		{"environment per invocation", &lambdarun.Function{Name: "many", NewHandler: func() lambda.Handler { return lambda.NewHandler(echo) }}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for i := range 32 {
				wg.Go(func() {
					want := fmt.Sprintf(`"payload-%d"`, i)
					res, fnErr, err := tc.fn.Invoke(context.Background(), []byte(want))
					if err != nil || fnErr != nil || string(res) != want {
						errs <- fmt.Errorf("invoke %d = (%s, %v, %v), want %s", i, res, fnErr, err, want)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestInvokeRequestErrors(t *testing.T) {
	echo := lambda.NewHandler(func(in json.RawMessage) (json.RawMessage, error) { return in, nil })
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		fn      *lambdarun.Function
		ctx     context.Context
		payload string
		want    error
		wantRes string
	}{
		{"invalid JSON", &lambdarun.Function{Name: "f", Handler: echo}, context.Background(), `{"a":`, lambdarun.ErrInvalidRequestContent, ""},
		{"empty payload is {}", &lambdarun.Function{Name: "f", Handler: echo}, context.Background(), ``, nil, `{}`},
		{"no handler", &lambdarun.Function{Name: "f"}, context.Background(), `{}`, lambdarun.ErrInvalidFunction, ""},
		{"bad name", &lambdarun.Function{Name: "a b", Handler: echo}, context.Background(), `{}`, lambdarun.ErrInvalidFunction, ""},
		{"timeout too long", &lambdarun.Function{Name: "f", Handler: echo, Timeout: time.Hour}, context.Background(), `{}`, lambdarun.ErrInvalidFunction, ""},
		{"ARN of another function", &lambdarun.Function{Name: "f", ARN: lambdarun.FunctionARN("eu-west-1", "111111111111", "g"), Handler: echo}, context.Background(), `{}`, lambdarun.ErrInvalidFunction, ""},
		{"canceled caller", &lambdarun.Function{Name: "f", Handler: lambda.NewHandler(func(ctx context.Context) error {
			<-ctx.Done() // runs to its own deadline, not the caller's
			return nil
		}), Timeout: 50 * time.Millisecond}, canceled, `{}`, context.Canceled, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, fnErr, err := tc.fn.Invoke(tc.ctx, []byte(tc.payload))
			if fnErr != nil {
				t.Fatalf("function error %v", fnErr)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if string(res) != tc.wantRes {
				t.Errorf("result = %s, want %s", res, tc.wantRes)
			}
		})
	}
}

func TestInvokeGoexit(t *testing.T) {
	fn := newFunction(t, func() error {
		runtime.Goexit()
		return nil
	})
	_, fnErr, err := fn.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fnErr == nil || fnErr.Type != lambdarun.ErrorTypeExit {
		t.Errorf("function error = %v, want %s", fnErr, lambdarun.ErrorTypeExit)
	}
}

// A function with reserved concurrency runs that many invocations at once
// and throttles one more at once, as Lambda does; a throttled invocation
// does not run, and a place frees when an invocation answers or times out.
func TestReservedConcurrency(t *testing.T) {
	release := make(chan struct{})
	var ran atomic.Int64
	hold := func(ctx context.Context, in string) (string, error) {
		ran.Add(1)
		if in == `hang` {
			<-release
		}
		return in, nil
	}
	two := 2
	fn := &lambdarun.Function{Name: "reserved", Reserved: &two, Timeout: time.Second,
		NewHandler: func() lambda.Handler { return lambda.NewHandler(hold) }}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { fn.Invoke(context.Background(), []byte(`"hang"`)) })
	}
	for ran.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	_, fnErr, err := fn.Invoke(context.Background(), []byte(`"more"`))
	var se *lambdarun.ServiceError
	if !errors.As(err, &se) || se.Type != lambdarun.ErrorTypeTooManyRequests || fnErr != nil {
		t.Fatalf("third invocation = (%v, %v), want %s", fnErr, err, lambdarun.ErrorTypeTooManyRequests)
	}
	if n := ran.Load(); n != 2 {
		t.Errorf("%d invocations ran, want the 2 held", n)
	}
	// Both held invocations time out after 1 s: their places free.
	wg.Wait()
	if res, fnErr, err := fn.Invoke(context.Background(), []byte(`"after"`)); err != nil || fnErr != nil || string(res) != `"after"` {
		t.Errorf("after the timeouts: (%s, %v, %v), want it served", res, fnErr, err)
	}
	close(release)

	zero := 0
	off := &lambdarun.Function{Name: "off", Reserved: &zero, Handler: lambda.NewHandler(hold)}
	if _, _, err := off.Invoke(context.Background(), []byte(`"x"`)); !errors.As(err, &se) {
		t.Errorf("reserved 0: err = %v, want throttled", err)
	}
}
