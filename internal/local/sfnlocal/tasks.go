package sfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/exactlyonce/transfers/internal/local/asl"
)

// Task resources (service integrations) the local endpoint runs.
const (
	ResourceLambdaInvoke       = "arn:aws:states:::lambda:invoke"
	ResourceDynamoDBGetItem    = "arn:aws:states:::dynamodb:getItem"
	ResourceDynamoDBPutItem    = "arn:aws:states:::dynamodb:putItem"
	ResourceDynamoDBUpdateItem = "arn:aws:states:::dynamodb:updateItem"
	ResourceDynamoDBDeleteItem = "arn:aws:states:::dynamodb:deleteItem"
)

// dynamoDBOperations maps the DynamoDB integration resources to the API
// operation each one calls.
var dynamoDBOperations = map[string]string{
	ResourceDynamoDBGetItem:    "GetItem",
	ResourceDynamoDBPutItem:    "PutItem",
	ResourceDynamoDBUpdateItem: "UpdateItem",
	ResourceDynamoDBDeleteItem: "DeleteItem",
}

// supportedResources lists every resource CheckResource accepts, for error
// messages.
var supportedResources = strings.Join([]string{
	ResourceLambdaInvoke,
	ResourceDynamoDBGetItem,
	ResourceDynamoDBPutItem,
	ResourceDynamoDBUpdateItem,
	ResourceDynamoDBDeleteItem,
}, ", ")

// Tasks runs the Task states of local executions: the optimized
// lambda:invoke integration (through a LambdaInvoker) and the
// dynamodb:getItem/putItem/updateItem/deleteItem integrations (against the
// configured DynamoDB endpoint). It implements asl.TaskInvoker.
type Tasks struct {
	cfg    Config
	log    *slog.Logger
	signer *v4.Signer
	// role is the role of the state machine whose tasks these are; ""
	// for the tasks shared by no particular machine.
	role string
}

// forRole returns the tasks of a state machine whose role is roleARN.
func (t *Tasks) forRole(roleARN string) *Tasks {
	c := *t
	c.role = roleARN
	return &c
}

var _ asl.TaskInvoker = (*Tasks)(nil)

// NewTasks returns the task invoker for cfg.
func NewTasks(cfg Config) *Tasks {
	cfg = cfg.withDefaults()
	return &Tasks{cfg: cfg, log: cfg.Logger.With("component", "sfnlocal.tasks"), signer: v4.NewSigner()}
}

// CheckResource accepts exactly the supported integration resources; the
// .sync and .waitForTaskToken patterns, bare Lambda function ARNs, activities
// and other services are rejected with the resource named.
func (t *Tasks) CheckResource(resource string) error {
	if resource == ResourceLambdaInvoke {
		return nil
	}
	if _, ok := dynamoDBOperations[resource]; ok {
		return nil
	}
	switch {
	case strings.HasSuffix(resource, ".sync") || strings.Contains(resource, ".sync:"):
		return fmt.Errorf("unsupported task resource %q: the .sync (run a job) integration pattern is not supported locally; supported resources: %s", resource, supportedResources)
	case strings.HasSuffix(resource, ".waitForTaskToken"):
		return fmt.Errorf("unsupported task resource %q: the .waitForTaskToken (callback) integration pattern is not supported locally; supported resources: %s", resource, supportedResources)
	case strings.HasPrefix(resource, "arn:aws:lambda:"):
		return fmt.Errorf("unsupported task resource %q: invoke Lambda functions through %s with Parameters.FunctionName; supported resources: %s", resource, ResourceLambdaInvoke, supportedResources)
	}
	return fmt.Errorf("unsupported task resource %q; supported resources: %s", resource, supportedResources)
}

// Invoke runs one attempt of a task. Errors the state machine may handle by
// name are *asl.Error; a cancelled or expired ctx is returned as its own
// error.
func (t *Tasks) Invoke(ctx context.Context, resource string, parameters json.RawMessage) (json.RawMessage, error) {
	if resource == ResourceLambdaInvoke {
		return t.invokeLambda(ctx, parameters)
	}
	if op, ok := dynamoDBOperations[resource]; ok {
		return t.callDynamoDB(ctx, op, parameters)
	}
	if err := t.CheckResource(resource); err != nil {
		return nil, &asl.Error{Name: "States.Runtime", Cause: err.Error()}
	}
	return nil, &asl.Error{Name: "States.Runtime", Cause: fmt.Sprintf("no integration runs task resource %q", resource)}
}

// runtimeError reports parameters the integration cannot run with.
func runtimeError(format string, args ...any) *asl.Error {
	return &asl.Error{Name: "States.Runtime", Cause: fmt.Sprintf(format, args...)}
}

// sdkHTTPMetadata and sdkResponseMetadata are the members Step Functions
// adds to the output of optimized integrations, from the service's HTTP
// response.
type sdkHTTPMetadata struct {
	AllHTTPHeaders map[string][]string `json:"AllHttpHeaders"`
	HTTPHeaders    map[string]string   `json:"HttpHeaders"`
	HTTPStatusCode int                 `json:"HttpStatusCode"`
}

type sdkResponseMetadata struct {
	RequestID string `json:"RequestId"`
}

// awsHeaderNames restores the spelling AWS services use for headers Go
// canonicalises differently.
var awsHeaderNames = map[string]string{
	"X-Amzn-Requestid":               "x-amzn-RequestId",
	"X-Amz-Crc32":                    "x-amz-crc32",
	"X-Amzn-Remapped-Content-Length": "x-amzn-Remapped-Content-Length",
}

func newSDKHTTPMetadata(header http.Header, status int) sdkHTTPMetadata {
	md := sdkHTTPMetadata{AllHTTPHeaders: map[string][]string{}, HTTPHeaders: map[string]string{}, HTTPStatusCode: status}
	for name, values := range header {
		if len(values) == 0 {
			continue
		}
		if aws, ok := awsHeaderNames[name]; ok {
			name = aws
		}
		md.AllHTTPHeaders[name] = values
		md.HTTPHeaders[name] = values[0]
	}
	return md
}

// httpDate formats t as an HTTP Date header.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// serviceCause formats an error cause the way the AWS SDK for Java v2 used
// by Step Functions reports service errors.
func serviceCause(message, service string, status int, requestID string) string {
	return fmt.Sprintf("%s (Service: %s, Status Code: %d, Request ID: %s)", message, service, status, requestID)
}
