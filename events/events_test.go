// Package events_test checks the sample events in this folder against the
// template, the state machine and the local runtime, so that every sample
// stays an event the function really receives.
package events_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/eventbus"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
	"github.com/exactlyonce/transfers/internal/worker"
)

const (
	templateFile = "../template.yaml"

	orchestratorFunction = "OrchestratorFunction"
	reaperFunction       = "ReaperFunction"
	transferMachine      = "TransferStateMachine"
	restAPI              = "TransfersApi"

	// The samples' state machine ARN: TransferStateMachine as the template
	// resolves locally (cfn.Env{}: us-east-1, account 123456789012).
	machineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:TransferStateMachine"
)

type kind string

const (
	apiEvent       kind = "API Gateway REST proxy event"
	taskEvent      kind = "state machine task payload"
	statusEvent    kind = "Step Functions status change event"
	scheduledEvent kind = "EventBridge scheduled event"
)

// sample is one file of the folder.
type sample struct {
	file     string
	kind     kind
	function string // logical ID of the function it is for
	// state is the state machine state that sends a task payload.
	state string
	// status is the execution status of a status change event.
	status string
}

var samples = []sample{
	{file: "api-post-transfer.json", kind: apiEvent, function: orchestratorFunction},
	{file: "api-post-transfer-replay.json", kind: apiEvent, function: orchestratorFunction},
	{file: "api-get-transfer.json", kind: apiEvent, function: orchestratorFunction},
	{file: "api-get-account.json", kind: apiEvent, function: orchestratorFunction},
	{file: "debit-task.json", kind: taskEvent, function: "DebitFunction", state: "Debit"},
	{file: "credit-task.json", kind: taskEvent, function: "CreditFunction", state: "Credit"},
	{file: "refund-task.json", kind: taskEvent, function: "RefundFunction", state: "Refund"},
	{file: "reaper-execution-failed.json", kind: statusEvent, function: reaperFunction, status: "FAILED"},
	{file: "reaper-execution-timed-out.json", kind: statusEvent, function: reaperFunction, status: "TIMED_OUT"},
	{file: "reaper-sweep-scheduled.json", kind: scheduledEvent, function: reaperFunction},
}

func samplesOf(k kind) []sample {
	var out []sample
	for _, s := range samples {
		if s.kind == k {
			out = append(out, s)
		}
	}
	return out
}

// TestMain runs the tests with a DynamoDB Local for the state machine's
// tables and ledger (internal/local/ddbtest).
func TestMain(m *testing.M) { ddbtest.Main(m) }

// ---- loading -------------------------------------------------------------

func read(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read sample: %v", err)
	}
	return b
}

// strict decodes exactly one JSON value into v, refusing unknown fields.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the first JSON value")
	}
	return nil
}

// generic decodes a JSON document with numbers as json.Number, for
// comparisons that must not round numbers.
func generic(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("data after the first JSON value")
	}
	return v
}

func object(t *testing.T, data []byte) map[string]any {
	t.Helper()
	m, ok := generic(t, data).(map[string]any)
	if !ok {
		t.Fatalf("not a JSON object: %s", data)
	}
	return m
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// sameJSON fails unless got and want are equal JSON documents.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("%s differs\n got: %s\nwant: %s", what, g, w)
	}
}

var loadTemplate = sync.OnceValues(func() (*cfn.Template, error) { return cfn.Load(templateFile) })

func tpl(t *testing.T) *cfn.Template {
	t.Helper()
	tp, err := loadTemplate()
	if err != nil {
		t.Fatalf("load template: %v", err)
	}
	return tp
}

func functions(t *testing.T) map[string]cfn.Function {
	t.Helper()
	fns, err := tpl(t).Functions(cfn.Env{})
	if err != nil {
		t.Fatalf("template functions: %v", err)
	}
	out := map[string]cfn.Function{}
	for _, f := range fns {
		out[f.LogicalID] = f
	}
	return out
}

func stateMachine(t *testing.T) cfn.StateMachine {
	t.Helper()
	sms, err := tpl(t).StateMachines(cfn.Env{})
	if err != nil {
		t.Fatalf("template state machines: %v", err)
	}
	for _, sm := range sms {
		if sm.LogicalID == transferMachine {
			return sm
		}
	}
	t.Fatalf("template has no state machine %s", transferMachine)
	return cfn.StateMachine{}
}

// reaperRules returns the reaper's status change rule and its schedule.
func reaperRules(t *testing.T) (closed, sweep cfn.Rule) {
	t.Helper()
	rules, err := tpl(t).Rules(cfn.Env{})
	if err != nil {
		t.Fatalf("template rules: %v", err)
	}
	var found []cfn.Rule
	for _, r := range rules {
		if r.TargetFunction == reaperFunction && r.Enabled {
			found = append(found, r)
		}
	}
	for _, r := range found {
		switch {
		case r.Pattern != nil && closed.LogicalID == "":
			closed = r
		case r.ScheduleExpression != "" && sweep.LogicalID == "":
			sweep = r
		default:
			t.Fatalf("%s: more reaper rules than one pattern and one schedule: update the samples", r.LogicalID)
		}
	}
	if closed.LogicalID == "" || sweep.LogicalID == "" {
		t.Fatalf("the template needs an event pattern rule and a schedule for %s, found %+v", reaperFunction, found)
	}
	return closed, sweep
}

// ---- the folder ------------------------------------------------------------

// TestFolder: every JSON file is a listed sample, every listed sample is
// one JSON object of a template function, and the README describes it.
func TestFolder(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range samples {
		listed[s.file] = true
	}
	for _, f := range files {
		if !listed[f] {
			t.Errorf("%s is not listed in samples: add it (and its checks) to events_test.go", f)
		}
	}
	readme := string(read(t, readmeFile))
	fns := functions(t)
	for _, s := range samples {
		t.Run(s.file, func(t *testing.T) {
			object(t, read(t, s.file)) // exactly one JSON object
			if _, ok := fns[s.function]; !ok {
				t.Errorf("function %s is not in the template", s.function)
			}
			row := regexp.MustCompile("(?m)^\\|\\s*`" + regexp.QuoteMeta(s.file) + "`\\s*\\|\\s*`" + s.function + "`\\s*\\|")
			if !row.MatchString(readme) {
				t.Errorf(readmeFile+" has no table row | `%s` | `%s` |", s.file, s.function)
			}
			if !strings.Contains(readme, "-e events/"+s.file+" "+s.function) {
				t.Errorf(readmeFile+" has no `sam local invoke -e events/%s %s` command", s.file, s.function)
			}
		})
	}
}

// ---- API Gateway events --------------------------------------------------

// notInLibraryType are the fields API Gateway sends that
// events.APIGatewayProxyRequest does not model. principalOrgId (the
// caller's AWS Organizations id, null outside an organization) is part of
// requestContext.identity in the events API Gateway sends for REST APIs
// and in those internal/local/apigw builds.
var notInLibraryType = []string{"requestContext.identity.principalOrgId"}

// decodeAPIEvent decodes a sample into events.APIGatewayProxyRequest,
// refusing any field the type lacks besides notInLibraryType.
func decodeAPIEvent(t *testing.T, data []byte) events.APIGatewayProxyRequest {
	t.Helper()
	doc := object(t, data)
	for _, path := range notInLibraryType {
		parts := strings.Split(path, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				t.Fatalf("%s: no object %s", path, p)
			}
			m = next
		}
		last := parts[len(parts)-1]
		v, ok := m[last]
		if !ok {
			t.Fatalf("%s is missing: API Gateway sends it", path)
		}
		if _, isString := v.(string); v != nil && !isString {
			t.Fatalf("%s = %v, want null or a string", path, v)
		}
		delete(m, last)
	}
	var req events.APIGatewayProxyRequest
	if err := strict(marshal(t, doc), &req); err != nil {
		t.Fatalf("decode as events.APIGatewayProxyRequest: %v", err)
	}
	return req
}

func apiStage(t *testing.T, restAPIID string) string {
	t.Helper()
	res, ok := tpl(t).Resources[restAPIID]
	if !ok {
		t.Fatalf("no API %s in the template", restAPIID)
	}
	r, err := cfn.NewResolver(tpl(t), cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := r.String(res.Properties.Get("StageName"))
	if err != nil {
		t.Fatalf("%s StageName: %v", restAPIID, err)
	}
	return stage
}

func routeOf(t *testing.T, method, resource string) cfn.Route {
	t.Helper()
	routes, err := tpl(t).APIRoutes(cfn.Env{})
	if err != nil {
		t.Fatalf("template routes: %v", err)
	}
	for _, r := range routes {
		if r.Method == method && r.Path == resource {
			return r
		}
	}
	t.Fatalf("the template has no route %s %s", method, resource)
	return cfn.Route{}
}

var paramRE = regexp.MustCompile(`\{([^}]+)\}`)

// sigV4 is the Authorization header of a SigV4-signed request.
var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)/(\d{8})/([a-z0-9-]+)/([a-z-]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

func TestAPIEvents(t *testing.T) {
	maxAmount, err := strconv.ParseInt(functions(t)[orchestratorFunction].Environment["MAX_TRANSFER_AMOUNT"], 10, 64)
	if err != nil {
		t.Fatalf("OrchestratorFunction MAX_TRANSFER_AMOUNT: %v", err)
	}
	for _, s := range samplesOf(apiEvent) {
		t.Run(s.file, func(t *testing.T) {
			req := decodeAPIEvent(t, read(t, s.file))
			rc := req.RequestContext

			route := routeOf(t, req.HTTPMethod, req.Resource)
			if route.FunctionLogicalID != s.function {
				t.Errorf("route %s %s invokes %s, want %s", route.Method, route.Path, route.FunctionLogicalID, s.function)
			}
			if route.Authorizer != "AWS_IAM" {
				t.Errorf("route %s %s is authorized by %s; the samples carry an AWS_IAM identity", route.Method, route.Path, route.Authorizer)
			}
			stage := apiStage(t, route.RestApiID)
			for _, c := range []struct{ field, got, want string }{
				{"requestContext.resourcePath", rc.ResourcePath, req.Resource},
				{"requestContext.httpMethod", rc.HTTPMethod, req.HTTPMethod},
				{"requestContext.stage", rc.Stage, stage},
				{"requestContext.path", rc.Path, "/" + stage + req.Path},
				{"requestContext.protocol", rc.Protocol, "HTTP/1.1"},
				{"requestContext.domainName", rc.DomainName, rc.APIID + ".execute-api.us-east-1.amazonaws.com"},
				{"requestContext.domainPrefix", rc.DomainPrefix, rc.APIID},
				{"requestContext.requestTime", rc.RequestTime, time.UnixMilli(rc.RequestTimeEpoch).UTC().Format("02/Jan/2006:15:04:05 +0000")},
				{"requestContext.identity.accountId", rc.Identity.AccountID, rc.AccountID},
				{"requestContext.identity.user", rc.Identity.User, rc.Identity.Caller},
				{"requestContext.identity.userAgent", rc.Identity.UserAgent, req.Headers["User-Agent"]},
				{"requestContext.identity.sourceIp", rc.Identity.SourceIP, req.Headers["X-Forwarded-For"]},
				{"headers.Host", req.Headers["Host"], rc.DomainName},
				{"headers.X-Forwarded-Proto", req.Headers["X-Forwarded-Proto"], "https"},
				{"headers.X-Forwarded-Port", req.Headers["X-Forwarded-Port"], "443"},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
				}
			}
			if !regexp.MustCompile(`^arn:aws:iam::` + rc.AccountID + `:(user|role)/[A-Za-z0-9+=,.@_-]+$`).MatchString(rc.Identity.UserArn) {
				t.Errorf("requestContext.identity.userArn = %q, want an IAM user or role ARN in %s", rc.Identity.UserArn, rc.AccountID)
			}

			// The path is the resource with the path parameters filled in.
			wantPath := paramRE.ReplaceAllStringFunc(req.Resource, func(p string) string { return req.PathParameters[p[1:len(p)-1]] })
			if req.Path != wantPath {
				t.Errorf("path = %q, want %q (resource %s with pathParameters %v)", req.Path, wantPath, req.Resource, req.PathParameters)
			}
			if n := len(paramRE.FindAllString(req.Resource, -1)); n != len(req.PathParameters) {
				t.Errorf("pathParameters = %v, want the %d parameters of %s", req.PathParameters, n, req.Resource)
			}
			if req.QueryStringParameters != nil || req.MultiValueQueryStringParameters != nil || req.StageVariables != nil {
				t.Errorf("queryStringParameters, multiValueQueryStringParameters and stageVariables must be null")
			}

			// headers and multiValueHeaders agree.
			if len(req.Headers) != len(req.MultiValueHeaders) {
				t.Errorf("headers has %d names, multiValueHeaders %d", len(req.Headers), len(req.MultiValueHeaders))
			}
			for k, v := range req.Headers {
				if mv := req.MultiValueHeaders[k]; len(mv) == 0 || mv[len(mv)-1] != v {
					t.Errorf("multiValueHeaders[%q] = %q, want it to end with headers[%q] = %q", k, mv, k, v)
				}
			}

			// The trace id starts with the request time, in seconds.
			if want := fmt.Sprintf("Root=1-%08x-", rc.RequestTimeEpoch/1000); !strings.HasPrefix(req.Headers["X-Amzn-Trace-Id"], want) {
				t.Errorf("X-Amzn-Trace-Id = %q, want the prefix %q", req.Headers["X-Amzn-Trace-Id"], want)
			}

			// The SigV4 signature the AWS_IAM authorizer checked is that
			// of the identity's access key, for execute-api, on the day of
			// the request, over headers the request has.
			m := sigV4.FindStringSubmatch(req.Headers["Authorization"])
			if m == nil {
				t.Fatalf("Authorization = %q, want a SigV4 header", req.Headers["Authorization"])
			}
			day := time.UnixMilli(rc.RequestTimeEpoch).UTC().Format("20060102")
			for _, c := range []struct{ what, got, want string }{
				{"credential access key", m[1], rc.Identity.AccessKey},
				{"credential date", m[2], day},
				{"credential region", m[3], "us-east-1"},
				{"credential service", m[4], "execute-api"},
				{"X-Amz-Date day", req.Headers["X-Amz-Date"][:min(8, len(req.Headers["X-Amz-Date"]))], day},
			} {
				if c.got != c.want {
					t.Errorf("Authorization %s = %q, want %q", c.what, c.got, c.want)
				}
			}
			signed := strings.Split(m[5], ";")
			if !slices.IsSorted(signed) || !slices.Contains(signed, "host") {
				t.Errorf("SignedHeaders %q must be sorted and include host", m[5])
			}
			for _, h := range signed {
				if !hasHeader(req, h) {
					t.Errorf("SignedHeaders names %q, which the request lacks", h)
				}
			}

			switch req.HTTPMethod {
			case http.MethodPost:
				if err := idempotency.ValidateKey(req.Headers["Idempotency-Key"]); err != nil {
					t.Errorf("Idempotency-Key %q: %v", req.Headers["Idempotency-Key"], err)
				}
				if req.IsBase64Encoded {
					t.Errorf("isBase64Encoded: the body is JSON text")
				}
				if _, err := transfer.ParseRequest([]byte(req.Body), maxAmount); err != nil {
					t.Errorf("body is not a valid transfer request: %v", err)
				}
				if got := req.Headers["Content-Length"]; got != strconv.Itoa(len(req.Body)) {
					t.Errorf("Content-Length = %q, want %d", got, len(req.Body))
				}
				if req.Headers["Content-Type"] != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", req.Headers["Content-Type"])
				}
			case http.MethodGet:
				if req.Body != "" || req.IsBase64Encoded {
					t.Errorf("a GET has a null body, got %q", req.Body)
				}
			}
		})
	}
}

// TestAPIEventsAreOneClient: the replay repeats the POST, and the reads
// are the same caller's, of that transfer's accounts.
func TestAPIEventsAreOneClient(t *testing.T) {
	post := decodeAPIEvent(t, read(t, "api-post-transfer.json"))
	replay := decodeAPIEvent(t, read(t, "api-post-transfer-replay.json"))
	getTransfer := decodeAPIEvent(t, read(t, "api-get-transfer.json"))
	getAccount := decodeAPIEvent(t, read(t, "api-get-account.json"))
	var body transfer.Request
	if err := json.Unmarshal([]byte(post.Body), &body); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"replay Idempotency-Key", replay.Headers["Idempotency-Key"], post.Headers["Idempotency-Key"]},
		{"replay body", replay.Body, post.Body},
		{"replay route", replay.HTTPMethod + " " + replay.Resource, post.HTTPMethod + " " + post.Resource},
		{"replay caller", replay.RequestContext.Identity.UserArn, post.RequestContext.Identity.UserArn},
		{"replay comes later", replay.RequestContext.RequestTimeEpoch > post.RequestContext.RequestTimeEpoch, true},
		{"replay is another request", replay.RequestContext.RequestID != post.RequestContext.RequestID &&
			replay.RequestContext.ExtendedRequestID != post.RequestContext.ExtendedRequestID &&
			replay.Headers["X-Amzn-Trace-Id"] != post.Headers["X-Amzn-Trace-Id"], true},
		{"transfer read by its creator", getTransfer.RequestContext.Identity.UserArn, post.RequestContext.Identity.UserArn},
		{"transfer read after the POST", getTransfer.RequestContext.RequestTimeEpoch > post.RequestContext.RequestTimeEpoch, true},
		{"account read by the same caller", getAccount.RequestContext.Identity.UserArn, post.RequestContext.Identity.UserArn},
		{"account read is the source account", getAccount.PathParameters["accountId"], body.SourceAccountID},
		{"one API", getTransfer.RequestContext.APIID + getAccount.RequestContext.APIID + replay.RequestContext.APIID,
			strings.Repeat(post.RequestContext.APIID, 3)},
		{"one resource id per resource", replay.RequestContext.ResourceID, post.RequestContext.ResourceID},
		{"resources have their own ids", len(map[string]bool{post.RequestContext.ResourceID: true,
			getTransfer.RequestContext.ResourceID: true, getAccount.RequestContext.ResourceID: true}), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func hasHeader(req events.APIGatewayProxyRequest, name string) bool {
	for k := range req.Headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

type recordingInvoker struct {
	mu     sync.Mutex
	events [][]byte
}

func (r *recordingInvoker) InvokeFunction(_ context.Context, _ string, payload []byte) ([]byte, *lambdarun.FunctionError, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, bytes.Clone(payload))
	return []byte(`{"statusCode":200,"headers":{"Content-Type":"application/json"},"body":"{}"}`), nil, nil
}

func (r *recordingInvoker) recorded() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// TestAPIEventsAreWhatTheGatewayBuilds sends each sample's request to the
// local API Gateway (internal/local/apigw) configured like the deployed
// API, and compares the event it builds with the sample. Only the per-call
// ids and the Authorization header differ: locally the caller names itself
// with "Authorization: Bearer NAME" instead of a SigV4 signature.
func TestAPIEventsAreWhatTheGatewayBuilds(t *testing.T) {
	fns := functions(t)
	routes, err := tpl(t).APIRoutes(cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samplesOf(apiEvent) {
		t.Run(s.file, func(t *testing.T) {
			data := read(t, s.file)
			req := decodeAPIEvent(t, data)
			rc := req.RequestContext

			inv := &recordingInvoker{}
			var rs []apigw.Route
			for _, r := range routes {
				rs = append(rs, apigw.Route{Method: r.Method, Path: r.Path, FunctionName: fns[r.FunctionLogicalID].Name})
			}
			srv, err := apigw.NewServer(apigw.Config{
				Routes: rs, Invoker: inv, Stage: rc.Stage, AccountID: rc.AccountID, APIID: rc.APIID,
				Now:    func() time.Time { return time.UnixMilli(rc.RequestTimeEpoch) },
				Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}

			var body io.Reader
			if req.Body != "" {
				body = strings.NewReader(req.Body)
			}
			hr := httptest.NewRequest(req.HTTPMethod, "https://"+rc.DomainName+rc.Path, body)
			hr.RemoteAddr = rc.Identity.SourceIP + ":50412"
			for k, vs := range req.MultiValueHeaders {
				switch k {
				case "Host", "Authorization", "X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto":
					continue // the gateway sets these
				}
				hr.Header[k] = vs
			}
			_, name, _ := strings.Cut(rc.Identity.UserArn, ":user/")
			hr.Header.Set("Authorization", "Bearer "+name)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, hr)
			built := inv.recorded()
			if w.Code != http.StatusOK || len(built) != 1 {
				t.Fatalf("local gateway answered %d %s and invoked the function %d times", w.Code, w.Body, len(built))
			}

			got := object(t, built[0])
			want := object(t, data)
			// Per-call ids, and the identity's proof.
			gotRC, wantRC := got["requestContext"].(map[string]any), want["requestContext"].(map[string]any)
			gotRC["requestId"], gotRC["extendedRequestId"] = wantRC["requestId"], wantRC["extendedRequestId"]
			got["headers"].(map[string]any)["Authorization"] = want["headers"].(map[string]any)["Authorization"]
			got["multiValueHeaders"].(map[string]any)["Authorization"] = want["multiValueHeaders"].(map[string]any)["Authorization"]
			sameJSON(t, "event built by the local API Gateway", got, want)
		})
	}
}

// ---- task payloads ---------------------------------------------------------

// payloadTemplate is the Payload parameters of a state that invokes fn.
func payloadTemplate(t *testing.T, definition []byte, state string, fn cfn.Function) map[string]string {
	t.Helper()
	var def struct {
		States map[string]struct {
			Type       string `json:"Type"`
			Resource   string `json:"Resource"`
			Parameters struct {
				FunctionName string         `json:"FunctionName"`
				Payload      map[string]any `json:"Payload"`
			} `json:"Parameters"`
		} `json:"States"`
	}
	if err := json.Unmarshal(definition, &def); err != nil {
		t.Fatalf("state machine definition: %v", err)
	}
	st, ok := def.States[state]
	if !ok {
		t.Fatalf("the state machine has no state %s", state)
	}
	if st.Type != "Task" || st.Resource != "arn:aws:states:::lambda:invoke" {
		t.Fatalf("state %s is %s %s, want a lambda:invoke Task", state, st.Type, st.Resource)
	}
	// The function itself, or its live alias (AutoPublishAlias).
	if !strings.HasSuffix(st.Parameters.FunctionName, ":function:"+fn.Name) && !strings.HasSuffix(st.Parameters.FunctionName, ":function:"+fn.Name+":live") {
		t.Fatalf("state %s invokes %s, want %s", state, st.Parameters.FunctionName, fn.LogicalID)
	}
	out := map[string]string{}
	for k, v := range st.Parameters.Payload {
		field, isPath := strings.CutSuffix(k, ".$")
		path, ok := v.(string)
		if !isPath || !ok {
			t.Fatalf("state %s: Payload field %q is not a JSONPath field", state, k)
		}
		out[field] = path
	}
	return out
}

// lookup evaluates a dotted JSONPath such as $.request.amount.
func lookup(t *testing.T, doc any, path string) any {
	t.Helper()
	rest, ok := strings.CutPrefix(path, "$.")
	if !ok {
		t.Fatalf("JSONPath %q: only $.a.b paths are evaluated here", path)
	}
	v := doc
	for _, name := range strings.Split(rest, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("JSONPath %s: %s is not in an object", path, name)
		}
		if v, ok = m[name]; !ok {
			t.Fatalf("JSONPath %s: no field %s in the workflow input", path, name)
		}
	}
	return v
}

// workflowInput is the execution input of the failed execution sample: the
// input the orchestrator started the sample transfer with.
func workflowInput(t *testing.T) string {
	t.Helper()
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(read(t, "reaper-execution-failed.json"), &ev); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		t.Fatal(err)
	}
	return d.Input
}

func TestTaskEvents(t *testing.T) {
	sm := stateMachine(t)
	fns := functions(t)
	input := generic(t, []byte(workflowInput(t)))
	post := decodeAPIEvent(t, read(t, "api-post-transfer.json"))
	get := decodeAPIEvent(t, read(t, "api-get-transfer.json"))
	for _, s := range samplesOf(taskEvent) {
		t.Run(s.file, func(t *testing.T) {
			data := read(t, s.file)
			var task worker.Task
			if err := strict(data, &task); err != nil {
				t.Fatalf("decode as worker.Task: %v", err)
			}

			// The fields are those the state's Payload names, with the
			// values its paths select from the workflow input.
			tmpl := payloadTemplate(t, sm.Definition, s.state, fns[s.function])
			doc := object(t, data)
			var gotKeys, wantKeys []string
			for k := range doc {
				gotKeys = append(gotKeys, k)
			}
			for k := range tmpl {
				wantKeys = append(wantKeys, k)
			}
			slices.Sort(gotKeys)
			slices.Sort(wantKeys)
			if !slices.Equal(gotKeys, wantKeys) {
				t.Fatalf("fields %v, want the %s state's Payload fields %v", gotKeys, s.state, wantKeys)
			}
			for field, path := range tmpl {
				if path == "$.error" {
					// The credit's refusal as the workflow caught it: not
					// in the input; TestStateMachineSendsTheSamples checks
					// the sample against what the workflow sends.
					continue
				}
				sameJSON(t, fmt.Sprintf("%s (%s of the workflow input)", field, path), doc[field], lookup(t, input, path))
			}

			// The record is the caller's for the POST's Idempotency-Key
			// (internal/api scopes an IAM caller as "iam:" + its ARN), and
			// the transfer is the one the GET sample reads.
			scope := "iam:" + post.RequestContext.Identity.UserArn
			if want := idempotency.RecordKey(scope, post.Headers["Idempotency-Key"]); task.RecordKey != want {
				t.Errorf("recordKey = %s, want %s, the record of Idempotency-Key %s for %s", task.RecordKey, want, post.Headers["Idempotency-Key"], scope)
			}
			if want := get.PathParameters["transferId"]; task.TransferID != want {
				t.Errorf("transferId = %s, want %s (api-get-transfer.json)", task.TransferID, want)
			}
			var body transfer.Request
			if err := json.Unmarshal([]byte(post.Body), &body); err != nil {
				t.Fatal(err)
			}
			if task.SourceAccountID != body.SourceAccountID || task.DestinationAccountID != body.DestinationAccountID ||
				task.Amount != body.Amount || task.Currency != body.Currency {
				t.Errorf("task %+v is not the transfer of api-post-transfer.json %+v", task, body)
			}
		})
	}
}

// ---- reaper events ---------------------------------------------------------

// statusDetail is the detail of a Step Functions execution status change.
type statusDetail struct {
	ExecutionArn        string           `json:"executionArn"`
	StateMachineArn     string           `json:"stateMachineArn"`
	Name                string           `json:"name"`
	Status              string           `json:"status"`
	StartDate           int64            `json:"startDate"`
	StopDate            *int64           `json:"stopDate"`
	Input               string           `json:"input"`
	InputDetails        *json.RawMessage `json:"inputDetails"`
	Output              *string          `json:"output"`
	OutputDetails       *json.RawMessage `json:"outputDetails"`
	RedriveCount        int              `json:"redriveCount"`
	RedriveDate         *int64           `json:"redriveDate"`
	RedriveStatus       string           `json:"redriveStatus"`
	RedriveStatusReason *string          `json:"redriveStatusReason"`
	Error               *string          `json:"error"`
	Cause               *string          `json:"cause"`
}

func TestStatusChangeEvents(t *testing.T) {
	sm := stateMachine(t)
	if sm.ARN != machineARN {
		t.Fatalf("%s resolves to %s; the samples use %s", transferMachine, sm.ARN, machineARN)
	}
	for _, s := range samplesOf(statusEvent) {
		t.Run(s.file, func(t *testing.T) {
			var ev events.CloudWatchEvent
			if err := strict(read(t, s.file), &ev); err != nil {
				t.Fatalf("decode as events.CloudWatchEvent: %v", err)
			}
			var d statusDetail
			if err := strict(ev.Detail, &d); err != nil {
				t.Fatalf("decode detail: %v", err)
			}
			execARN := strings.Replace(sm.ARN, ":stateMachine:", ":execution:", 1) + ":" + d.Name
			for _, c := range []struct{ field, got, want string }{
				{"version", ev.Version, "0"},
				{"source", ev.Source, "aws.states"},
				{"detail-type", ev.DetailType, "Step Functions Execution Status Change"},
				{"account", ev.AccountID, "123456789012"},
				{"region", ev.Region, "us-east-1"},
				{"detail.status", d.Status, s.status},
				{"detail.stateMachineArn", d.StateMachineArn, sm.ARN},
				{"detail.executionArn", d.ExecutionArn, execARN},
				{"detail.redriveStatus", d.RedriveStatus, "REDRIVABLE"},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
				}
			}
			if _, err := uuid.Parse(ev.ID); err != nil {
				t.Errorf("id %q is not a UUID", ev.ID)
			}
			if !slices.Equal(ev.Resources, []string{execARN}) {
				t.Errorf("resources = %v, want [%s]", ev.Resources, execARN)
			}
			if d.StopDate == nil || *d.StopDate < d.StartDate {
				t.Fatalf("stopDate %v must be set, not before startDate %d", d.StopDate, d.StartDate)
			}
			if want := time.UnixMilli(*d.StopDate).UTC().Truncate(time.Second); !ev.Time.Equal(want) {
				t.Errorf("time = %s, want the stop date %s", ev.Time, want)
			}
			if d.Error == nil || *d.Error == "" {
				t.Errorf("a %s execution has an error", s.status)
			}
			if ran := *d.StopDate - d.StartDate; s.status == "TIMED_OUT" && ran < machineTimeout(t, sm)*1000 {
				t.Errorf("a TIMED_OUT execution ran %d ms, less than the machine's TimeoutSeconds", ran)
			}
			if d.Output != nil || d.OutputDetails != nil || d.InputDetails == nil {
				t.Errorf("a closed, unsuccessful execution has inputDetails and null output and outputDetails")
			}

			// input is the workflow input the orchestrator starts the
			// execution with, byte for byte, and names the execution.
			var in transfer.WorkflowInput
			if err := strict([]byte(d.Input), &in); err != nil {
				t.Fatalf("input is not a transfer.WorkflowInput: %v", err)
			}
			if again := string(marshal(t, in)); again != d.Input {
				t.Errorf("input is not in the orchestrator's encoding:\n got %s\nwant %s", d.Input, again)
			}
			if in.TransferID != d.Name {
				t.Errorf("input transferId %s differs from the execution name %s", in.TransferID, d.Name)
			}
			if b, err := hex.DecodeString(in.RecordKey); err != nil || len(b) != 32 || strings.ToLower(in.RecordKey) != in.RecordKey {
				t.Errorf("recordKey %q is not a lower-case hex SHA-256", in.RecordKey)
			}
			req, err := transfer.ParseRequest(in.Request, 1<<62)
			if err != nil {
				t.Fatalf("input request: %v", err)
			}
			if !bytes.Equal(req.Canonical(), in.Request) {
				t.Errorf("input request %s is not canonical: %s", in.Request, req.Canonical())
			}
			created, err := time.Parse(time.RFC3339Nano, in.CreatedAt)
			if err != nil {
				t.Fatalf("createdAt: %v", err)
			}
			if created.UnixMilli() > d.StartDate {
				t.Errorf("createdAt %s is after the execution start %d", in.CreatedAt, d.StartDate)
			}
			id, err := uuid.Parse(in.TransferID)
			if err != nil || id.Version() != 7 {
				t.Fatalf("transferId %q is not a UUIDv7 (internal/app.newTransferID)", in.TransferID)
			}
			if sec, nsec := id.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != created.UnixMilli() {
				t.Errorf("transferId %s was made at %s, not at createdAt %s", in.TransferID, time.Unix(sec, nsec).UTC(), in.CreatedAt)
			}
		})
	}
}

func machineTimeout(t *testing.T, sm cfn.StateMachine) int64 {
	t.Helper()
	var def struct {
		TimeoutSeconds int64 `json:"TimeoutSeconds"`
	}
	if err := json.Unmarshal(sm.Definition, &def); err != nil || def.TimeoutSeconds <= 0 {
		t.Fatalf("state machine TimeoutSeconds: %v (%d)", err, def.TimeoutSeconds)
	}
	return def.TimeoutSeconds
}

// mutate returns a copy of a JSON document with one field replaced.
func mutate(t *testing.T, data []byte, path string, value any) []byte {
	t.Helper()
	doc := object(t, data)
	parts := strings.Split(path, ".")
	m := doc
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("mutate %s: no object %s", path, p)
		}
		m = next
	}
	m[parts[len(parts)-1]] = value
	return marshal(t, doc)
}

// TestReaperEventsMatchTheRules checks the reaper samples against the
// template's rules with the local event bus's pattern matcher: the status
// change events match the ExecutionClosed pattern, the scheduled event
// does not (it comes from the Sweep schedule), and neither does an event
// the rule must leave out.
func TestReaperEventsMatchTheRules(t *testing.T) {
	closed, sweep := reaperRules(t)
	pattern, err := eventbus.Compile(closed.Pattern)
	if err != nil {
		t.Fatalf("rule %s: %v", closed.LogicalID, err)
	}
	failed := read(t, "reaper-execution-failed.json")
	tests := []struct {
		name  string
		event []byte
		want  bool
	}{
		{"failed execution", failed, true},
		{"timed-out execution", read(t, "reaper-execution-timed-out.json"), true},
		{"aborted execution", mutate(t, failed, "detail.status", "ABORTED"), true},
		{"scheduled sweep", read(t, "reaper-sweep-scheduled.json"), false},
		{"succeeded execution", mutate(t, failed, "detail.status", "SUCCEEDED"), false},
		{"running execution", mutate(t, failed, "detail.status", "RUNNING"), false},
		{"execution of another state machine", mutate(t, failed, "detail.stateMachineArn", strings.Replace(machineARN, transferMachine, "OtherStateMachine", 1)), false},
		{"another source", mutate(t, failed, "source", "custom.states"), false},
		{"another detail-type", mutate(t, failed, "detail-type", "Step Functions State Machine Status Change"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pattern.Match(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("rule %s pattern %s matched = %v, want %v", closed.LogicalID, closed.Pattern, got, tt.want)
			}
		})
	}

	t.Run("scheduled sweep comes from the Sweep schedule", func(t *testing.T) {
		var ev events.CloudWatchEvent
		if err := strict(read(t, "reaper-sweep-scheduled.json"), &ev); err != nil {
			t.Fatalf("decode as events.CloudWatchEvent: %v", err)
		}
		if sweep.ScheduleExpression != "rate(5 minutes)" {
			t.Errorf("rule %s runs %s; "+readmeFile+" says rate(5 minutes) deployed", sweep.LogicalID, sweep.ScheduleExpression)
		}
		if sweep.Input != "" {
			t.Errorf("rule %s sends constant input %s, not the scheduled event", sweep.LogicalID, sweep.Input)
		}
		ruleARN := eventbus.New(eventbus.Config{}).RuleARN(sweep.Name)
		for _, c := range []struct{ field, got, want string }{
			{"detail-type", ev.DetailType, "Scheduled Event"},
			{"source", ev.Source, "aws.events"},
			{"detail", string(ev.Detail), "{}"},
			{"resources", strings.Join(ev.Resources, ","), ruleARN},
		} {
			if c.got != c.want {
				t.Errorf("%s = %s, want %s", c.field, c.got, c.want)
			}
		}
	})
}

// TestScheduledEventIsWhatTheScheduleDelivers runs the template's Sweep
// schedule on the local event bus, sped up, and compares the first event
// it delivers with the sample (id and time aside).
func TestScheduledEventIsWhatTheScheduleDelivers(t *testing.T) {
	_, sweep := reaperRules(t)
	bus := eventbus.New(eventbus.Config{TimeScale: 1e-4, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	delivered := make(chan []byte, 1)
	err := bus.AddSchedule(sweep.Name, sweep.ScheduleExpression, eventbus.TargetFunc(func(_ context.Context, ev []byte) error {
		select {
		case delivered <- bytes.Clone(ev):
		default:
		}
		return nil
	}))
	if err != nil {
		t.Fatalf("schedule %s: %v", sweep.LogicalID, err)
	}
	var ev []byte
	select {
	case ev = <-delivered:
	case <-time.After(20 * time.Second):
		t.Fatal("the schedule delivered no event")
	}
	want := object(t, read(t, "reaper-sweep-scheduled.json"))
	got := object(t, ev)
	got["id"], got["time"] = want["id"], want["time"]
	sameJSON(t, "scheduled event", got, want)
}

// ---- the state machine -----------------------------------------------------

// network is how a part of the stack reaches DynamoDB.
type network int

const (
	// reachable: DynamoDB Local.
	reachable network = iota
	// refused: a loopback port nobody listens on, so every connection is
	// refused at once, as when DynamoDB cannot be reached at all.
	refused
	// partitioned: a loopback port that accepts connections and never
	// answers (blackHole), as over a network partition: a request hangs
	// until its caller gives up.
	partitioned
)

// refusedEndpoint is a loopback port nobody listens on.
const refusedEndpoint = "http://127.0.0.1:1"

// endpoint is the DynamoDB endpoint of a part on network n.
func endpoint(t *testing.T, n network) string {
	t.Helper()
	switch n {
	case reachable:
		return os.Getenv(ddbtest.EnvEndpoint) // checked by ddbtest.Client
	case refused:
		return refusedEndpoint
	case partitioned:
		return blackHole(t)
	}
	t.Fatalf("unknown network %d", n)
	return ""
}

// blackHole listens on a loopback port, accepts every connection and
// never reads or answers: it stands for a network partition between a
// client and DynamoDB. It closes the listener and the connections when
// the test ends.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("black hole: %v", err)
	}
	var conns []net.Conn // appended by the accept loop only, read after it ended
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// onNetwork returns client, or a copy of it that sends its requests to
// network n without retrying them, so the ledger reports the failure of
// the first attempt.
func onNetwork(t *testing.T, client *dynamodb.Client, n network) *dynamodb.Client {
	t.Helper()
	if n == reachable {
		return client
	}
	url := endpoint(t, n)
	return dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(url)
		o.RetryMaxAttempts = 1
	})
}

// retarget returns the state machine's definition with its dynamodb:*
// tasks on table. The template resolves !Ref IdempotencyTable, and so
// ${IdempotencyTableName}, to the table's name in cfn.Env{}, while each
// test works on copies of the tables under unique names (ddbtest.Tables):
// the definition must name the test's copy, as a deployed definition
// names the stack's table.
func retarget(t *testing.T, sm cfn.StateMachine, table string) []byte {
	t.Helper()
	r, err := cfn.NewResolver(tpl(t), cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := tpl(t).Resources["IdempotencyTable"]
	if !ok {
		t.Fatal("the template has no IdempotencyTable")
	}
	templateName, err := r.PhysicalName(res)
	if err != nil {
		t.Fatalf("IdempotencyTable name: %v", err)
	}
	field := regexp.MustCompile(`"TableName"\s*:\s*` + regexp.QuoteMeta(string(marshal(t, templateName))))
	def := field.ReplaceAll(sm.Definition, []byte(`"TableName": `+string(marshal(t, table))))

	var parsed struct {
		States map[string]struct {
			Resource   string `json:"Resource"`
			Parameters struct {
				TableName string `json:"TableName"`
			} `json:"Parameters"`
		} `json:"States"`
	}
	if err := json.Unmarshal(def, &parsed); err != nil {
		t.Fatalf("state machine definition: %v", err)
	}
	tasks := 0
	for name, st := range parsed.States {
		if !strings.HasPrefix(st.Resource, "arn:aws:states:::dynamodb:") {
			continue
		}
		tasks++
		if st.Parameters.TableName != table {
			t.Fatalf("state %s works on table %q, want %s (the template's %s)", name, st.Parameters.TableName, table, templateName)
		}
	}
	if tasks == 0 {
		t.Fatalf("the state machine has no dynamodb task on %s", templateName)
	}
	return def
}

// account is an account opened on the ledger before an execution.
type account struct {
	id       string
	currency string
	balance  int64
}

// ledgerParts are the real parts an execution works on: fresh copies of
// the template's tables on DynamoDB Local and the ledger on them.
type ledgerParts struct {
	client *dynamodb.Client
	tables ddbtest.TableNames
	ledger *ledger.Ledger
}

func newLedgerParts(t *testing.T, accounts []account) ledgerParts {
	t.Helper()
	client := ddbtest.Client(t)
	tables := ddbtest.Tables(t, client)
	p := ledgerParts{client: client, tables: tables}
	p.ledger = p.newLedger(t, client)
	for _, a := range accounts {
		// The accounts belong to the samples' caller (internal/api scopes
		// an IAM caller as "iam:" + its ARN).
		created, err := p.ledger.OpenAccount(t.Context(), a.id, "iam:arn:aws:iam::123456789012:user/payments-app", a.currency, a.balance)
		if err != nil || !created {
			t.Fatalf("OpenAccount(%s, %s, %d) = %v, %v; want a new account", a.id, a.currency, a.balance, created, err)
		}
	}
	return p
}

// newLedger is a ledger on the parts' tables through client.
func (p ledgerParts) newLedger(t *testing.T, client *dynamodb.Client) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(client, ledger.Config{LedgerTable: p.tables["LedgerTable"], IdempotencyTable: p.tables["IdempotencyTable"]})
	if err != nil {
		t.Fatalf("ledger.New: %v", err)
	}
	return l
}

func (p ledgerParts) records() *reservation.Store {
	return reservation.NewStore(p.client, p.tables["IdempotencyTable"])
}

// reserve puts the idempotency record of the workflow input RESERVED, as
// the orchestrator does before it starts the execution: the record of
// api-post-transfer.json's Idempotency-Key for its caller, with its
// canonical request, the input's transfer id and, as its creation time,
// the input's createdAt. It fails unless the orchestrator would start
// that record's execution with exactly this input.
func (p ledgerParts) reserve(t *testing.T, input string) {
	t.Helper()
	var in transfer.WorkflowInput
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		t.Fatal(err)
	}
	created, err := time.Parse(time.RFC3339Nano, in.CreatedAt)
	if err != nil {
		t.Fatalf("createdAt: %v", err)
	}
	post := decodeAPIEvent(t, read(t, "api-post-transfer.json"))
	req, err := transfer.ParseRequest([]byte(post.Body), 1<<62)
	if err != nil {
		t.Fatalf("api-post-transfer.json body: %v", err)
	}
	canonical := req.Canonical()
	// internal/api scopes an IAM caller as "iam:" + its ARN.
	scope, key := "iam:"+post.RequestContext.Identity.UserArn, post.Headers["Idempotency-Key"]
	store := reservation.NewStore(p.client, p.tables["IdempotencyTable"], reservation.WithClock(func() time.Time { return created }))
	rec, ok, err := store.Reserve(t.Context(), reservation.Reservation{
		Scope: scope, Key: key, Fingerprint: idempotency.Fingerprint(canonical), ResourceID: in.TransferID, Request: canonical,
		Attributes: ledger.RecordAttributes(req.SourceAccountID, req.DestinationAccountID, req.Amount, req.Currency),
	})
	if err != nil || !ok {
		t.Fatalf("Reserve = %v, %v; want a new record", ok, err)
	}
	if rec.Key != in.RecordKey {
		t.Fatalf("the record of Idempotency-Key %s for %s is %s, but the workflow input names %s", key, scope, rec.Key, in.RecordKey)
	}
	if again, err := transfer.NewWorkflowInput(rec); err != nil || string(again) != input {
		t.Fatalf("the orchestrator starts the reserved transfer with\n%s (%v), not the sample's input\n%s", again, err, input)
	}
}

// legs runs the real leg workers and records the payload of every
// invocation by function name.
type legs struct {
	workers map[string]*worker.Worker

	mu       sync.Mutex
	payloads map[string][][]byte
}

func newLegs(t *testing.T, fns map[string]cfn.Function, ledgers map[ledger.Kind]*ledger.Ledger) *legs {
	t.Helper()
	l := &legs{workers: map[string]*worker.Worker{}, payloads: map[string][][]byte{}}
	for id, kind := range map[string]ledger.Kind{"DebitFunction": ledger.Debit, "CreditFunction": ledger.Credit, "RefundFunction": ledger.Refund} {
		w, err := worker.New(kind, ledgers[kind], slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		l.workers[fns[id].Name] = w
	}
	return l
}

func (l *legs) InvokeFunction(ctx context.Context, name string, payload []byte) ([]byte, *sfnlocal.FunctionError, error) {
	l.mu.Lock()
	l.payloads[name] = append(l.payloads[name], bytes.Clone(payload))
	l.mu.Unlock()
	w, ok := l.workers[name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s", sfnlocal.ErrFunctionNotFound, name)
	}
	out, err := w.Invoke(ctx, payload)
	var fnErr messages.InvokeResponse_Error
	if errors.As(err, &fnErr) {
		return nil, &sfnlocal.FunctionError{Type: fnErr.Type, Message: fnErr.Message}, nil
	}
	return out, nil, err
}

func (l *legs) invocations(name string) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.payloads[name]
}

type publisher struct {
	mu     sync.Mutex
	events [][]byte
}

func (p *publisher) Publish(_ context.Context, event []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, bytes.Clone(event))
	return nil
}

func (p *publisher) last() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.events) == 0 {
		return nil
	}
	return p.events[len(p.events)-1]
}

// TestStateMachineSendsTheSamples runs the template's transfer state
// machine on the local Step Functions runtime (internal/local/sfnlocal)
// from the samples' workflow input, with its dynamodb tasks on DynamoDB
// Local and the real leg workers over the real ledger there. The failures
// are real ones: a ledger DynamoDB refuses to connect to, an account that
// does not exist, a network partition. The task payloads the machine
// sends are the task samples, and the status change events it publishes
// are the reaper samples (id and dates aside).
func TestStateMachineSendsTheSamples(t *testing.T) {
	sm := stateMachine(t)
	fns := functions(t)
	failedInput := workflowInput(t)
	var timedOut struct {
		Detail statusDetail `json:"detail"`
	}
	if err := json.Unmarshal(read(t, "reaper-execution-timed-out.json"), &timedOut); err != nil {
		t.Fatal(err)
	}
	const opening = 100000
	alice, bob := account{"demo-alice", "EUR", opening}, account{"demo-bob", "EUR", opening}
	tests := []struct {
		name  string
		input string
		// reserve puts the input's idempotency record RESERVED first, as
		// the orchestrator does. The timed-out transfer's Idempotency-Key
		// is in no sample, so its record cannot be reserved; that machine
		// never reaches the table anyway.
		reserve  bool
		accounts []account
		// creditNet is how the credit worker's ledger reaches DynamoDB,
		// machineNet how the machine's dynamodb tasks do.
		creditNet, machineNet network
		timeScale             float64
		// wantEvent is the sample the terminal status change event must
		// equal; wantStatus the status when there is none.
		wantEvent  string
		wantStatus string
		// wantTasks maps a function's logical ID to the sample every
		// invocation of it must equal.
		wantTasks map[string]string
		// wantRecord is the status the idempotency record ends in and
		// wantSource the source's balance, when the record was reserved.
		wantRecord reservation.Status
		wantSource int64
	}{
		{
			// The credit worker's ledger cannot connect to DynamoDB: the
			// ledger reports ErrUnavailable, the worker LedgerUnavailable,
			// the machine retries the credit, then fails. The debit stays
			// committed and the record IN_PROGRESS for the reaper.
			name: "credit unavailable after retries", input: failedInput, reserve: true,
			accounts: []account{alice, bob}, creditNet: refused, timeScale: 0.01,
			wantEvent:  "reaper-execution-failed.json",
			wantTasks:  map[string]string{"DebitFunction": "debit-task.json", "CreditFunction": "credit-task.json"},
			wantRecord: reservation.StatusInProgress, wantSource: opening - 2500,
		},
		{
			// demo-bob does not exist: the credit is AccountNotFound, the
			// debit is refunded and the transfer stored as FAILED.
			name: "credit rejected, debit refunded", input: failedInput, reserve: true,
			accounts: []account{alice}, timeScale: 0.01,
			wantStatus: "SUCCEEDED",
			wantTasks:  map[string]string{"DebitFunction": "debit-task.json", "CreditFunction": "credit-task.json", "RefundFunction": "refund-task.json"},
			wantRecord: reservation.StatusFailed, wantSource: opening,
		},
		{
			// A network partition between the machine and DynamoDB: the
			// first task's request hangs until the machine's
			// TimeoutSeconds (900 s, scaled down) ends the execution.
			name: "machine timeout", input: timedOut.Detail.Input,
			accounts: []account{alice, bob}, machineNet: partitioned, timeScale: 0.001,
			wantEvent: "reaper-execution-timed-out.json",
			wantTasks: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := newLedgerParts(t, tt.accounts)
			if tt.reserve {
				parts.reserve(t, tt.input)
			}
			lg := newLegs(t, fns, map[ledger.Kind]*ledger.Ledger{
				ledger.Debit:  parts.ledger,
				ledger.Credit: parts.newLedger(t, onNetwork(t, parts.client, tt.creditNet)),
				ledger.Refund: parts.ledger,
			})
			pub := &publisher{}
			srv := sfnlocal.New(sfnlocal.Config{
				DynamoDB:  sfnlocal.DynamoDBConfig{Endpoint: endpoint(t, tt.machineNet)},
				Lambda:    lg,
				Publisher: pub,
				TimeScale: tt.timeScale,
				Logger:    slog.New(slog.DiscardHandler),
			})
			t.Cleanup(func() { _ = srv.Close() })
			def := retarget(t, sm, parts.tables["IdempotencyTable"])
			if err := srv.AddStateMachine(sfnlocal.StateMachine{Name: sm.Name, ARN: sm.ARN, Definition: def}); err != nil {
				t.Fatal(err)
			}

			var in transfer.WorkflowInput
			if err := json.Unmarshal([]byte(tt.input), &in); err != nil {
				t.Fatal(err)
			}
			start := marshal(t, map[string]string{"stateMachineArn": sm.ARN, "name": in.TransferID, "input": tt.input})
			hr := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(start))
			hr.Header.Set("Content-Type", "application/x-amz-json-1.0")
			hr.Header.Set("X-Amz-Target", "AWSStepFunctions.StartExecution")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, hr)
			var started struct {
				ExecutionArn string `json:"executionArn"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &started); w.Code != http.StatusOK || err != nil {
				t.Fatalf("StartExecution: %d %s", w.Code, w.Body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			info, err := srv.Wait(ctx, started.ExecutionArn)
			if err != nil {
				t.Fatal(err)
			}

			ev := pub.last()
			if ev == nil {
				t.Fatal("no status change event was published")
			}
			if tt.wantEvent != "" {
				want := object(t, read(t, tt.wantEvent))
				got := object(t, ev)
				got["id"], got["time"] = want["id"], want["time"]
				gd, wd := got["detail"].(map[string]any), want["detail"].(map[string]any)
				gd["startDate"], gd["stopDate"] = wd["startDate"], wd["stopDate"]
				sameJSON(t, "status change event", got, want)
			} else if info.Status != tt.wantStatus {
				t.Errorf("execution %s: %s %s, want %s", info.Name, info.Status, info.Error, tt.wantStatus)
			}

			for _, id := range []string{"DebitFunction", "CreditFunction", "RefundFunction"} {
				calls := lg.invocations(fns[id].Name)
				file, want := tt.wantTasks[id]
				if !want {
					if len(calls) != 0 {
						t.Errorf("%s was invoked %d times, want none", id, len(calls))
					}
					continue
				}
				if len(calls) == 0 {
					t.Errorf("%s was not invoked", id)
				}
				for i, c := range calls {
					sameJSON(t, fmt.Sprintf("payload of %s invocation %d (%s)", id, i+1, file), generic(t, c), generic(t, read(t, file)))
				}
			}

			if tt.reserve {
				rec, err := parts.records().GetByRecordKey(t.Context(), in.RecordKey)
				if err != nil || rec.Status != tt.wantRecord {
					t.Errorf("record %s: %s, %v; want %s", in.RecordKey, rec.Status, err, tt.wantRecord)
				}
				source, err := parts.ledger.Account(t.Context(), alice.id)
				if err != nil || source.Balance != tt.wantSource {
					t.Errorf("%s balance %d, %v; want %d", alice.id, source.Balance, err, tt.wantSource)
				}
			}
		})
	}
}
