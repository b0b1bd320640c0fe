package sfnlocal

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// TestRegistry checks how the adapter reports each outcome of a registry
// invocation to the lambda:invoke integration.
func TestRegistry(t *testing.T) {
	var reg lambdarun.Registry
	if err := reg.Register(
		&lambdarun.Function{Name: "ok", Handler: lambda.NewHandler(func() (string, error) { return "done", nil })},
		&lambdarun.Function{Name: "fails", Handler: lambda.NewHandler(func() error { return errors.New("boom") })},
		&lambdarun.Function{Name: "throttled", Handler: lambda.NewHandler(func() error { return nil })},
	); err != nil {
		t.Fatal(err)
	}
	reg.SetInterceptor(func(ctx context.Context, fn string, payload []byte, next lambdarun.Invoke) ([]byte, *lambdarun.FunctionError, error) {
		if fn == "throttled" {
			return nil, nil, &lambdarun.ServiceError{Type: "Lambda.TooManyRequestsException", Message: "Rate Exceeded."}
		}
		return next(ctx, payload)
	})
	inv := Registry(&reg)
	tests := []struct {
		name      string
		fn        string
		wantOut   string
		wantFnErr *FunctionError
		wantErr   func(error) bool
	}{
		{"result", "ok", `"done"`, nil, nil},
		{"function error", "fails", "", &FunctionError{Type: "errorString", Message: "boom"}, nil},
		{"unknown function", "nope", "", nil, func(err error) bool { return errors.Is(err, ErrFunctionNotFound) }},
		{"service error", "throttled", "", nil, func(err error) bool {
			se, ok := errors.AsType[*ServiceError](err)
			return ok && se.Name == "Lambda.TooManyRequestsException" && se.Message == "Rate Exceeded."
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, fnErr, err := inv.InvokeFunction(context.Background(), tc.fn, []byte(`{}`))
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.wantOut || !reflect.DeepEqual(fnErr, tc.wantFnErr) {
				t.Errorf("got %s, %+v; want %s, %+v", out, fnErr, tc.wantOut, tc.wantFnErr)
			}
		})
	}
}
