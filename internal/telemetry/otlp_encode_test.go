package telemetry

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// encodeTraces writes what the generated message types write, read back
// with them: every kind of attribute value, events, links, statuses,
// local and remote parents, several resources and scopes.
func TestEncodeTracesMatchesTheMessageTypes(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := func(s byte, remote bool) trace.SpanContext {
		ts, _ := trace.ParseTraceState("a=1,b=2")
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{s, 1, 2, 3, 4, 5, 6, 7}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: remote})
	}
	attrs := []attribute.KeyValue{
		attribute.Bool("t", true), attribute.Bool("f", false), attribute.Int64("i", -42), attribute.Int64("zero", 0),
		attribute.Float64("d", 1.5), attribute.Float64("dz", 0), attribute.String("s", "x"), attribute.String("empty", ""),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -1, 0}),
		attribute.Float64Slice("ds", []float64{0.25}), attribute.StringSlice("ss", []string{"a", ""}),
		{Key: "", Value: attribute.StringValue("keyless")},
	}
	res1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.0.0", attribute.String("service.name", "orchestrator"))
	res2 := resource.NewSchemaless()
	start := time.Unix(1764150000, 123456789)
	stubs := tracetest.SpanStubs{
		{Name: "invoke", SpanContext: sc(1, false), Parent: sc(9, true), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(time.Millisecond), Attributes: attrs, Resource: res1,
			InstrumentationScope: instrumentation.Scope{Name: "otellambda", Version: "0.1", SchemaURL: "u"},
			Events:               []sdktrace.Event{{Name: "e", Time: start, Attributes: attrs[:3], DroppedAttributeCount: 2}, {Name: "bare"}},
			Links:                []sdktrace.Link{{SpanContext: sc(7, false), Attributes: attrs[3:5], DroppedAttributeCount: 1}, {SpanContext: trace.SpanContext{}}},
			Status:               sdktrace.Status{Code: codes.Error, Description: "boom"}, DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5},
		{Name: "DynamoDB.PutItem", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start.Add(time.Microsecond), Resource: res1,
			InstrumentationScope: instrumentation.Scope{Name: "github.com/aws/aws-sdk-go-v2/service/dynamodb"}, Status: sdktrace.Status{Code: codes.Ok}},
		{Name: "other scope", SpanContext: sc(3, false), Resource: res1, SpanKind: trace.SpanKindProducer,
			InstrumentationScope: instrumentation.Scope{Name: "otellambda", Version: "0.1", SchemaURL: "u"}},
		{Name: "", SpanContext: sc(4, false), Resource: res2, SpanKind: trace.SpanKindConsumer},
		{Name: "no resource", SpanContext: sc(5, false), SpanKind: trace.SpanKindInternal},
		{Name: "unspecified", SpanContext: sc(6, false), SpanKind: trace.SpanKind(99), Resource: res2},
	}
	spans := stubs.Snapshots()
	var got tracepb.TracesData
	if err := proto.Unmarshal(encodeTraces(spans), &got); err != nil {
		t.Fatal(err)
	}
	if want := refTracesData(spans); !proto.Equal(&got, want) {
		t.Fatalf("encodeTraces reads back as\n%v\nthe message types write\n%v", &got, want)
	}
	// Nested and map values, which the SDK's attributes do not hold but
	// the encoder accepts.
	nested := []attribute.Value{attribute.SliceValue(attribute.StringValue("a"), attribute.IntValue(1)),
		attribute.MapValue(attribute.String("k", "v"), attribute.Bool("b", false)), attribute.ByteSliceValue([]byte{0, 1}), attribute.ByteSliceValue(nil), {}}
	for _, v := range nested {
		var gotV commonpb.AnyValue
		if err := proto.Unmarshal(anyValue(nil, v), &gotV); err != nil {
			t.Fatal(err)
		}
		if want := refAnyValue(v); !proto.Equal(&gotV, want) {
			t.Errorf("%v: anyValue reads back as %v, the message types write %v", v, &gotV, want)
		}
	}
}

// refTracesData is the exporter's former encoding, through the
// generated message types: the reference encodeTraces is read back
// against. It groups spans by resource, then by instrumentation scope, in
// the order they come.
func refTracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	td := &tracepb.TracesData{}
	resources := map[*resource.Resource]*tracepb.ResourceSpans{}
	scopes := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rs, ok := resources[res]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: refKeyValues(res.Attributes())}}
			if res != nil {
				rs.SchemaUrl = res.SchemaURL()
			}
			resources[res] = rs
			td.ResourceSpans = append(td.ResourceSpans, rs)
		}
		key := scopeKey{res: res, scope: s.InstrumentationScope()}
		ss, ok := scopes[key]
		if !ok {
			ss = &tracepb.ScopeSpans{
				Scope:     &commonpb.InstrumentationScope{Name: key.scope.Name, Version: key.scope.Version},
				SchemaUrl: key.scope.SchemaURL,
			}
			scopes[key] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, refSpan(s))
	}
	return td
}

func refSpan(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	out := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  uint32(sc.TraceFlags()),
		Name:                   s.Name(),
		Kind:                   refSpanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             refKeyValues(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Status:                 refStatus(s.Status()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		pid := p.SpanID()
		out.ParentSpanId = pid[:]
		if p.IsRemote() {
			out.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		} else {
			out.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
		}
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, &tracepb.Span_Event{
			Name:                   ev.Name,
			TimeUnixNano:           unixNano(ev.Time),
			Attributes:             refKeyValues(ev.Attributes),
			DroppedAttributesCount: uint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             refKeyValues(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags:                  uint32(l.SpanContext.TraceFlags()),
		})
	}
	return out
}

func refSpanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func refStatus(s sdktrace.Status) *tracepb.Status {
	switch s.Code {
	case codes.Error:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Description}
	case codes.Ok:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_UNSET}
}

func refKeyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: refAnyValue(kv.Value)})
	}
	return out
}

func refAnyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return refArray(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue { return refAnyValue(attribute.BoolValue(b)) })
	case attribute.INT64SLICE:
		return refArray(v.AsInt64Slice(), func(n int64) *commonpb.AnyValue { return refAnyValue(attribute.Int64Value(n)) })
	case attribute.FLOAT64SLICE:
		return refArray(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue { return refAnyValue(attribute.Float64Value(f)) })
	case attribute.STRINGSLICE:
		return refArray(v.AsStringSlice(), func(s string) *commonpb.AnyValue { return refAnyValue(attribute.StringValue(s)) })
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.SLICE:
		return refArray(v.AsSlice(), refAnyValue)
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: refKeyValues(v.AsMap())}}}
	case attribute.EMPTY:
		return &commonpb.AnyValue{}
	}
	// A type this encoder does not know is sent as its text.
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

func refArray[T any](vs []T, conv func(T) *commonpb.AnyValue) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, 0, len(vs))}
	for _, v := range vs {
		arr.Values = append(arr.Values, conv(v))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
