package telemetry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/exactlyonce/transfers/internal/telemetry/otlptest"
)

// newCollector is a receiver in the collector layer's place, answering
// status (0: 200).
func newCollector(t *testing.T, status int) *otlptest.Receiver {
	c := otlptest.NewReceiver()
	c.Status = status
	t.Cleanup(c.Close)
	return c
}

// service is an AWS endpoint that answers {} and keeps the trace header
// of each request.
func service(t *testing.T) (string, func() []string) {
	var mu sync.Mutex
	var headers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Get("X-Amzn-Trace-Id"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), headers...) }
}

// invoke runs one invocation of a handler that makes a DynamoDB and a
// Step Functions call, traced by tr, with the trace header header, and
// returns its answer.
func invoke(t *testing.T, tr *Tracing, endpoint, header string) string {
	t.Helper()
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String(endpoint),
	}
	tr.Instrument(&cfg)
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.TracerProvider = tr.SDKTracer() })
	sf := sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.TracerProvider = tr.SDKTracer() })
	h := tr.Wrap(lambda.NewHandler(func(ctx context.Context, in struct{ Name string }) (string, error) {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("transfers"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
			return "", err
		}
		if _, err := sf.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:T")}); err != nil {
			return "", err
		}
		return "hello " + in.Name, nil
	}))
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	if header != "" {
		//lint:ignore SA1029 the key is aws-lambda-go's own, a plain string
		ctx = context.WithValue(ctx, TraceHeaderKey, header)
	}
	out, err := h.Invoke(ctx, []byte(`{"Name":"ada"}`))
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	return string(out)
}

func hexID(b []byte) string { return hex.EncodeToString(b) }

// In a sampled invocation the invocation is a server span, the child of
// the trace header's segment, and each SDK call a client span, its child,
// whose trace header, sent to the service, names the call's span as the
// parent. The spans are sent once, when the invocation ends. An
// unsampled invocation sends nothing; one without a trace header starts a
// trace whose id X-Ray accepts. A collector that refuses the spans does
// not change the answer.
func TestInvocationSpans(t *testing.T) {
	const (
		root   = "5759e988bd862e3fe1be46a994272793"
		parent = "53995c3f42cd8ad8"
	)
	tests := []struct {
		name      string
		header    string
		status    int
		wantSpans bool
		wantTrace string // the spans' trace id; "" for a new X-Ray trace id
	}{
		{name: "sampled", header: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", wantSpans: true, wantTrace: root},
		{name: "not sampled", header: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0"},
		{name: "no trace header", wantSpans: true},
		{name: "collector refuses", header: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", status: http.StatusServiceUnavailable, wantSpans: true, wantTrace: root},
	}
	// otellambda names the invocation's span from the variable Lambda sets.
	t.Setenv(functionNameEnv, "orchestrator")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newCollector(t, tt.status)
			tr, err := New(env(map[string]string{TracesEndpointEnv: col.URL + "/v1/traces", functionNameEnv: "orchestrator"}))
			if err != nil || tr == nil {
				t.Fatalf("New: %v, %v", tr, err)
			}
			defer func() { _ = tr.Shutdown(context.Background()) }()
			endpoint, headers := service(t)
			if got := invoke(t, tr, endpoint, tt.header); got != `"hello ada"` {
				t.Fatalf("answer %s, want \"hello ada\"", got)
			}
			paths, spans := col.Received()
			if !tt.wantSpans {
				if len(spans) != 0 || len(paths) != 0 {
					t.Fatalf("exported %d spans in %d requests, want none", len(spans), len(paths))
				}
				for _, h := range headers() {
					if !strings.Contains(h, "Sampled=0") {
						t.Errorf("service got trace header %q, want the unsampled trace passed on", h)
					}
				}
				return
			}
			if len(paths) != 1 || paths[0] != "/v1/traces" {
				t.Fatalf("exports to %v, want one to /v1/traces when the invocation ends", paths)
			}
			byName := map[string]*tracepb.Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			server, get, start := byName["orchestrator"], byName["DynamoDB.GetItem"], byName["SFN.StartExecution"]
			if len(spans) != 3 || server == nil || get == nil || start == nil {
				t.Fatalf("spans %v, want orchestrator, DynamoDB.GetItem and SFN.StartExecution", byName)
			}
			trace := hexID(server.TraceId)
			if tt.wantTrace != "" && trace != tt.wantTrace {
				t.Errorf("trace id %s, want the header's %s", trace, tt.wantTrace)
			}
			if epoch, _ := time.Parse(time.RFC3339, "2020-01-01T00:00:00Z"); tt.wantTrace == "" {
				sec, _ := hexIDTime(trace)
				if sec.Before(epoch) || sec.After(time.Now().Add(time.Minute)) {
					t.Errorf("new trace id %s does not start with the time, as X-Ray requires", trace)
				}
			}
			if server.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("invocation span kind %v, want server", server.Kind)
			}
			if tt.header != "" && hexID(server.ParentSpanId) != parent {
				t.Errorf("invocation span's parent %s, want the header's %s", hexID(server.ParentSpanId), parent)
			}
			for _, call := range []*tracepb.Span{get, start} {
				if hexID(call.TraceId) != trace || hexID(call.ParentSpanId) != hexID(server.SpanId) || call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("%s: trace %s parent %s kind %v, want a client span, the child of the invocation's", call.Name, hexID(call.TraceId), hexID(call.ParentSpanId), call.Kind)
				}
			}
			if v := attr(get, "rpc.method"); v != `"GetItem"` {
				t.Errorf("GetItem span's rpc.method %s, want \"GetItem\"", v)
			}
			wantHeader := "Root=1-" + trace[:8] + "-" + trace[8:] + ";Parent=" + hexID(start.SpanId) + ";Sampled=1"
			if h := headers(); len(h) != 2 || h[1] != wantHeader {
				t.Errorf("StartExecution sent trace header %v, want %q", h, wantHeader)
			}
		})
	}
}

func hexIDTime(trace string) (time.Time, error) {
	b, err := hex.DecodeString(trace[:8])
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(b[0])<<24|int64(b[1])<<16|int64(b[2])<<8|int64(b[3]), 0), nil
}

// attr is the JSON of a span attribute's value: a string, or an array of
// strings.
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key != key {
			continue
		}
		if arr := kv.Value.GetArrayValue(); arr != nil {
			var vs []string
			for _, v := range arr.Values {
				vs = append(vs, v.GetStringValue())
			}
			b, _ := json.Marshal(vs)
			return string(b)
		}
		b, _ := json.Marshal(kv.Value.GetStringValue())
		return string(b)
	}
	return ""
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// Tracing is on only with an endpoint, and only for a configuration it
// can honour.
func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantOn  bool
		wantErr string
	}{
		{name: "no endpoint", env: map[string]string{}},
		{name: "traces endpoint", env: map[string]string{TracesEndpointEnv: "http://localhost:4318/v1/traces"}, wantOn: true},
		{name: "base endpoint", env: map[string]string{EndpointEnv: "http://localhost:4318/"}, wantOn: true},
		{name: "explicit protocol", env: map[string]string{TracesEndpointEnv: "http://localhost:4318/v1/traces", ProtocolEnv: "http/protobuf"}, wantOn: true},
		{name: "sdk disabled", env: map[string]string{TracesEndpointEnv: "http://localhost:4318/v1/traces", SDKDisabledEnv: "true"}},
		{name: "grpc protocol", env: map[string]string{TracesEndpointEnv: "http://localhost:4317", TracesProtocolEnv: "grpc"}, wantErr: "only http/protobuf"},
		{name: "not a URL", env: map[string]string{TracesEndpointEnv: "localhost:4318"}, wantErr: "not an http(s) URL"},
		{name: "cleartext on the loopback address", env: map[string]string{TracesEndpointEnv: "http://127.0.0.1:4318/v1/traces"}, wantOn: true},
		{name: "cleartext on IPv6 loopback", env: map[string]string{TracesEndpointEnv: "http://[::1]:4318/v1/traces"}, wantOn: true},
		{name: "cleartext to another host", env: map[string]string{TracesEndpointEnv: "http://collector.example.com:4318/v1/traces"}, wantErr: "cleartext"},
		{name: "cleartext to a private address", env: map[string]string{EndpointEnv: "http://10.0.0.7:4318"}, wantErr: "cleartext"},
		{name: "TLS to another host", env: map[string]string{TracesEndpointEnv: "https://collector.example.com/v1/traces"}, wantOn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := New(env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New: %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if (tr != nil) != tt.wantOn {
				t.Fatalf("tracing on = %v, want %v", tr != nil, tt.wantOn)
			}
			_ = tr.Shutdown(context.Background())
		})
	}
}

// Tracing off changes neither the SDK's middleware nor the handler.
func TestOffChangesNothing(t *testing.T) {
	var tr *Tracing
	if p := tr.SDKTracer(); p != nil {
		t.Errorf("SDKTracer = %v with tracing off, want nil", p)
	}
	var cfg aws.Config
	tr.Instrument(&cfg)
	if len(cfg.APIOptions) != 0 {
		t.Errorf("Instrument added %d API options with tracing off", len(cfg.APIOptions))
	}
	h := lambda.NewHandler(func() error { return nil })
	if got := tr.Wrap(h); got != h {
		t.Errorf("Wrap returned another handler with tracing off")
	}
}

// The base endpoint gets /v1/traces added, as the OpenTelemetry
// specification says.
func TestBaseEndpoint(t *testing.T) {
	col := newCollector(t, 0)
	tr, err := New(env(map[string]string{EndpointEnv: col.URL + "/"}))
	if err != nil {
		t.Fatal(err)
	}
	endpoint, _ := service(t)
	invoke(t, tr, endpoint, "")
	if paths, _ := col.Received(); len(paths) != 1 || paths[0] != "/v1/traces" {
		t.Errorf("exports to %v, want /v1/traces", paths)
	}
}
