package xray

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/xray/xraytest"
)

const (
	traceRoot   = "1-5759e988-bd862e3fe1be46a994272793"
	traceParent = "53995c3f42cd8ad8"
)

// service answers every request with status and body, as a DynamoDB or
// Step Functions endpoint would, and keeps each request's trace header.
type service struct {
	srv          *httptest.Server
	mu           sync.Mutex
	traceHeaders []string
	status       int
	body         string
}

func newService(t *testing.T, status int, body string) *service {
	t.Helper()
	s := &service{status: status, body: body}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.traceHeaders = append(s.traceHeaders, r.Header.Get(TraceHeader))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", "REQ123")
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(s.body))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *service) headers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.traceHeaders)
}

// config is a client configuration on the service, traced by tr, that
// does not retry.
func config(s *service, tr *Tracer) aws.Config {
	cfg := aws.Config{
		Region:           "eu-west-1",
		Credentials:      credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint:     aws.String(s.srv.URL),
		RetryMaxAttempts: 1,
	}
	tr.Instrument(&cfg.APIOptions)
	return cfg
}

func newTracer(t *testing.T, addr string) *Tracer {
	t.Helper()
	tr, err := NewTracer(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func getItem(ctx context.Context, cfg aws.Config) error {
	_, err := dynamodb.NewFromConfig(cfg).GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("ledger"),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
	})
	return err
}

func transactWrite(ctx context.Context, cfg aws.Config) error {
	_, err := dynamodb.NewFromConfig(cfg).TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("idem"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}},
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("ledger"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}, ConditionExpression: aws.String("attribute_exists(pk)")}},
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("idem"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "b"}}, ConditionExpression: aws.String("attribute_exists(pk)")}},
		},
	})
	return err
}

func startExecution(ctx context.Context, cfg aws.Config) error {
	_, err := sfn.NewFromConfig(cfg).StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String("arn:aws:states:eu-west-1:123456789012:stateMachine:T"),
		Name:            aws.String("t1"),
	})
	return err
}

// document is what a test reads of a subsegment.
type document struct {
	Name      string  `json:"name"`
	ID        string  `json:"id"`
	TraceID   string  `json:"trace_id"`
	ParentID  string  `json:"parent_id"`
	Type      string  `json:"type"`
	Namespace string  `json:"namespace"`
	StartTime float64 `json:"start_time"`
	EndTime   float64 `json:"end_time"`
	Error     bool    `json:"error"`
	Throttle  bool    `json:"throttle"`
	Fault     bool    `json:"fault"`
	HTTP      struct {
		Response struct {
			Status int `json:"status"`
		} `json:"response"`
	} `json:"http"`
	AWS struct {
		Operation  string   `json:"operation"`
		Region     string   `json:"region"`
		RequestID  string   `json:"request_id"`
		TableName  string   `json:"table_name"`
		TableNames []string `json:"table_names"`
	} `json:"aws"`
	Cause *struct {
		Exceptions []struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Remote bool   `json:"remote"`
		} `json:"exceptions"`
	} `json:"cause"`
}

var hexID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// Within a sampled trace, each call sends one datagram: the daemon's
// header line, then the call's subsegment under the invocation's segment;
// the service gets the trace with the subsegment as its parent.
func TestCallsAreSubsegments(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		call      func(context.Context, aws.Config) error
		wantName  string
		wantOp    string
		wantTable string
		wantNames []string
		wantErr   bool
		// flags
		wantError, wantThrottle, wantFault bool
		wantCause                          string
	}{
		{name: "DynamoDB GetItem", status: 200, body: `{}`, call: getItem,
			wantName: "DynamoDB", wantOp: "GetItem", wantTable: "ledger"},
		{name: "a transaction across two tables", status: 200, body: `{}`, call: transactWrite,
			wantName: "DynamoDB", wantOp: "TransactWriteItems", wantNames: []string{"idem", "ledger"}},
		{name: "Step Functions StartExecution", status: 200, body: `{"executionArn":"arn:aws:states:eu-west-1:123456789012:execution:T:t1","startDate":1}`, call: startExecution,
			wantName: "SFN", wantOp: "StartExecution"},
		{name: "a refused condition is a client error", status: 400,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`,
			call: getItem, wantName: "DynamoDB", wantOp: "GetItem", wantTable: "ledger", wantErr: true,
			wantError: true, wantCause: "ConditionalCheckFailedException"},
		{name: "throttling", status: 400,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}`,
			call: getItem, wantName: "DynamoDB", wantOp: "GetItem", wantTable: "ledger", wantErr: true,
			wantError: true, wantThrottle: true, wantCause: "ThrottlingException"},
		{name: "a server error is a fault", status: 500,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"oops"}`,
			call: getItem, wantName: "DynamoDB", wantOp: "GetItem", wantTable: "ledger", wantErr: true,
			wantFault: true, wantCause: "InternalServerError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := xraytest.NewDaemon(t)
			svc := newService(t, tt.status, tt.body)
			cfg := config(svc, newTracer(t, d.Addr()))
			ctx := ContextWithTraceHeader(context.Background(), "Root="+traceRoot+";Parent="+traceParent+";Sampled=1;Lineage=a87bd80c:0")

			before := epochSeconds(time.Now())
			err := tt.call(ctx, cfg)
			after := epochSeconds(time.Now())
			if (err != nil) != tt.wantErr {
				t.Fatalf("call: %v, want error %v", err, tt.wantErr)
			}

			msg := d.Next(t, 5*time.Second)
			head, body, ok := bytes.Cut(msg, []byte("\n"))
			if !ok || string(head) != `{"format": "json", "version": 1}` {
				t.Fatalf("datagram %q, want the daemon header line first", msg)
			}
			var doc document
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("subsegment %s: %v", body, err)
			}
			switch {
			case doc.Type != "subsegment" || doc.Namespace != "aws":
				t.Errorf("type %q namespace %q, want subsegment aws", doc.Type, doc.Namespace)
			case doc.TraceID != traceRoot || doc.ParentID != traceParent:
				t.Errorf("trace %s parent %s, want the invocation's %s %s", doc.TraceID, doc.ParentID, traceRoot, traceParent)
			case !hexID.MatchString(doc.ID) || doc.ID == traceParent:
				t.Errorf("id %q, want a new 16-hex-digit id", doc.ID)
			case doc.StartTime < before || doc.EndTime < doc.StartTime || doc.EndTime > after:
				t.Errorf("start %f end %f, want within %f..%f", doc.StartTime, doc.EndTime, before, after)
			case doc.Name != tt.wantName || doc.AWS.Operation != tt.wantOp || doc.AWS.Region != "eu-west-1":
				t.Errorf("%s %s in %s, want %s %s in eu-west-1", doc.Name, doc.AWS.Operation, doc.AWS.Region, tt.wantName, tt.wantOp)
			case doc.AWS.RequestID != "REQ123" || doc.HTTP.Response.Status != tt.status:
				t.Errorf("request id %q status %d, want REQ123 %d", doc.AWS.RequestID, doc.HTTP.Response.Status, tt.status)
			case doc.AWS.TableName != tt.wantTable || !slices.Equal(doc.AWS.TableNames, tt.wantNames):
				t.Errorf("table %q tables %v, want %q %v", doc.AWS.TableName, doc.AWS.TableNames, tt.wantTable, tt.wantNames)
			case doc.Error != tt.wantError || doc.Throttle != tt.wantThrottle || doc.Fault != tt.wantFault:
				t.Errorf("error %v throttle %v fault %v, want %v %v %v", doc.Error, doc.Throttle, doc.Fault, tt.wantError, tt.wantThrottle, tt.wantFault)
			}
			if tt.wantCause != "" {
				if doc.Cause == nil || len(doc.Cause.Exceptions) != 1 || doc.Cause.Exceptions[0].Type != tt.wantCause ||
					!doc.Cause.Exceptions[0].Remote || !hexID.MatchString(doc.Cause.Exceptions[0].ID) {
					t.Errorf("cause %+v, want one remote %s", doc.Cause, tt.wantCause)
				}
			} else if doc.Cause != nil {
				t.Errorf("cause %+v, want none", doc.Cause)
			}

			want := "Root=" + traceRoot + ";Parent=" + doc.ID + ";Sampled=1;Lineage=a87bd80c:0"
			if got := svc.headers(); len(got) != 1 || got[0] != want {
				t.Errorf("service got trace headers %q, want [%q]", got, want)
			}
			if extra := d.Next(t, 50*time.Millisecond); extra != nil {
				t.Errorf("a second datagram %s for one call", extra)
			}
		})
	}
}

// Outside a sampled trace nothing is sent and the call is made as
// without tracing; a Tracer without a daemon adds no middleware.
func TestNothingSentOutsideASampledTrace(t *testing.T) {
	tests := []struct {
		name   string
		header string // "" is no header in the context
		noAddr bool
	}{
		{name: "no trace header"},
		{name: "not sampled", header: "Root=" + traceRoot + ";Parent=" + traceParent + ";Sampled=0"},
		{name: "sampling not decided", header: "Root=" + traceRoot + ";Parent=" + traceParent + ";Sampled=?"},
		{name: "no parent", header: "Root=" + traceRoot + ";Sampled=1"},
		{name: "no daemon address", header: "Root=" + traceRoot + ";Parent=" + traceParent + ";Sampled=1", noAddr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := xraytest.NewDaemon(t)
			svc := newService(t, 200, `{}`)
			addr := d.Addr()
			if tt.noAddr {
				addr = ""
			}
			tr := newTracer(t, addr)
			cfg := config(svc, tr)
			if tt.noAddr && (tr.Enabled() || len(cfg.APIOptions) != 0) {
				t.Errorf("a tracer without a daemon is enabled or adds middleware")
			}
			ctx := context.Background()
			if tt.header != "" {
				ctx = ContextWithTraceHeader(ctx, tt.header)
			}
			if err := getItem(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if msg := d.Next(t, 200*time.Millisecond); msg != nil {
				t.Errorf("sent %s, want nothing", msg)
			}
			if got := svc.headers(); len(got) != 1 || strings.Contains(got[0], "Sampled=1") {
				t.Errorf("service got trace headers %q, want one request with no sampled trace of ours", got)
			}
		})
	}
}

// A daemon that is not there costs the call nothing: the subsegment is
// dropped, the call answers.
func TestCallsWorkWithoutADaemonListening(t *testing.T) {
	d := xraytest.NewDaemon(t)
	addr := d.Addr()
	d.Close() // nothing listens on addr any more
	svc := newService(t, 200, `{}`)
	cfg := config(svc, newTracer(t, addr))
	ctx := ContextWithTraceHeader(context.Background(), "Root="+traceRoot+";Parent="+traceParent+";Sampled=1")
	for range 3 {
		if err := getItem(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewTracer(t *testing.T) {
	tests := []struct {
		name        string
		addr        string
		wantEnabled bool
		wantRemote  string
		wantErr     bool
	}{
		{name: "unset", addr: ""},
		{name: "host and port", addr: "127.0.0.1:2000", wantEnabled: true, wantRemote: "127.0.0.1:2000"},
		{name: "udp and tcp parts", addr: "tcp:127.0.0.1:2000 udp:127.0.0.1:2001", wantEnabled: true, wantRemote: "127.0.0.1:2001"},
		{name: "tcp part only", addr: "tcp:127.0.0.1:2000", wantErr: true},
		{name: "no port", addr: "127.0.0.1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTracer(tt.addr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewTracer(%q) error %v, want error %v", tt.addr, err, tt.wantErr)
			}
			defer tr.Close()
			if tr.Enabled() != tt.wantEnabled {
				t.Fatalf("enabled %v, want %v", tr.Enabled(), tt.wantEnabled)
			}
			if tt.wantEnabled && tr.conn.RemoteAddr().String() != tt.wantRemote {
				t.Errorf("sends to %s, want %s", tr.conn.RemoteAddr(), tt.wantRemote)
			}
		})
	}
}

func TestParseTraceHeader(t *testing.T) {
	tests := []struct {
		name           string
		header         string
		wantOK         bool
		wantDownstream string
	}{
		{"Lambda's", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", true,
			"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=ffffffffffffffff;Sampled=1"},
		{"with lineage and spaces", "Root=1-5759e988-bd862e3fe1be46a994272793; Parent=53995c3f42cd8ad8; Sampled=1; Lineage=a87bd80c:1", true,
			"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=ffffffffffffffff;Sampled=1;Lineage=a87bd80c:1"},
		{"a load balancer's Self is not passed on", "Self=1-67891234-12456789abcdef012345678;Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", true,
			"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=ffffffffffffffff;Sampled=1"},
		{"not sampled", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0", false, ""},
		{"no root", "Parent=53995c3f42cd8ad8;Sampled=1", false, ""},
		{"empty", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, ok := parseTraceHeader(tt.header)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if ok && tr.downstream("ffffffffffffffff") != tt.wantDownstream {
				t.Errorf("downstream %q, want %q", tr.downstream("ffffffffffffffff"), tt.wantDownstream)
			}
		})
	}
}
