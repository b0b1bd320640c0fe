package otel_test

import (
	"context"
	"errors"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	idemotel "github.com/exactlyonce/transfers/idempotency/otel"
)

// The key and the scope: neither may show in any attribute.
const (
	rawKey = "order-7f3a-SECRET"
	scope  = "alice@example.com"
)

type order struct {
	Key    string `json:"key"`
	Amount int    `json:"amount"`
}

type world struct {
	idem   *idempotency.Idempotency
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer *sdktrace.TracerProvider
	clock  *idemtest.Clock
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), clock: idemtest.NewClock(time.Unix(1_772_366_400, 0))}
	w.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	obs, err := idemotel.New(idemotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader))))
	if err != nil {
		t.Fatal(err)
	}
	w.idem, err = idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 8, Observer: obs, Clock: w.clock.Now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var op = idempotency.Operation[order]{Name: "charge", Scope: scope, KeyFunc: func(o order) (string, error) { return o.Key, nil }}

// do runs one call in a span of its own.
func (w *world) do(t *testing.T, o order, fn func(context.Context, order) (int, error)) error {
	t.Helper()
	ctx, span := w.tracer.Tracer("test").Start(t.Context(), "handler")
	defer span.End()
	_, err := idempotency.Do(ctx, w.idem, op, o, fn)
	return err
}

func TestObserver(t *testing.T) {
	w := newWorld(t)
	charge := func(_ context.Context, o order) (int, error) {
		w.clock.Advance(250 * time.Millisecond)
		return o.Amount, nil
	}
	if err := w.do(t, order{rawKey, 100}, charge); err != nil { // completed: 2 store calls
		t.Fatal(err)
	}
	if err := w.do(t, order{rawKey, 100}, charge); err != nil { // cached: none
		t.Fatal(err)
	}
	if err := w.do(t, order{rawKey, 5}, charge); !errors.Is(err, idempotency.ErrKeyReused) { // key reused, from the cache
		t.Fatalf("Do = %v, want ErrKeyReused", err)
	}

	var rm metricdata.ResourceMetrics
	if err := w.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	storeCalls := map[string]int64{}
	var histCount uint64
	var histSum float64
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != idemotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, idemotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					noRawValues(t, m.Name, dp.Attributes.ToSlice())
					k := label(dp.Attributes)
					switch m.Name {
					case idemotel.MetricCalls:
						calls[k] += dp.Value
					case idemotel.MetricStoreCalls:
						storeCalls[k] += dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name != idemotel.MetricDuration || m.Unit != "s" {
					t.Errorf("histogram %s in %q", m.Name, m.Unit)
				}
				for _, dp := range data.DataPoints {
					noRawValues(t, m.Name, dp.Attributes.ToSlice())
					histCount += dp.Count
					histSum += dp.Sum
				}
			default:
				t.Errorf("metric %s of type %T", m.Name, m.Data)
			}
		}
	}
	wantCalls := map[string]int64{"charge/completed": 1, "charge/cached": 1, "charge/key_reused": 1}
	if !maps.Equal(calls, wantCalls) {
		t.Errorf("%s = %v, want %v", idemotel.MetricCalls, calls, wantCalls)
	}
	if want := map[string]int64{"charge/completed": 2}; !maps.Equal(storeCalls, want) {
		t.Errorf("%s = %v, want %v", idemotel.MetricStoreCalls, storeCalls, want)
	}
	if histCount != 3 || histSum != 0.25 {
		t.Errorf("%s: %d values summing to %vs, want 3 summing to 0.25s (the fake clock's)", idemotel.MetricDuration, histCount, histSum)
	}

	spans := w.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	wantOutcomes := []string{"completed", "cached", "key_reused"}
	rk := idempotency.RecordKey(scope, rawKey)
	for n, s := range spans {
		noRawValues(t, "span attributes", s.Attributes())
		if len(s.Events()) != 1 {
			t.Fatalf("span %d has %d events, want 1", n, len(s.Events()))
		}
		ev := s.Events()[0]
		noRawValues(t, "span event", ev.Attributes)
		got := attribute.NewSet(ev.Attributes...)
		if ev.Name != idemotel.EventName {
			t.Errorf("event %q, want %q", ev.Name, idemotel.EventName)
		}
		for k, want := range map[attribute.Key]attribute.Value{
			idemotel.AttrOperation:  attribute.StringValue("charge"),
			idemotel.AttrOutcome:    attribute.StringValue(wantOutcomes[n]),
			idemotel.AttrRecordKey:  attribute.StringValue(rk),
			idemotel.AttrStoreCalls: attribute.IntValue([]int{2, 0, 0}[n]),
			idemotel.AttrRan:        attribute.BoolValue(n == 0),
			idemotel.AttrFromCache:  attribute.BoolValue(n > 0),
			idemotel.AttrTookOver:   attribute.BoolValue(false),
		} {
			if v, ok := got.Value(k); !ok || v != want {
				t.Errorf("span %d: %s = %v, want %v", n, k, v.String(), want.String())
			}
		}
		if got.Len() != 7 {
			t.Errorf("span %d event attributes %v, want the 7 named", n, ev.Attributes)
		}
	}
}

// Without a recording span, metrics only.
func TestObserverWithoutSpan(t *testing.T) {
	w := newWorld(t)
	if _, err := idempotency.Do(t.Context(), w.idem, op, order{rawKey, 1}, func(context.Context, order) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := w.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	if n := len(rm.ScopeMetrics); n != 1 || len(rm.ScopeMetrics[0].Metrics) != 3 {
		t.Errorf("metrics = %+v, want the three instruments", rm.ScopeMetrics)
	}
	if n := len(w.spans.Ended()); n != 0 {
		t.Errorf("%d spans", n)
	}
}

func noRawValues(t *testing.T, where string, attrs []attribute.KeyValue) {
	t.Helper()
	for _, kv := range attrs {
		v := kv.Value.String()
		if strings.Contains(v, rawKey) || strings.Contains(v, scope) || strings.Contains(string(kv.Key), rawKey) {
			t.Errorf("%s: attribute %s = %q holds the raw key or the scope", where, kv.Key, v)
		}
	}
}

func label(s attribute.Set) string {
	op, _ := s.Value(idemotel.AttrOperation)
	out, _ := s.Value(idemotel.AttrOutcome)
	return op.AsString() + "/" + out.AsString()
}

// The package builds with the OpenTelemetry API alone: the SDK is for
// the tests.
func TestNoSDK(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, m := range strings.Fields(string(out)) {
		if strings.HasPrefix(m, "go.opentelemetry.io/otel/sdk") {
			t.Errorf("the package builds with %s", m)
		}
	}
	if !strings.Contains(string(out), "go.opentelemetry.io/otel/metric") {
		t.Errorf("go list -deps lists no go.opentelemetry.io/otel/metric: %s", out)
	}
}
