// Package telemetry traces the Lambda functions with OpenTelemetry: a
// span for each invocation (the otellambda instrumentation) and a child
// span for each AWS SDK call it makes (otelaws), in the invocation's X-Ray
// trace, exported over OTLP/HTTP to the collector of the AWS Distro for
// OpenTelemetry (its Lambda layer listens on localhost:4318 and sends the
// spans on to X-Ray).
//
// It is configured by the standard OpenTelemetry variables, so that the
// template turns it on by setting one:
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the traces URL
//     (http://localhost:4318/v1/traces for the layer), or
//     OTEL_EXPORTER_OTLP_ENDPOINT, the base URL to which /v1/traces is
//     added. Neither set: tracing is off, and New returns a nil *Tracing
//     whose methods change nothing.
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
//     only http/protobuf is supported.
//   - OTEL_SDK_DISABLED=true turns tracing off.
//   - OTEL_SERVICE_NAME, else AWS_LAMBDA_FUNCTION_NAME, names the service.
//
// Spans follow the sampling decision of the trace header Lambda gives each
// invocation (Sampled=1 or 0): an unsampled invocation records and sends
// nothing. Trace and span ids are X-Ray's (the xray propagator and ID
// generator), so that the collector's X-Ray exporter accepts them and an
// SDK call passes the trace on in its X-Amzn-Trace-Id header: a Step
// Functions execution started in a traced invocation joins its trace.
// Spans are batched and sent once, when the invocation ends.
package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/tracing"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-lambda-go/otellambda"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Variables read by New.
const (
	TracesEndpointEnv  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EndpointEnv        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	TracesProtocolEnv  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	ProtocolEnv        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	SDKDisabledEnv     = "OTEL_SDK_DISABLED"
	ServiceNameEnv     = "OTEL_SERVICE_NAME"
	functionNameEnv    = "AWS_LAMBDA_FUNCTION_NAME"
	functionVersionEnv = "AWS_LAMBDA_FUNCTION_VERSION"
	regionEnv          = "AWS_REGION"
)

// TraceHeaderKey is the context key under which aws-lambda-go passes an
// invocation's X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1");
// it is a plain string there, so it is one here.
const TraceHeaderKey = "x-amzn-trace-id"

// Tracing traces one function. A nil *Tracing is tracing turned off.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// New configures tracing from env (see the package documentation). It
// returns nil and no error when tracing is off, and an error for a
// configuration it cannot honour; nothing is sent until an invocation
// ends.
func New(env func(string) string) (*Tracing, error) {
	if strings.EqualFold(strings.TrimSpace(env(SDKDisabledEnv)), "true") {
		return nil, nil
	}
	endpoint := strings.TrimSpace(env(TracesEndpointEnv))
	if endpoint == "" {
		if base := strings.TrimSpace(env(EndpointEnv)); base != "" {
			endpoint = strings.TrimRight(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return nil, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: %s %q is not an http(s) URL", TracesEndpointEnv, endpoint)
	}
	// Spans name transfers, accounts and callers: in cleartext only to a
	// collector on this host (the ADOT layer's, on localhost).
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("telemetry: %s %q sends spans in cleartext to another host: use https, or a collector on localhost", TracesEndpointEnv, endpoint)
	}
	protocol := env(TracesProtocolEnv)
	if protocol == "" {
		protocol = env(ProtocolEnv)
	}
	if protocol != "" && protocol != "http/protobuf" {
		return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported, only http/protobuf", protocol)
	}
	service := env(ServiceNameEnv)
	if service == "" {
		service = env(functionNameEnv)
	}
	attrs := []attribute.KeyValue{
		semconv.CloudProviderAWS,
		semconv.CloudPlatformAWSLambda,
	}
	for _, a := range []struct {
		val  string
		attr func(string) attribute.KeyValue
	}{
		{service, semconv.ServiceName},
		{env(regionEnv), semconv.CloudRegion},
		{env(functionNameEnv), semconv.FaaSName},
		{env(functionVersionEnv), semconv.FaaSVersion},
	} {
		if a.val != "" {
			attrs = append(attrs, a.attr(a.val))
		}
	}
	return &Tracing{provider: sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(sdkOperations{sdktrace.NewBatchSpanProcessor(newExporter(u.String()))}),
		sdktrace.WithIDGenerator(xray.NewIDGenerator()),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)),
	)}, nil
}

// Instrument passes the trace on from each AWS SDK call of the clients
// built from cfg to the service, in the X-Amzn-Trace-Id header with the
// call's span as the parent, so that a Step Functions execution started in
// a traced invocation joins its trace under the StartExecution span.
func (t *Tracing) Instrument(cfg *aws.Config) {
	if t == nil {
		return
	}
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		// The operation's span is the context's in the initialize step;
		// in the finalize step it is that of a step inside it, which
		// sdkOperations drops.
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("RememberOperationSpan", func(
			ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler,
		) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, operationSpanKey{}, trace.SpanContextFromContext(ctx)), in)
		}), middleware.After); err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("PropagateTrace", func(
			ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler,
		) (middleware.FinalizeOutput, middleware.Metadata, error) {
			op, _ := ctx.Value(operationSpanKey{}).(trace.SpanContext)
			if req, ok := in.Request.(*smithyhttp.Request); ok && op.IsValid() {
				xray.Propagator{}.Inject(trace.ContextWithSpanContext(ctx, op), propagation.HeaderCarrier(req.Header))
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
	})
}

type operationSpanKey struct{}

// SDKTracer is the tracer provider for the AWS SDK's clients (their
// Options.TracerProvider): each call is a span of the invocation's trace.
// It is nil when tracing is off.
func (t *Tracing) SDKTracer() tracing.TracerProvider {
	if t == nil {
		return nil
	}
	return smithyoteltracing.Adapt(t.provider)
}

// Wrap makes each invocation of h a span, the child of the invocation's
// X-Ray trace header, and sends the invocation's spans when it ends.
func (t *Tracing) Wrap(h lambda.Handler) lambda.Handler {
	if t == nil {
		return h
	}
	return otellambda.WrapHandler(h,
		otellambda.WithTracerProvider(t.provider),
		otellambda.WithFlusher(t.provider),
		otellambda.WithPropagator(invocationHeader{}))
}

// Shutdown sends what is left and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// sdkOperations keeps, of the spans the AWS SDK makes, those of its
// operations (DynamoDB.PutItem, SFN.StartExecution): it drops the spans
// of the steps inside one (serialising, signing, each attempt, ...), a
// dozen per call, which would bury the calls in the trace.
type sdkOperations struct{ sdktrace.SpanProcessor }

// sdkScope starts the instrumentation scope of every AWS SDK client's
// spans ("github.com/aws/aws-sdk-go-v2/service/dynamodb").
const sdkScope = "github.com/aws/aws-sdk-go-v2/"

func (p sdkOperations) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanKind() == trace.SpanKindInternal && strings.HasPrefix(s.InstrumentationScope().Name, sdkScope) {
		return
	}
	p.SpanProcessor.OnEnd(s)
}

// invocationHeader extracts the trace of an invocation from the trace
// header aws-lambda-go puts in its context (the carrier, built from the
// event, has none).
type invocationHeader struct{ xray.Propagator }

func (p invocationHeader) Extract(ctx context.Context, _ propagation.TextMapCarrier) context.Context {
	header, _ := ctx.Value(TraceHeaderKey).(string)
	if header == "" {
		return ctx
	}
	return p.Propagator.Extract(ctx, propagation.HeaderCarrier{"X-Amzn-Trace-Id": []string{header}})
}

// loopback reports a host name of this host: localhost or a loopback
// address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
