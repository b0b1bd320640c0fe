package lambdarun_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// arnEcho answers with the function ARN the invocation was made with.
func arnEcho(tag string) lambda.Handler {
	return lambda.NewHandler(func(ctx context.Context) (map[string]string, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		return map[string]string{"fn": tag, "arn": lc.InvokedFunctionArn}, nil
	})
}

func newRegistry(t *testing.T) *lambdarun.Registry {
	t.Helper()
	var r lambdarun.Registry
	err := r.Register(
		&lambdarun.Function{Name: "orchestrator", ARN: "arn:aws:lambda:eu-west-1:111122223333:function:orchestrator", Timeout: time.Second, Handler: arnEcho("orchestrator")},
		&lambdarun.Function{Name: "reaper", Handler: arnEcho("reaper")},
	)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	return &r
}

func TestRegistryInvokeFunction(t *testing.T) {
	const orchARN = "arn:aws:lambda:eu-west-1:111122223333:function:orchestrator"
	const reaperARN = "arn:aws:lambda:us-east-1:123456789012:function:reaper"
	tests := []struct {
		name    string
		ref     string
		wantFn  string
		wantARN string
	}{
		{"name", "orchestrator", "orchestrator", orchARN},
		{"name with $LATEST", "orchestrator:$LATEST", "orchestrator", orchARN + ":$LATEST"},
		{"name with alias", "orchestrator:live", "orchestrator", orchARN + ":live"},
		{"full ARN", orchARN, "orchestrator", orchARN},
		{"full ARN with version", orchARN + ":7", "orchestrator", orchARN + ":7"},
		{"partial ARN", "111122223333:function:orchestrator", "orchestrator", orchARN},
		{"partial ARN with alias", "111122223333:function:orchestrator:live", "orchestrator", orchARN + ":live"},
		{"default ARN", reaperARN, "reaper", reaperARN},
		{"unknown name", "ledger", "", ""},
		{"ARN in another region", "arn:aws:lambda:us-east-1:111122223333:function:orchestrator", "", ""},
		{"partial ARN of another account", "999999999999:function:orchestrator", "", ""},
		{"empty qualifier", "orchestrator:", "", ""},
		{"ARN of another service", "arn:aws:states:eu-west-1:111122223333:stateMachine:orchestrator", "", ""},
		{"truncated ARN", "arn:aws:lambda:eu-west-1:111122223333:function", "", ""},
		{"empty", "", "", ""},
	}
	r := newRegistry(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, fnErr, err := r.InvokeFunction(context.Background(), tc.ref, []byte(`{}`))
			if tc.wantFn == "" {
				if !errors.Is(err, lambdarun.ErrFunctionNotFound) {
					t.Fatalf("err = %v, want ErrFunctionNotFound", err)
				}
				var nf *lambdarun.NotFoundError
				if !errors.As(err, &nf) || nf.Ref != tc.ref {
					t.Errorf("err = %#v, want *NotFoundError for %q", err, tc.ref)
				}
				if _, lerr := r.Lookup(tc.ref); !errors.Is(lerr, lambdarun.ErrFunctionNotFound) {
					t.Errorf("Lookup err = %v, want ErrFunctionNotFound", lerr)
				}
				return
			}
			if err != nil || fnErr != nil {
				t.Fatalf("InvokeFunction = (%v, %v)", fnErr, err)
			}
			want := `{"arn":"` + tc.wantARN + `","fn":"` + tc.wantFn + `"}`
			if string(res) != want {
				t.Errorf("result = %s, want %s", res, want)
			}
			f, err := r.Lookup(tc.ref)
			if err != nil || f.Name != tc.wantFn {
				t.Errorf("Lookup = (%v, %v), want %s", f, err, tc.wantFn)
			}
		})
	}
}

func TestRegistryRegisterErrors(t *testing.T) {
	h := arnEcho("x")
	tests := []struct {
		name string
		fns  []*lambdarun.Function
		want error
	}{
		{"duplicate name", []*lambdarun.Function{{Name: "orchestrator", Handler: h}}, lambdarun.ErrDuplicateFunction},
		{"duplicate in one call", []*lambdarun.Function{{Name: "a", Handler: h}, {Name: "a", Handler: h}}, lambdarun.ErrDuplicateFunction},
		{"qualified ARN", []*lambdarun.Function{{Name: "b", ARN: lambdarun.FunctionARN("us-east-1", "1", "b") + ":live", Handler: h}}, lambdarun.ErrInvalidFunction},
		{"nil function", []*lambdarun.Function{nil}, lambdarun.ErrInvalidFunction},
		{"no handler", []*lambdarun.Function{{Name: "c"}}, lambdarun.ErrInvalidFunction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			if err := r.Register(tc.fns...); !errors.Is(err, tc.want) {
				t.Fatalf("Register err = %v, want %v", err, tc.want)
			}
			// Nothing of a failed call is registered.
			if _, err := r.Lookup("a"); !errors.Is(err, lambdarun.ErrFunctionNotFound) {
				t.Errorf("Lookup(a) err = %v, want not found", err)
			}
		})
	}
}

// TestRegistryInterceptor checks that every invocation passes through the
// interceptor with the registered name, whatever the reference, and that
// next runs the real invocation with the qualified ARN.
func TestRegistryInterceptor(t *testing.T) {
	const orchARN = "arn:aws:lambda:eu-west-1:111122223333:function:orchestrator"
	tests := []struct {
		name     string
		ref      string
		callNext bool
		wantFn   string
		wantOut  string
	}{
		{"name, passed through", "orchestrator", true, "orchestrator", `{"arn":"` + orchARN + `","fn":"orchestrator"}`},
		{"qualified ARN, passed through", orchARN + ":live", true, "orchestrator", `{"arn":"` + orchARN + `:live","fn":"orchestrator"}`},
		{"answered by the interceptor", "reaper", false, "reaper", `"intercepted"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegistry(t)
			var seen string
			r.SetInterceptor(func(ctx context.Context, function string, payload []byte, next lambdarun.Invoke) ([]byte, *lambdarun.FunctionError, error) {
				seen = function
				if tt.callNext {
					return next(ctx, payload)
				}
				return []byte(`"intercepted"`), nil, nil
			})
			out, fnErr, err := r.InvokeFunction(context.Background(), tt.ref, []byte(`{}`))
			if err != nil || fnErr != nil {
				t.Fatalf("InvokeFunction: %v %v", fnErr, err)
			}
			if seen != tt.wantFn {
				t.Errorf("interceptor saw %q, want %q", seen, tt.wantFn)
			}
			if string(out) != tt.wantOut {
				t.Errorf("result %s, want %s", out, tt.wantOut)
			}
		})
	}

	t.Run("removed", func(t *testing.T) {
		r := newRegistry(t)
		called := false
		r.SetInterceptor(func(ctx context.Context, _ string, payload []byte, next lambdarun.Invoke) ([]byte, *lambdarun.FunctionError, error) {
			called = true
			return next(ctx, payload)
		})
		r.SetInterceptor(nil)
		if _, _, err := r.InvokeFunction(context.Background(), "reaper", nil); err != nil {
			t.Fatal(err)
		}
		if called {
			t.Error("a removed interceptor was called")
		}
	})
}
