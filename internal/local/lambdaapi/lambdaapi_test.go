package lambdaapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/transfers/internal/local/lambdaapi"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

const (
	region  = "us-east-1"
	account = "123456789012"
)

// registry has Echo, which answers the ARN it was invoked as and the
// payload, and Fenced, which fails as a fenced leg does.
func registry(t *testing.T) *lambdarun.Registry {
	t.Helper()
	reg := &lambdarun.Registry{}
	echo := func(ctx context.Context, in json.RawMessage) (map[string]any, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		return map[string]any{"arn": lc.InvokedFunctionArn, "payload": in}, nil
	}
	fenced := func(context.Context, json.RawMessage) (any, error) {
		return nil, messages.InvokeResponse_Error{Type: "TransferFenced", Message: "debit t-1: transfer fenced"}
	}
	if err := reg.Register(
		&lambdarun.Function{Name: "Echo", ARN: lambdarun.FunctionARN(region, account, "Echo"), NewHandler: func() awslambda.Handler { return awslambda.NewHandler(echo) }},
		&lambdarun.Function{Name: "Fenced", ARN: lambdarun.FunctionARN(region, account, "Fenced"), NewHandler: func() awslambda.Handler { return awslambda.NewHandler(fenced) }},
	); err != nil {
		t.Fatal(err)
	}
	return reg
}

// authorizations keeps what Authorize was asked, and refuses the ARNs of
// deny.
type authorizations struct {
	mu       sync.Mutex
	deny     map[string]bool
	asked    []string
	payloads []string
	keys     []string
}

func (a *authorizations) authorize(r *http.Request, arn string) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, arn)
	a.payloads = append(a.payloads, string(body))
	a.keys = append(a.keys, r.Header.Get("Authorization"))
	if a.deny[arn] {
		return errors.New("User: arn:aws:sts::123456789012:assumed-role/Hook/x is not authorized to perform: lambda:InvokeFunction on resource: " + arn)
	}
	return nil
}

func clientConfig() aws.Config {
	return aws.Config{
		Region:           region,
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
		RetryMaxAttempts: 1,
	}
}

func start(t *testing.T, cfg lambdaapi.Config) (*lambdaapi.Server, *lambda.Client, *codedeploy.Client) {
	t.Helper()
	srv, err := lambdaapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	lc := lambda.NewFromConfig(clientConfig(), func(o *lambda.Options) { o.BaseEndpoint = aws.String(ts.URL) })
	cd := codedeploy.NewFromConfig(clientConfig(), func(o *codedeploy.Options) { o.BaseEndpoint = aws.String(ts.URL) })
	return srv, lc, cd
}

func TestInvoke(t *testing.T) {
	auth := &authorizations{}
	_, client, _ := start(t, lambdaapi.Config{Invoker: registry(t), Region: region, AccountID: account, Authorize: auth.authorize})
	arn := lambdarun.FunctionARN(region, account, "Echo")
	for _, tt := range []struct {
		name, function, qualifier string
		wantARN                   string // the ARN authorized and invoked
	}{
		{"name", "Echo", "", arn},
		{"qualified name", "Echo:live", "", arn + ":live"},
		{"partial ARN", account + ":function:Echo", "", arn},
		{"full ARN", arn, "", arn},
		{"version ARN", arn + ":7", "", arn + ":7"},
		{"alias ARN", arn + ":live", "", arn + ":live"},
		{"Qualifier parameter", arn, "live", arn + ":live"},
		{"Qualifier parameter and the same qualifier", arn + ":live", "live", arn + ":live"},
		{"$LATEST", "Echo", "$LATEST", arn + ":$LATEST"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			payload := `{"probe":"` + tt.name + `"}`
			in := &lambda.InvokeInput{FunctionName: aws.String(tt.function), Payload: []byte(payload),
				InvocationType: types.InvocationTypeRequestResponse}
			if tt.qualifier != "" {
				in.Qualifier = aws.String(tt.qualifier)
			}
			out, err := client.Invoke(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if out.StatusCode != http.StatusOK || out.FunctionError != nil {
				t.Fatalf("status %d, function error %v", out.StatusCode, aws.ToString(out.FunctionError))
			}
			var got struct {
				ARN     string          `json:"arn"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(out.Payload, &got); err != nil {
				t.Fatalf("payload %s: %v", out.Payload, err)
			}
			if got.ARN != tt.wantARN || string(got.Payload) != payload {
				t.Errorf("invoked as %s with %s, want %s with %s", got.ARN, got.Payload, tt.wantARN, payload)
			}
			auth.mu.Lock()
			defer auth.mu.Unlock()
			last := len(auth.asked) - 1
			if last < 0 || auth.asked[last] != tt.wantARN || auth.payloads[last] != payload ||
				!strings.Contains(auth.keys[last], "Credential=AKIDLOCAL/") {
				t.Errorf("Authorize asked %v with %v (%v), want %s", auth.asked, auth.payloads, auth.keys, tt.wantARN)
			}
		})
	}
}

func TestInvokeFunctionError(t *testing.T) {
	_, client, _ := start(t, lambdaapi.Config{Invoker: registry(t)})
	out, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("Fenced:live"), Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.FunctionError) != "Unhandled" || out.StatusCode != http.StatusOK {
		t.Fatalf("function error %q, status %d", aws.ToString(out.FunctionError), out.StatusCode)
	}
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if err := json.Unmarshal(out.Payload, &doc); err != nil || doc.Type != "TransferFenced" || doc.Message != "debit t-1: transfer fenced" {
		t.Errorf("error document %s (%v)", out.Payload, err)
	}
}

// apiError is the service error of an SDK call: its code and HTTP status.
func apiError(t *testing.T, err error) (string, int) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v (%T), want a service error", err, err)
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return ae.ErrorCode(), status
}

func TestInvokeErrors(t *testing.T) {
	reg := registry(t)
	reg.SetInterceptor(func(ctx context.Context, function string, payload []byte, next lambdarun.Invoke) ([]byte, *lambdarun.FunctionError, error) {
		switch string(payload) {
		case `{"fault":"throttle"}`:
			return nil, nil, &lambdarun.ServiceError{Type: "Lambda.TooManyRequestsException", Message: "Rate exceeded"}
		case `{"fault":"client"}`:
			return nil, nil, &lambdarun.ServiceError{Type: "Lambda.SdkClientException", Message: "connection reset"}
		}
		return next(ctx, payload)
	})
	auth := &authorizations{deny: map[string]bool{lambdarun.FunctionARN(region, account, "Fenced"): true}}
	_, client, _ := start(t, lambdaapi.Config{Invoker: reg, Region: region, AccountID: account, Authorize: auth.authorize})
	for _, tt := range []struct {
		name       string
		in         *lambda.InvokeInput
		wantCode   string
		wantStatus int
		wantType   any
	}{
		{"unknown function", &lambda.InvokeInput{FunctionName: aws.String("Nobody")}, "ResourceNotFoundException", http.StatusNotFound, new(*types.ResourceNotFoundException)},
		{"unknown function ARN", &lambda.InvokeInput{FunctionName: aws.String("arn:aws:lambda:us-east-1:123456789012:function:Nobody:3")}, "ResourceNotFoundException", http.StatusNotFound, nil},
		{"asynchronous", &lambda.InvokeInput{FunctionName: aws.String("Echo"), InvocationType: types.InvocationTypeEvent}, "InvalidParameterValueException", http.StatusBadRequest, new(*types.InvalidParameterValueException)},
		{"dry run", &lambda.InvokeInput{FunctionName: aws.String("Echo"), InvocationType: types.InvocationTypeDryRun}, "InvalidParameterValueException", http.StatusBadRequest, nil},
		{"two qualifiers", &lambda.InvokeInput{FunctionName: aws.String("Echo:7"), Qualifier: aws.String("live")}, "InvalidParameterValueException", http.StatusBadRequest, nil},
		{"payload not JSON", &lambda.InvokeInput{FunctionName: aws.String("Echo"), Payload: []byte("{")}, "InvalidRequestContentException", http.StatusBadRequest, new(*types.InvalidRequestContentException)},
		{"payload too large", &lambda.InvokeInput{FunctionName: aws.String("Echo"), Payload: bytes.Repeat([]byte(" "), 6*1024*1024+1)}, "RequestTooLargeException", http.StatusRequestEntityTooLarge, nil},
		{"refused", &lambda.InvokeInput{FunctionName: aws.String("Fenced")}, "AccessDeniedException", http.StatusForbidden, nil},
		{"throttled", &lambda.InvokeInput{FunctionName: aws.String("Echo"), Payload: []byte(`{"fault":"throttle"}`)}, "TooManyRequestsException", http.StatusTooManyRequests, new(*types.TooManyRequestsException)},
		{"other service error", &lambda.InvokeInput{FunctionName: aws.String("Echo"), Payload: []byte(`{"fault":"client"}`)}, "ServiceException", http.StatusInternalServerError, new(*types.ServiceException)},
		{"not a function reference", &lambda.InvokeInput{FunctionName: aws.String("a:b:c")}, "ValidationException", http.StatusBadRequest, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Invoke(context.Background(), tt.in)
			code, status := apiError(t, err)
			if code != tt.wantCode || status != tt.wantStatus {
				t.Errorf("error %s (HTTP %d), want %s (HTTP %d): %v", code, status, tt.wantCode, tt.wantStatus, err)
			}
			if tt.wantType != nil && !errors.As(err, tt.wantType) {
				t.Errorf("error %v (%T), want %T", err, err, tt.wantType)
			}
		})
	}
	t.Run("refusal's message", func(t *testing.T) {
		_, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("Fenced")})
		var ae smithy.APIError
		if !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), "is not authorized to perform: lambda:InvokeFunction") {
			t.Errorf("err %v", err)
		}
	})
}

// TestRefusalDocument: Lambda's answer to a refused invocation, as the
// wire carries it.
func TestRefusalDocument(t *testing.T) {
	srv, err := lambdaapi.New(lambdaapi.Config{Invoker: registry(t), Authorize: func(*http.Request, string) error { return errors.New("no") }})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/2015-03-31/functions/Echo/invocations", strings.NewReader(`{}`)))
	if rec.Code != http.StatusForbidden || rec.Header().Get("X-Amzn-ErrorType") != "AccessDeniedException" ||
		strings.TrimSpace(rec.Body.String()) != `{"Type":"User","message":"no"}` {
		t.Errorf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/2015-03-31/functions/Echo", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GetFunction: %d %s, want 404", rec.Code, rec.Body)
	}
}

func TestPutLifecycleEventHookExecutionStatus(t *testing.T) {
	var forbidden string // the deployment AuthorizeHookStatus refuses
	srv, _, client := start(t, lambdaapi.Config{Invoker: registry(t),
		AuthorizeHookStatus: func(_ *http.Request, deploymentID string) error {
			if deploymentID == forbidden {
				return errors.New("not authorized to perform: codedeploy:PutLifecycleEventHookExecutionStatus")
			}
			return nil
		}})
	ctx := context.Background()
	d := map[int]string{}
	for i := 1; i <= 6; i++ {
		d[i] = srv.CodeDeploy.CreateDeployment("app", fmt.Sprintf("group-%d", i)).ID
	}
	forbidden = d[6]
	put := func(deployment, execution string, status cdtypes.LifecycleEventStatus) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error) {
		in := &codedeploy.PutLifecycleEventHookExecutionStatusInput{Status: status}
		if deployment != "" {
			in.DeploymentId = aws.String(deployment)
		}
		if execution != "" {
			in.LifecycleEventHookExecutionId = aws.String(execution)
		}
		return client.PutLifecycleEventHookExecutionStatus(ctx, in)
	}
	out, err := put(d[1], "exec-1", cdtypes.LifecycleEventStatusSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.LifecycleEventHookExecutionId) != "exec-1" {
		t.Errorf("answer names %q", aws.ToString(out.LifecycleEventHookExecutionId))
	}
	if _, err := put(d[2], "exec-2", cdtypes.LifecycleEventStatusFailed); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name                  string
		deployment, execution string
		status                cdtypes.LifecycleEventStatus
		wantCode              string
		wantType              any
	}{
		{"already completed", d[1], "exec-1", cdtypes.LifecycleEventStatusFailed, "LifecycleEventAlreadyCompletedException", new(*cdtypes.LifecycleEventAlreadyCompletedException)},
		{"not a final status", d[3], "exec-3", cdtypes.LifecycleEventStatusInProgress, "InvalidLifecycleEventHookExecutionStatusException", new(*cdtypes.InvalidLifecycleEventHookExecutionStatusException)},
		{"no deployment", "", "exec-4", cdtypes.LifecycleEventStatusSucceeded, "DeploymentIdRequiredException", new(*cdtypes.DeploymentIdRequiredException)},
		{"no execution", d[5], "", cdtypes.LifecycleEventStatusSucceeded, "InvalidLifecycleEventHookExecutionIdException", nil},
		{"refused", d[6], "exec-6", cdtypes.LifecycleEventStatusSucceeded, "AccessDeniedException", nil},
		{"a deployment that was never created", "d-UNKNOWN", "exec-7", cdtypes.LifecycleEventStatusSucceeded, "DeploymentDoesNotExistException", new(*cdtypes.DeploymentDoesNotExistException)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := put(tt.deployment, tt.execution, tt.status)
			code, status := apiError(t, err)
			if code != tt.wantCode || status != http.StatusBadRequest {
				t.Errorf("error %s (HTTP %d), want %s (HTTP 400): %v", code, status, tt.wantCode, err)
			}
			if tt.wantType != nil && !errors.As(err, tt.wantType) {
				t.Errorf("error %v (%T), want %T", err, err, tt.wantType)
			}
		})
	}
	got := srv.CodeDeploy.Statuses()
	if len(got) != 2 || got[0].DeploymentID != d[1] || got[0].LifecycleEventHookExecutionID != "exec-1" || got[0].Status != "Succeeded" ||
		got[1].DeploymentID != d[2] || got[1].Status != "Failed" || got[0].At.IsZero() {
		t.Errorf("statuses %+v", got)
	}
	if s, ok := srv.CodeDeploy.Status("exec-2"); !ok || s.Status != "Failed" {
		t.Errorf("Status(exec-2) = %+v, %v", s, ok)
	}
	if _, ok := srv.CodeDeploy.Status("exec-3"); ok {
		t.Error("a refused status was recorded")
	}
}

func TestUnknownCodeDeployOperation(t *testing.T) {
	srv, err := lambdaapi.New(lambdaapi.Config{Invoker: registry(t)})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
	req.Header.Set("X-Amz-Target", "CodeDeploy_20141006.StopDeployment")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "UnknownOperationException") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

func TestListen(t *testing.T) {
	srv, err := lambdaapi.New(lambdaapi.Config{Invoker: registry(t)})
	if err != nil {
		t.Fatal(err)
	}
	endpoint, err := srv.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Errorf("endpoint %s", endpoint)
	}
	if _, err := srv.Listen(""); err == nil {
		t.Error("a second Listen was accepted")
	}
	client := lambda.NewFromConfig(clientConfig(), func(o *lambda.Options) { o.BaseEndpoint = aws.String(endpoint) })
	if _, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("Echo")}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("Echo")}); err == nil {
		t.Error("invoked after Shutdown")
	}
}

func TestNewRequiresAnInvoker(t *testing.T) {
	if _, err := lambdaapi.New(lambdaapi.Config{}); err == nil {
		t.Error("a server without an invoker was built")
	}
}
