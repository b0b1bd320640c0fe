package fault

import (
	"context"
	"fmt"
	"net"
	"syscall"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// When places a fault relative to the request reaching the service.
type When int

const (
	// Before fails without sending: the service never sees the request.
	Before When = iota
	// After sends the request, lets the service act on it and read its
	// answer, then fails: the caller cannot know the call took effect.
	After
)

// SDKFault is a fault applied to the AWS SDK calls of clients built from an
// aws.Config whose APIOptions include Injector.APIOptions.
//
// The fault sits in the Finalize step right after the SDK's retry
// middleware, so every attempt passes through it: the retryer retries a
// retryable error (the default Err is one) up to the client's attempts
// (3 by default), and each retry consumes the fault again. A test that
// wants the caller to see the failure sets Times above the attempts, or
// Times 0, or passes a non-retryable Err. Note that the SDK's retry quota
// also limits retries of connection errors.
type SDKFault struct {
	// Service is the SDK's ServiceID: "DynamoDB" or "SFN".
	Service string
	// Operation is the API operation ("StartExecution", "PutItem",
	// "TransactWriteItems", ...); "" is any.
	Operation string
	When      When
	// Times and Prob: as in LambdaFault.
	Times int
	Prob  float64
	// Err is the error the call fails with. nil is a connection reset (a
	// *net.OpError), which the SDK retries. A test may pass a service
	// error, such as &smithy.GenericAPIError{Code: "ThrottlingException"}.
	Err error
	// Match, when set, filters calls by their input (*dynamodb.PutItemInput,
	// *sfn.StartExecutionInput, ...).
	Match func(input any) bool
}

// SDK arms an SDK fault.
func (in *Injector) SDK(f SDKFault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sdks = append(in.sdks, &armed[SDKFault]{f: f, times: f.Times, prob: f.Prob})
}

// Middleware IDs.
const (
	captureInputID = "FaultCaptureInput"
	sdkFaultID     = "FaultInjection"
	retryID        = "Retry" // the SDK's retry middleware in the Finalize step
)

// APIOptions returns the middleware that applies the SDK faults, to append
// to aws.Config.APIOptions before clients are built from it.
func (in *Injector) APIOptions() []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{func(s *middleware.Stack) error {
		if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc(captureInputID, captureInput), middleware.Before); err != nil {
			return fmt.Errorf("fault: add %s: %w", captureInputID, err)
		}
		mw := middleware.FinalizeMiddlewareFunc(sdkFaultID, in.finalize)
		if _, ok := s.Finalize.Get(retryID); ok {
			return s.Finalize.Insert(mw, retryID, middleware.After)
		}
		return s.Finalize.Add(mw, middleware.After)
	}}
}

type inputKey struct{}

// captureInput keeps the operation input for the Finalize step, where only
// the serialized request is left.
func captureInput(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	return next.HandleInitialize(middleware.WithStackValue(ctx, inputKey{}, in.Parameters), in)
}

func (in *Injector) finalize(ctx context.Context, fin middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	input := middleware.GetStackValue(ctx, inputKey{})
	in.mu.Lock()
	f, ok := take(in, &in.sdks, func(f SDKFault) bool {
		return f.Service == service && (f.Operation == "" || f.Operation == op) && (f.Match == nil || f.Match(input))
	})
	name := CountSDKBefore
	if f.When == After {
		name = CountSDKAfter
	}
	if ok {
		in.counts[name]++
	}
	in.mu.Unlock()
	if !ok {
		return next.HandleFinalize(ctx, fin)
	}
	err := f.Err
	if err == nil {
		err = connectionReset(fmt.Sprintf("%s %s.%s", name, service, op))
	}
	if f.When == After {
		out, md, sendErr := next.HandleFinalize(ctx, fin)
		if sendErr != nil {
			return out, md, sendErr
		}
		return middleware.FinalizeOutput{}, md, err
	}
	return middleware.FinalizeOutput{}, middleware.Metadata{}, err
}

// connectionReset is the connection error of a fault without its own
// error: "read tcp: ...: connection reset by peer", retryable by the SDK.
func connectionReset(what string) error {
	return &net.OpError{Op: "read", Net: "tcp", Err: fmt.Errorf("%w (%s): %w", errInjected, what, syscall.ECONNRESET)}
}
