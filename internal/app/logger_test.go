package app

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/transfers/internal/telemetry"
)

func TestInvocationFields(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(invocationHandler{next: slog.NewJSONHandler(&buf, nil), first: &firstInvocation{}}).With("function", "debit")
	invocation := func(requestID, traceHeader string) context.Context {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
		if traceHeader != "" {
			//lint:ignore SA1029 the key is aws-lambda-go's own, a plain string
			ctx = context.WithValue(ctx, telemetry.TraceHeaderKey, traceHeader)
		}
		return ctx
	}
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	inSpan := func(ctx context.Context, flags trace.TraceFlags) context.Context {
		return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{0x57, 0x59, 0xe9, 0x88, 1},
			SpanID:     trace.SpanID{0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11},
			TraceFlags: flags,
		}))
	}
	tests := []struct {
		name string
		ctx  context.Context
		want map[string]any // fields and their values; nil value: absent
	}{
		{"init, outside an invocation", context.Background(), map[string]any{"coldStart": nil, "traceId": nil}},
		{"the first invocation", invocation("req-1", header), map[string]any{"coldStart": true, "traceId": "1-5759e988-bd862e3fe1be46a994272793"}},
		{"the first invocation again", invocation("req-1", header), map[string]any{"coldStart": true}},
		{"a later invocation", invocation("req-2", "Root=1-aaaaaaaa-bbbbbbbbbbbbbbbbbbbbbbbb"), map[string]any{"coldStart": false, "traceId": "1-aaaaaaaa-bbbbbbbbbbbbbbbbbbbbbbbb"}},
		{"no trace header", invocation("req-3", ""), map[string]any{"coldStart": false, "traceId": nil, "spanId": nil}},
		{"in a sampled span", inSpan(invocation("req-4", header), trace.FlagsSampled), map[string]any{"spanId": "0a0b0c0d0e0f1011"}},
		{"in an unsampled span", inSpan(invocation("req-5", header), 0), map[string]any{"spanId": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			log.InfoContext(tc.ctx, "line")
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("%v: %s", err, buf.String())
			}
			for k, want := range tc.want {
				if v, ok := got[k]; want == nil && ok {
					t.Errorf("%s = %v, want no such field", k, v)
				} else if want != nil && v != want {
					t.Errorf("%s = %v, want %v", k, v, want)
				}
			}
			if got["function"] != "debit" {
				t.Errorf("the logger's own attributes are lost: %v", got)
			}
		})
	}
}

func TestTraceRoot(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "1-5759e988-bd862e3fe1be46a994272793"},
		{"Parent=53995c3f42cd8ad8; Root=1-a-b", "1-a-b"},
		{"opaque", "opaque"},
	} {
		if got := traceRoot(tc.header); got != tc.want {
			t.Errorf("traceRoot(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}
