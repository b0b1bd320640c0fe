package idempotency

import (
	"context"
	"errors"
	"fmt"
)

// DoOptionalKey is Do for an operation whose key may be missing: when it
// is (op.Key and op.KeyFunc both unset, KeyFunc answering "", or an error
// that matches ErrKeyMissing, as a keypath selection of nothing does),
// fn runs directly, without idempotency, costing no call to the store:
// Powertools' default, raise_on_no_idempotency_key=False. Do instead
// refuses such a call with ErrKeyMissing. Any other error of KeyFunc is
// returned, and fn does not run; a key that is present goes through Do,
// KeyFunc having run once.
func DoOptionalKey[In, Out any](ctx context.Context, i *Idempotency, op Operation[In], in In, fn func(context.Context, In) (Out, error)) (Result[Out], error) {
	if op.KeyFunc != nil {
		if op.Key != "" {
			return Result[Out]{}, errors.New("idempotency: Operation.Key and KeyFunc are both set")
		}
		key, err := op.KeyFunc(in)
		switch {
		case errors.Is(err, ErrKeyMissing):
			key = ""
		case err != nil:
			return Result[Out]{}, fmt.Errorf("idempotency: key: %w", err)
		}
		op.Key, op.KeyFunc = key, nil
	}
	if op.Key == "" {
		out, err := fn(ctx, in)
		return Result[Out]{Output: out}, err
	}
	return Do(ctx, i, op, in, fn)
}

// WrapOptionalKey is Wrap with DoOptionalKey: a call without a key runs
// fn directly.
func WrapOptionalKey[In, Out any](i *Idempotency, op Operation[In], fn func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		res, err := DoOptionalKey(ctx, i, op, in, fn)
		return res.Output, err
	}
}
