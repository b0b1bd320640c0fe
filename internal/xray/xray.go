// Package xray makes every AWS SDK for Go v2 call of a traced Lambda
// invocation an X-Ray subsegment of the invocation's trace, as the X-Ray
// SDK's AWS v2 instrumentation does, without its dependencies (the X-Ray
// SDK brings the AWS SDK v1, gRPC and protobuf into every binary).
//
// A Tracer adds middleware to the SDK's APIOptions. For a call whose
// context carries the invocation's trace header (aws-lambda-go puts
// Lambda's Lambda-Runtime-Trace-Id in the context of each invocation,
// under the key "x-amzn-trace-id") with Sampled=1, it records the
// call's service (the SDK's service ID, such as DynamoDB or SFN), its
// operation, region, request ID, retries, HTTP status and the
// error/fault/throttle flags, the DynamoDB table names, and the start and
// end times; it passes the trace on to the service with the subsegment as
// the parent (the X-Amzn-Trace-Id header, so that a Step Functions
// execution joins the trace); and when the call returns it sends the
// subsegment to the X-Ray daemon as one UDP datagram:
//
//	{"format": "json", "version": 1}
//	{"type":"subsegment","trace_id":...,"parent_id":...,"name":"DynamoDB",...}
//
// Sending waits for nothing: the daemon (Lambda runs it beside the
// function, at AWS_XRAY_DAEMON_ADDRESS) does not answer, and errors are
// ignored. A call without a trace header, not sampled, or made with a
// Tracer that has no daemon address, records and sends nothing.
package xray

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// DaemonAddressEnv is the variable in which Lambda gives the X-Ray
// daemon's address to a traced function.
const DaemonAddressEnv = "AWS_XRAY_DAEMON_ADDRESS"

// traceHeaderKey is the context key under which aws-lambda-go stores the
// invocation's trace header (lambda.handleInvoke); it is a plain string
// there, so it is one here.
const traceHeaderKey = "x-amzn-trace-id"

// TraceHeader is the HTTP header that carries a trace to a service.
const TraceHeader = "X-Amzn-Trace-Id"

// daemonHeader starts every datagram to the daemon.
const daemonHeader = `{"format": "json", "version": 1}` + "\n"

// sendTimeout bounds a send that finds the socket's buffer full: the
// subsegment is dropped rather than the call held up.
const sendTimeout = time.Millisecond

// Tracer records AWS SDK calls and sends them to one X-Ray daemon. Its
// methods are safe for concurrent use.
type Tracer struct {
	conn *net.UDPConn // nil: no daemon, nothing recorded
}

// NewTracer returns a Tracer that sends to the daemon at addr:
// "host:port", or the "udp:host:port tcp:host:port" form the X-Ray SDKs
// accept (subsegments go over UDP). An empty addr gives a Tracer that
// records nothing. Resolving addr and opening the socket are the only
// work done here; nothing is sent until a traced call ends.
func NewTracer(addr string) (*Tracer, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return &Tracer{}, nil
	}
	if strings.Contains(addr, " ") || strings.HasPrefix(addr, "udp:") || strings.HasPrefix(addr, "tcp:") {
		udp := ""
		for _, part := range strings.Fields(addr) {
			if v, ok := strings.CutPrefix(part, "udp:"); ok {
				udp = v
			}
		}
		if udp == "" {
			return &Tracer{}, fmt.Errorf("xray: daemon address %q has no udp: part", addr)
		}
		addr = udp
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return &Tracer{}, fmt.Errorf("xray: daemon address %q: %w", addr, err)
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return &Tracer{}, fmt.Errorf("xray: daemon address %q: %w", addr, err)
	}
	return &Tracer{conn: conn}, nil
}

// FromEnv is NewTracer with the daemon address Lambda gives a traced
// function (AWS_XRAY_DAEMON_ADDRESS); unset, the Tracer records nothing.
func FromEnv() (*Tracer, error) {
	return NewTracer(os.Getenv(DaemonAddressEnv))
}

// Enabled reports whether the Tracer has a daemon to send to.
func (t *Tracer) Enabled() bool { return t != nil && t.conn != nil }

// Close closes the socket to the daemon.
func (t *Tracer) Close() error {
	if !t.Enabled() {
		return nil
	}
	return t.conn.Close()
}

// Instrument adds the Tracer's middleware to the API options of an AWS
// configuration (aws.Config.APIOptions), so that every client built from
// it records its calls. A Tracer without a daemon adds nothing.
func (t *Tracer) Instrument(apiOptions *[]func(*middleware.Stack) error) {
	if !t.Enabled() {
		return
	}
	*apiOptions = append(*apiOptions, t.addMiddleware)
}

// ContextWithTraceHeader returns ctx carrying the trace header h as
// aws-lambda-go carries an invocation's: for callers outside an
// invocation (tests, a local runtime) that trace SDK calls.
func ContextWithTraceHeader(ctx context.Context, h string) context.Context {
	//lint:ignore SA1029 the key must be aws-lambda-go's, a plain string.
	return context.WithValue(ctx, traceHeaderKey, h)
}

// subsegmentKey holds the call's subsegment in its context, from the
// Initialize step to the Build step that passes the trace on.
type subsegmentKey struct{}

func (t *Tracer) addMiddleware(stack *middleware.Stack) error {
	// After the SDK's own Initialize middleware, as the X-Ray SDK adds
	// its own: the service ID and operation are set by then, and the
	// subsegment spans the whole call, retries included.
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("XRaySubsegment", t.record), middleware.After); err != nil {
		return fmt.Errorf("xray: %w", err)
	}
	// First in Build, so that the SDK's recursion detection, which sets
	// the Lambda's own trace header when none is set, keeps this one.
	if err := stack.Build.Add(middleware.BuildMiddlewareFunc("XRayTraceHeader", passTrace), middleware.Before); err != nil {
		return fmt.Errorf("xray: %w", err)
	}
	return nil
}

// record times the call and sends its subsegment when the call is part of
// a sampled trace.
func (t *Tracer) record(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	h, _ := ctx.Value(traceHeaderKey).(string)
	tr, ok := parseTraceHeader(h)
	if !ok {
		return next.HandleInitialize(ctx, in)
	}
	seg := &subsegment{
		trace:     tr,
		Name:      awsmiddleware.GetServiceID(ctx),
		ID:        newID(),
		TraceID:   tr.root,
		ParentID:  tr.parent,
		Type:      "subsegment",
		Namespace: "aws",
		AWS: awsData{
			Operation: awsmiddleware.GetOperationName(ctx),
			Region:    awsmiddleware.GetRegion(ctx),
		},
	}
	seg.AWS.TableName, seg.AWS.TableNames = tableNames(in.Parameters)
	start := time.Now()
	out, md, err := next.HandleInitialize(context.WithValue(ctx, subsegmentKey{}, seg), in)
	end := time.Now()
	seg.StartTime, seg.EndTime = epochSeconds(start), epochSeconds(end)
	seg.result(md, err)
	t.send(seg)
	return out, md, err
}

// passTrace sets the trace header of the request to the call's
// subsegment, so the service's own segment is its child.
func passTrace(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (
	middleware.BuildOutput, middleware.Metadata, error,
) {
	if seg, ok := ctx.Value(subsegmentKey{}).(*subsegment); ok {
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			req.Header.Set(TraceHeader, seg.trace.downstream(seg.ID))
		}
	}
	return next.HandleBuild(ctx, in)
}

// send writes the subsegment to the daemon in one datagram; it never
// waits on the daemon, and a failed send is dropped.
func (t *Tracer) send(seg *subsegment) {
	doc, err := json.Marshal(seg)
	if err != nil {
		return
	}
	_ = t.conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	_, _ = t.conn.Write(append([]byte(daemonHeader), doc...))
}

// subsegment is the X-Ray segment document of one AWS call.
type subsegment struct {
	trace trace

	Name      string  `json:"name"`
	ID        string  `json:"id"`
	TraceID   string  `json:"trace_id"`
	ParentID  string  `json:"parent_id"`
	Type      string  `json:"type"`
	Namespace string  `json:"namespace"`
	StartTime float64 `json:"start_time"`
	EndTime   float64 `json:"end_time"`
	// Error is a client error (4xx), Throttle a throttled call (429 or a
	// throttling error code), Fault a server error (5xx) or a call that
	// got no answer.
	Error    bool      `json:"error,omitempty"`
	Throttle bool      `json:"throttle,omitempty"`
	Fault    bool      `json:"fault,omitempty"`
	HTTP     *httpData `json:"http,omitempty"`
	AWS      awsData   `json:"aws"`
	Cause    *cause    `json:"cause,omitempty"`
}

type awsData struct {
	Operation  string   `json:"operation"`
	Region     string   `json:"region,omitempty"`
	RequestID  string   `json:"request_id,omitempty"`
	Retries    int      `json:"retries,omitempty"`
	TableName  string   `json:"table_name,omitempty"`
	TableNames []string `json:"table_names,omitempty"`
}

type httpData struct {
	Response httpResponse `json:"response"`
}

type httpResponse struct {
	Status        int   `json:"status"`
	ContentLength int64 `json:"content_length,omitempty"`
}

type cause struct {
	Exceptions []exception `json:"exceptions"`
}

type exception struct {
	ID      string `json:"id"`
	Type    string `json:"type,omitempty"`
	Message string `json:"message,omitempty"`
	// Remote: the error is the service's answer, not the client's.
	Remote bool `json:"remote,omitempty"`
}

// maxMessage bounds an exception's message, keeping the datagram small.
const maxMessage = 1024

// result fills in what the call's answer says: the response's status,
// request ID and retries, and the error.
func (s *subsegment) result(md middleware.Metadata, err error) {
	var resp *smithyhttp.Response
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		resp = respErr.Response
		s.AWS.RequestID = respErr.ServiceRequestID()
	} else {
		resp, _ = awsmiddleware.GetRawResponse(md).(*smithyhttp.Response)
		s.AWS.RequestID, _ = awsmiddleware.GetRequestIDMetadata(md)
	}
	if attempts, ok := retry.GetAttemptResults(md); ok && len(attempts.Results) > 1 {
		s.AWS.Retries = len(attempts.Results) - 1
	}
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
		s.HTTP = &httpData{Response: httpResponse{Status: status, ContentLength: max(resp.ContentLength, 0)}}
	}
	switch {
	case status == 429:
		s.Error, s.Throttle = true, true
	case status >= 400 && status < 500:
		s.Error = true
	case status >= 500:
		s.Fault = true
	}
	if err == nil {
		return
	}
	e := exception{ID: newID(), Message: err.Error()}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		e.Type, e.Message, e.Remote = apiErr.ErrorCode(), apiErr.ErrorMessage(), true
		if _, ok := retry.DefaultThrottleErrorCodes[apiErr.ErrorCode()]; ok {
			s.Throttle = true
		}
	}
	if len(e.Message) > maxMessage {
		e.Message = e.Message[:maxMessage]
	}
	if status == 0 {
		// No answer from the service (a network error, a cancelled
		// context): the call failed on its way, a fault.
		s.Fault = true
	}
	s.Cause = &cause{Exceptions: []exception{e}}
}

// trace is the part of an invocation's trace header a subsegment needs.
type trace struct {
	root, parent string
	// rest are the header's other fields (Lineage=..., say), passed on
	// unchanged.
	rest []string
}

// parseTraceHeader reads "Root=1-...;Parent=...;Sampled=1[;...]". It
// reports false unless the header names a root and a parent and is
// sampled.
func parseTraceHeader(h string) (trace, bool) {
	var t trace
	sampled := false
	for part := range strings.SplitSeq(h, ";") {
		part = strings.TrimSpace(part)
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "Root":
			t.root = v
		case "Parent":
			t.parent = v
		case "Sampled":
			sampled = v == "1"
		case "Self", "":
			// Self is a load balancer's, not passed on.
		default:
			t.rest = append(t.rest, part)
		}
	}
	return t, sampled && t.root != "" && t.parent != ""
}

// downstream is the trace header of a call made in subsegment id.
func (t trace) downstream(id string) string {
	var b strings.Builder
	b.WriteString("Root=" + t.root + ";Parent=" + id + ";Sampled=1")
	for _, r := range t.rest {
		b.WriteString(";" + r)
	}
	return b.String()
}

// newID is a random 64-bit segment id in 16 hex digits; ids need only be
// unique within a trace, not secret.
func newID() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// epochSeconds is t in seconds since the epoch, with its fraction.
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(time.Second)
}
