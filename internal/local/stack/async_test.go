package stack

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// flaky is a function that fails its first n invocations.
type flaky struct {
	n     int64
	calls atomic.Int64
}

func (f *flaky) handler() lambda.Handler {
	return lambda.NewHandler(func() error {
		if f.calls.Add(1) <= f.n {
			return errors.New("not yet")
		}
		return nil
	})
}

// TestAsyncInvoker checks Lambda's asynchronous invocation semantics: the
// event is accepted at once, a failure is retried up to the configured
// attempts, and after the last one the event goes to the on-failure
// destination.
func TestAsyncInvoker(t *testing.T) {
	tests := []struct {
		name         string
		failures     int64
		config       *cfn.EventInvokeConfig
		wantCalls    int64
		wantFailures int // on-failure records
	}{
		{"succeeds at once", 0, nil, 1, 0},
		{"default: two retries suffice", 2, nil, 3, 0},
		{"default: three failures go to no destination", 5, nil, 3, 1},
		{"configured destination", 5, &cfn.EventInvokeConfig{MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600,
			OnFailure: &cfn.Destination{Type: "SQS", Destination: "arn:aws:sqs:us-east-1:123456789012:Failures"}}, 3, 1},
		{"no retries", 1, &cfn.EventInvokeConfig{MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 3600}, 1, 1},
		{"one retry", 1, &cfn.EventInvokeConfig{MaximumRetryAttempts: 1, MaximumEventAgeInSeconds: 3600}, 2, 0},
		{"event too old for the first retry's minute", 5, &cfn.EventInvokeConfig{MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60}, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn := &flaky{n: tc.failures}
			reg := &lambdarun.Registry{}
			if err := reg.Register(&lambdarun.Function{Name: "Fn", Handler: fn.handler()}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var failed []FailedInvocation
			// Scale 0.0001: the 1 and 2 minute waits take 6 and 12 ms.
			a := newAsyncInvoker(reg, 0.0001, slog.New(slog.DiscardHandler), func(f FailedInvocation) {
				mu.Lock()
				defer mu.Unlock()
				failed = append(failed, f)
			})
			target := functionTarget{async: a, name: "Fn", rule: "R", cfg: newAsyncConfig(tc.config)}
			if err := target.Deliver(context.Background(), []byte(`{"id":"e"}`)); err != nil {
				t.Fatalf("Deliver: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := fn.calls.Load(); got != tc.wantCalls {
				t.Errorf("%d invocations, want %d", got, tc.wantCalls)
			}
			if len(failed) != tc.wantFailures {
				t.Fatalf("on-failure records %+v, want %d", failed, tc.wantFailures)
			}
			if tc.wantFailures == 1 {
				f := failed[0]
				wantDest := ""
				if tc.config != nil && tc.config.OnFailure != nil {
					wantDest = tc.config.OnFailure.Destination
				}
				if f.Kind != FailedOnFailure || f.Function != "Fn" || f.Rule != "R" || f.Destination != wantDest ||
					f.Attempts != int(tc.wantCalls) || string(f.Event) != `{"id":"e"}` || f.Err == nil {
					t.Errorf("record %+v", f)
				}
			}
		})
	}

	t.Run("unknown function is a failed delivery", func(t *testing.T) {
		a := newAsyncInvoker(&lambdarun.Registry{}, 1, slog.New(slog.DiscardHandler), func(FailedInvocation) {})
		err := functionTarget{async: a, name: "Nope"}.Deliver(context.Background(), []byte(`{}`))
		if !errors.Is(err, lambdarun.ErrFunctionNotFound) {
			t.Errorf("err = %v, want ErrFunctionNotFound", err)
		}
	})

	t.Run("closed refuses events", func(t *testing.T) {
		reg := &lambdarun.Registry{}
		if err := reg.Register(&lambdarun.Function{Name: "Fn", Handler: (&flaky{}).handler()}); err != nil {
			t.Fatal(err)
		}
		a := newAsyncInvoker(reg, 1, slog.New(slog.DiscardHandler), func(FailedInvocation) {})
		if err := a.close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := (functionTarget{async: a, name: "Fn"}).Deliver(context.Background(), []byte(`{}`)); !errors.Is(err, errAsyncClosed) {
			t.Errorf("err = %v, want errAsyncClosed", err)
		}
	})
}

// An asynchronous event whose invocation is throttled (the function's
// reserved concurrency is in use) waits in the queue and runs once a
// place frees, however many times it was throttled: throttles are not
// attempts, as in Lambda.
func TestAsyncInvokerWaitsOutThrottles(t *testing.T) {
	release, holding := make(chan struct{}), make(chan struct{})
	var events atomic.Int64
	one := 1
	reg := &lambdarun.Registry{}
	if err := reg.Register(&lambdarun.Function{Name: "Fn", Reserved: &one, Timeout: time.Minute,
		NewHandler: func() lambda.Handler {
			return lambda.NewHandler(func(in struct{ Hold bool }) error {
				if in.Hold {
					close(holding)
					<-release
					return nil
				}
				events.Add(1)
				return nil
			})
		}}); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		_, _, err := reg.InvokeFunction(context.Background(), "Fn", []byte(`{"Hold":true}`))
		held <- err
	}()
	// The held invocation takes the one place (nothing else invokes the
	// function yet); the async event is throttled until it is released.
	select {
	case <-holding:
	case err := <-held:
		t.Fatalf("the held invocation ended before it held its place: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the held invocation did not start")
	}
	var se *lambdarun.ServiceError
	if _, _, err := reg.InvokeFunction(context.Background(), "Fn", []byte(`{"Hold":false}`)); !errors.As(err, &se) || se.Type != lambdarun.ErrorTypeTooManyRequests {
		t.Fatalf("an invocation while the place is held: %v, want it throttled", err)
	}
	var failed []FailedInvocation
	a := newAsyncInvoker(reg, 0.001, slog.New(slog.DiscardHandler), func(f FailedInvocation) { failed = append(failed, f) })
	target := functionTarget{async: a, name: "Fn", rule: "R", cfg: newAsyncConfig(&cfn.EventInvokeConfig{MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 3600})}
	if err := target.Deliver(context.Background(), []byte(`{"Hold":false}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // about 50 throttled tries at the scaled 1 ms
	if n := events.Load(); n != 0 {
		t.Fatalf("the event ran %d times while the place was held", n)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the held invocation: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := events.Load(); n != 1 || len(failed) != 0 {
		t.Errorf("the event ran %d times, %d failures; want once, none", n, len(failed))
	}
}
