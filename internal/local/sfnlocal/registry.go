package sfnlocal

import (
	"context"
	"errors"
	"fmt"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// Registry adapts a local Lambda registry to LambdaInvoker: an unknown
// function wraps ErrFunctionNotFound, a *lambdarun.ServiceError becomes a
// *ServiceError of the same name, and a function error keeps its type,
// message and stack trace.
func Registry(r *lambdarun.Registry) LambdaInvoker { return registryInvoker{r} }

type registryInvoker struct{ r *lambdarun.Registry }

func (l registryInvoker) InvokeFunction(ctx context.Context, name string, payload []byte) ([]byte, *FunctionError, error) {
	out, fnErr, err := l.r.InvokeFunction(ctx, name, payload)
	switch {
	case errors.Is(err, lambdarun.ErrFunctionNotFound):
		return nil, nil, fmt.Errorf("%w: %v", ErrFunctionNotFound, err)
	case err != nil:
		if se, ok := errors.AsType[*lambdarun.ServiceError](err); ok {
			return nil, nil, &ServiceError{Name: se.Type, Message: se.Message}
		}
		return nil, nil, err
	case fnErr != nil:
		return nil, &FunctionError{Type: fnErr.Type, Message: fnErr.Message, StackTrace: fnErr.StackTrace}, nil
	}
	return out, nil, nil
}
