package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/transfers/internal/telemetry"
)

// newLogger is the deployed functions' logger: aws-lambda-go's JSON
// logger (timestamp, level, message, requestId), plus on every line
// logged during an invocation its X-Ray trace id (traceId, the Root of
// the trace header Lambda passes) and coldStart, true during the first
// invocation of the execution environment, and when the invocation is
// traced (package telemetry), spanId, the id of the span in which the line
// was logged.
func newLogger() *slog.Logger {
	return slog.New(invocationHandler{next: lambdacontext.NewLogHandler(), first: &firstInvocation{}})
}

// firstInvocation remembers the request id of the environment's first
// invocation.
type firstInvocation struct {
	once sync.Once
	id   string
}

// invocationHandler adds traceId and coldStart to records logged in an
// invocation's context (see newLogger).
type invocationHandler struct {
	next  slog.Handler
	first *firstInvocation
}

var _ slog.Handler = invocationHandler{}

func (h invocationHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h invocationHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		h.first.once.Do(func() { h.first.id = lc.AwsRequestID })
		r.AddAttrs(slog.Bool("coldStart", lc.AwsRequestID == h.first.id))
		if header, _ := ctx.Value(telemetry.TraceHeaderKey).(string); header != "" {
			r.AddAttrs(slog.String("traceId", traceRoot(header)))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && sc.IsSampled() {
			r.AddAttrs(slog.String("spanId", sc.SpanID().String()))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h invocationHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return invocationHandler{next: h.next.WithAttrs(attrs), first: h.first}
}

func (h invocationHandler) WithGroup(name string) slog.Handler {
	return invocationHandler{next: h.next.WithGroup(name), first: h.first}
}

// traceRoot is the trace id of an X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=...;Sampled=1"), or
// the header itself when it has no Root.
func traceRoot(header string) string {
	for part := range strings.SplitSeq(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	return header
}
