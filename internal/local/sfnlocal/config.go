// Package sfnlocal is a local AWS Step Functions endpoint for Standard
// workflows. It speaks the Step Functions JSON protocol (awsJson1_0), so the
// unmodified aws-sdk-go-v2 sfn client works against it, runs executions with
// the asl engine, performs the lambda:invoke and dynamodb:* service
// integrations this project uses, and publishes "Step Functions Execution
// Status Change" events the way AWS sends them to EventBridge.
//
// Typical wiring:
//
//	srv := sfnlocal.New(sfnlocal.Config{Lambda: runtime, Publisher: bus, DynamoDB: ddb})
//	err := srv.AddStateMachine(sfnlocal.StateMachine{Name: "Transfer", Definition: def, FileName: path})
//	endpoint, err := srv.Listen("") // then AWS_ENDPOINT_URL_SFN=endpoint
//	defer srv.Close()
package sfnlocal

import (
	"context"
	"errors"
	"github.com/aws/aws-sdk-go-v2/aws"
	"log/slog"
	"net/http"
	"time"
)

// Defaults used when Config leaves a field empty.
const (
	DefaultRegion    = "us-east-1"
	DefaultAccountID = "123456789012"
)

// Config configures a Server.
type Config struct {
	// Region and AccountID appear in every ARN and event. Defaults:
	// DefaultRegion, DefaultAccountID.
	Region    string
	AccountID string

	// DynamoDB is where the dynamodb:* integrations send their requests.
	DynamoDB DynamoDBConfig

	// Lambda runs the functions lambda:invoke tasks name. Executions that
	// reach a lambda:invoke task fail with Lambda.ServiceException when nil.
	Lambda LambdaInvoker

	// Publisher receives the execution status change events. Optional.
	Publisher Publisher

	// RoleCredentials, when set, gives the credentials a state machine's
	// role signs its DynamoDB requests with, so that the endpoint can tell
	// which role calls; nil signs every request with DynamoDB's static
	// credentials.
	RoleCredentials func(roleARN string) aws.Credentials

	// AuthorizeInvoke, when set, is asked before each lambda:invoke task
	// whether the state machine's role may invoke the function (its ARN,
	// qualified as the task names it). A refusal fails the task as
	// Lambda's AccessDeniedException does, with Lambda.AWSLambdaException
	// and the error's text in the cause.
	AuthorizeInvoke func(ctx context.Context, roleARN, functionARN string) error

	// TimeScale multiplies every duration a definition names (retry
	// intervals, task and machine timeouts). 0 means 1.
	TimeScale float64

	// JitterSeed seeds the random waits of retriers with JitterStrategy
	// FULL: each state machine draws from its own source seeded with
	// JitterSeed and its position among the machines added. 0 seeds from
	// the process's random source.
	JitterSeed uint64

	// Logger receives operational logs. Default: slog.Default().
	Logger *slog.Logger

	// Now is the clock for dates and timestamps. Default: time.Now.
	Now func() time.Time
}

// DynamoDBConfig locates and authenticates the DynamoDB endpoint.
type DynamoDBConfig struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:8000.
	Endpoint string
	// Static credentials used to sign requests with Signature Version 4.
	// DynamoDB Local accepts any non-empty values; defaults are "local".
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// HTTPClient sends the requests. Default: a client without timeout (the
	// task's context bounds each call) that keeps as many idle connections
	// to the endpoint as there are requests in flight, so concurrent
	// executions reuse them.
	HTTPClient *http.Client
}

// LambdaInvoker invokes a function synchronously (RequestResponse).
// The local Lambda runtime implements it.
type LambdaInvoker interface {
	// InvokeFunction runs functionName (the bare function name, without
	// ARN or qualifier) with payload. result is the function's JSON result.
	// fnErr reports an error returned or raised by the function itself
	// (Lambda's "FunctionError"). err reports an invocation failure: wrap
	// ErrFunctionNotFound for an unknown function; a *ServiceError names
	// the Lambda exception; anything else is Lambda.ServiceException.
	InvokeFunction(ctx context.Context, functionName string, payload []byte) (result []byte, fnErr *FunctionError, err error)
}

// FunctionError is an error reported by a function, as Lambda serialises it
// in the response payload.
type FunctionError struct {
	Type       string   // errorType, e.g. "InsufficientFunds"
	Message    string   // errorMessage
	StackTrace []string // stackTrace, optional
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// ServiceError is an invocation failure of the Lambda service with a
// name, such as "Lambda.TooManyRequestsException"; the task fails with
// that name.
type ServiceError struct {
	Name    string
	Message string
}

func (e *ServiceError) Error() string { return e.Name + ": " + e.Message }

// ErrFunctionNotFound is wrapped by LambdaInvoker errors for functions that
// do not exist.
var ErrFunctionNotFound = errors.New("function not found")

// Publisher delivers an EventBridge event (the full event envelope as JSON).
// The local event bus implements it.
type Publisher interface {
	Publish(ctx context.Context, event []byte) error
}

// defaultTransport is the transport of the default DynamoDB client:
// http.DefaultTransport's settings, without its limit of two idle
// connections per host, beyond which every concurrent request opens and
// closes a connection.
var defaultTransport = func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 1024
	return tr
}()

func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.AccountID == "" {
		c.AccountID = DefaultAccountID
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.DynamoDB.AccessKeyID == "" {
		c.DynamoDB.AccessKeyID = "local"
	}
	if c.DynamoDB.SecretAccessKey == "" {
		c.DynamoDB.SecretAccessKey = "local"
	}
	if c.DynamoDB.HTTPClient == nil {
		c.DynamoDB.HTTPClient = &http.Client{Transport: defaultTransport}
	}
	return c
}
