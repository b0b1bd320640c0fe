package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// exporter sends spans to an OTLP/HTTP traces endpoint, as binary
// protobuf: the protocol the ADOT collector layer receives on
// localhost:4318 and X-Ray's OTLP endpoint accepts.
//
// The OpenTelemetry project's own OTLP/HTTP exporter (otlptracehttp) is
// not used because it links gRPC into every function: measured on a
// minimal traced handler (linux/arm64, stripped), it adds 5.3 MiB more than
// this exporter does, which would take the functions' bootstraps (10.3
// MiB) past the 12 MiB the project holds them to (make bench). The request
// body is a TracesData message (opentelemetry/proto/trace/v1), which is
// wire-compatible with the collector's ExportTraceServiceRequest, written
// field by field (encodeTraces): the generated message types of
// go.opentelemetry.io/proto/otlp and the protobuf runtime they need built
// their descriptors at every cold start, for one message written per
// invocation. TestEncodeTracesMatchesTheMessageTypes reads it back with
// those types.
type exporter struct {
	url    string
	client *http.Client
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

// exportTimeout bounds one export: the collector is on the same host, so
// a slow one is a broken one, and the invocation must not wait on it.
const exportTimeout = 2 * time.Second

func newExporter(url string) *exporter {
	return &exporter{url: url, client: &http.Client{Timeout: exportTimeout}}
}

// ExportSpans posts spans as one OTLP request. A refusal (any status but
// 2xx) is an error, which the SDK reports through its error handler; the
// spans are not retried.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body := encodeTraces(spans)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: export %d spans: %s answered %s", len(spans), e.url, resp.Status)
	}
	return nil
}

// Shutdown has nothing to release: each export is one request.
func (e *exporter) Shutdown(context.Context) error { return nil }

// encodeTraces writes spans as one TracesData message in the protobuf
// wire format, grouped by resource, then by instrumentation scope, in the
// order they come. A field with its default value is left out, as proto3
// does, except in a oneof (an attribute's value) and for present
// submessages.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	type scopeSpans struct {
		scope instrumentation.Scope
		spans [][]byte
	}
	type resourceSpans struct {
		res    *resource.Resource
		scopes []*scopeSpans
	}
	var order []*resourceSpans
	resources := map[*resource.Resource]*resourceSpans{}
	scopes := map[scopeKey]*scopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rs, ok := resources[res]
		if !ok {
			rs = &resourceSpans{res: res}
			resources[res] = rs
			order = append(order, rs)
		}
		key := scopeKey{res: res, scope: s.InstrumentationScope()}
		ss, ok := scopes[key]
		if !ok {
			ss = &scopeSpans{scope: key.scope}
			scopes[key] = ss
			rs.scopes = append(rs.scopes, ss)
		}
		ss.spans = append(ss.spans, encodeSpan(nil, s))
	}
	var td pb
	for _, rs := range order {
		var r pb
		var resMsg pb
		schema := ""
		if rs.res != nil {
			for _, kv := range rs.res.Attributes() {
				resMsg = resMsg.msg(1, keyValue(nil, kv))
			}
			schema = rs.res.SchemaURL()
		}
		r = r.msg(1, resMsg)
		for _, ss := range rs.scopes {
			var sc, scope pb
			scope = scope.str(1, ss.scope.Name).str(2, ss.scope.Version)
			sc = sc.msg(1, scope)
			for _, sp := range ss.spans {
				sc = sc.msg(2, sp)
			}
			sc = sc.str(3, ss.scope.SchemaURL)
			r = r.msg(2, sc)
		}
		r = r.str(3, schema)
		td = td.msg(1, r)
	}
	return td
}

// Flags of a span (opentelemetry.proto.trace.v1.SpanFlags).
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// Kinds of a span (opentelemetry.proto.trace.v1.Span.SpanKind) and codes
// of its status (Status.StatusCode).
const (
	kindUnspecified = iota
	kindInternal
	kindServer
	kindClient
	kindProducer
	kindConsumer

	statusUnset = 0
	statusOk    = 1
	statusError = 2
)

func encodeSpan(b pb, s sdktrace.ReadOnlySpan) pb {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := uint32(sc.TraceFlags())
	var parent []byte
	if p := s.Parent(); p.SpanID().IsValid() {
		pid := p.SpanID()
		parent = pid[:]
		flags |= spanFlagsHasIsRemote
		if p.IsRemote() {
			flags |= spanFlagsIsRemote
		}
	}
	b = b.bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String()).bytes(4, parent)
	b = b.str(5, s.Name()).uvarint(6, spanKind(s.SpanKind()))
	b = b.fixed64(7, unixNano(s.StartTime())).fixed64(8, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = b.msg(9, keyValue(nil, kv))
	}
	b = b.uvarint(10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		var e pb
		e = e.fixed64(1, unixNano(ev.Time)).str(2, ev.Name)
		for _, kv := range ev.Attributes {
			e = e.msg(3, keyValue(nil, kv))
		}
		e = e.uvarint(4, uint64(ev.DroppedAttributeCount))
		b = b.msg(11, e)
	}
	b = b.uvarint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		var m pb
		m = m.bytes(1, ltid[:]).bytes(2, lsid[:]).str(3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			m = m.msg(4, keyValue(nil, kv))
		}
		m = m.uvarint(5, uint64(l.DroppedAttributeCount)).fixed32(6, uint32(l.SpanContext.TraceFlags()))
		b = b.msg(13, m)
	}
	b = b.uvarint(14, uint64(s.DroppedLinks()))
	var st pb
	switch status := s.Status(); status.Code {
	case codes.Error:
		st = st.str(2, status.Description).uvarint(3, statusError)
	case codes.Ok:
		st = st.uvarint(3, statusOk)
	}
	b = b.msg(15, st)
	return b.fixed32(16, flags)
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return kindInternal
	case trace.SpanKindServer:
		return kindServer
	case trace.SpanKindClient:
		return kindClient
	case trace.SpanKindProducer:
		return kindProducer
	case trace.SpanKindConsumer:
		return kindConsumer
	}
	return kindUnspecified
}

// keyValue appends a KeyValue message's fields.
func keyValue(b pb, kv attribute.KeyValue) pb {
	return b.str(1, string(kv.Key)).msg(2, anyValue(nil, kv.Value))
}

// anyValue appends an AnyValue message's fields: its oneof, set even to
// a default value.
func anyValue(b pb, v attribute.Value) pb {
	switch v.Type() {
	case attribute.BOOL:
		n := uint64(0)
		if v.AsBool() {
			n = 1
		}
		return b.tag(2, wireVarint).varint(n)
	case attribute.INT64:
		return b.tag(3, wireVarint).varint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(b.tag(4, wireFixed64), math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		return b.tag(1, wireBytes).lenPrefixed([]byte(v.AsString()))
	case attribute.BOOLSLICE:
		return array(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.BYTESLICE:
		return b.tag(7, wireBytes).lenPrefixed(v.AsByteSlice())
	case attribute.SLICE:
		return array(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		var kvs pb
		for _, kv := range v.AsMap() {
			kvs = kvs.msg(1, keyValue(nil, kv))
		}
		return b.tag(6, wireBytes).lenPrefixed(kvs)
	case attribute.EMPTY:
		return b
	}
	// A type this encoder does not know is sent as its text.
	return b.tag(1, wireBytes).lenPrefixed([]byte(v.String()))
}

// array appends an AnyValue's array_value of vs.
func array[T any](b pb, vs []T, conv func(T) attribute.Value) pb {
	var arr pb
	for _, v := range vs {
		arr = arr.msg(1, anyValue(nil, conv(v)))
	}
	return b.tag(5, wireBytes).lenPrefixed(arr)
}

// Wire types of the protobuf encoding.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb is a protobuf message being written. Its scalar methods leave a
// field with its default value out.
type pb []byte

func (b pb) tag(field, wire int) pb { return b.varint(uint64(field)<<3 | uint64(wire)) }

func (b pb) varint(v uint64) pb { return binary.AppendUvarint(b, v) }

func (b pb) lenPrefixed(v []byte) pb { return append(b.varint(uint64(len(v))), v...) }

func (b pb) str(field int, s string) pb {
	if s == "" {
		return b
	}
	return append(b.tag(field, wireBytes).varint(uint64(len(s))), s...)
}

func (b pb) bytes(field int, v []byte) pb {
	if len(v) == 0 {
		return b
	}
	return b.tag(field, wireBytes).lenPrefixed(v)
}

func (b pb) uvarint(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return b.tag(field, wireVarint).varint(v)
}

func (b pb) fixed64(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(b.tag(field, wireFixed64), v)
}

func (b pb) fixed32(field int, v uint32) pb {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(b.tag(field, wireFixed32), v)
}

// msg appends a present submessage, empty or not.
func (b pb) msg(field int, m []byte) pb { return b.tag(field, wireBytes).lenPrefixed(m) }
