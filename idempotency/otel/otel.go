// Package otel records the calls of idempotency.Do as OpenTelemetry
// metrics and span events: an idempotency.Observer for
// idempotency.Config.Observer.
//
// Each call adds one to the counter idempotency.calls, its store calls to
// idempotency.store.calls, and its duration, in seconds, to the
// histogram idempotency.duration, each with the attributes
// idempotency.operation (Operation.Name) and idempotency.outcome
// (idempotency.CallOutcome). When the call's context holds a recording
// span, the span gets an event named "idempotency" with those attributes
// and idempotency.record_key, idempotency.store_calls, idempotency.ran,
// idempotency.from_cache and idempotency.took_over. Neither the
// idempotency key nor the scope is ever an attribute: the record key is
// their SHA-256, and the operation is the fixed name the code gives it.
// The error of a call is not recorded either, as its text may hold
// anything; the outcome says what happened.
//
// It is a module of its own, so that the idempotency module builds with
// no OpenTelemetry module; it requires the OpenTelemetry API (otel,
// otel/metric, otel/trace), not the SDK.
package otel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/transfers/idempotency"
)

// ScopeName is the instrumentation scope of the meter.
const ScopeName = "github.com/exactlyonce/transfers/idempotency/otel"

// Metric, event and attribute names.
const (
	MetricCalls      = "idempotency.calls"
	MetricStoreCalls = "idempotency.store.calls"
	MetricDuration   = "idempotency.duration"
	EventName        = "idempotency"

	AttrOperation  = attribute.Key("idempotency.operation")
	AttrOutcome    = attribute.Key("idempotency.outcome")
	AttrRecordKey  = attribute.Key("idempotency.record_key")
	AttrStoreCalls = attribute.Key("idempotency.store_calls")
	AttrRan        = attribute.Key("idempotency.ran")
	AttrFromCache  = attribute.Key("idempotency.from_cache")
	AttrTookOver   = attribute.Key("idempotency.took_over")
)

// durationBounds are the histogram's bucket boundaries, in seconds: from
// a replay from the cache (microseconds) to a long call.
var durationBounds = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// maxSets bounds the attribute sets kept for reuse: operations are a
// handful of fixed names, outcomes a dozen.
const maxSets = 1024

// Observer records events as metrics and span events. It is safe for
// concurrent use.
type Observer struct {
	calls, storeCalls metric.Int64Counter
	duration          metric.Float64Histogram

	mu   sync.RWMutex
	sets map[setKey]metric.MeasurementOption
}

type setKey struct {
	operation string
	outcome   idempotency.CallOutcome
}

var _ idempotency.Observer = (*Observer)(nil)

type config struct {
	provider metric.MeterProvider
}

// Option configures New.
type Option func(*config)

// WithMeterProvider takes the meter from mp instead of the global
// provider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.provider = mp }
}

// New returns an Observer whose instruments come from the global meter
// provider, or the one of WithMeterProvider.
func New(opts ...Option) (*Observer, error) {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.provider == nil {
		c.provider = otel.GetMeterProvider()
	}
	m := c.provider.Meter(ScopeName)
	o := &Observer{sets: map[setKey]metric.MeasurementOption{}}
	var err error
	if o.calls, err = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Calls of idempotency.Do, by operation and outcome.")); err != nil {
		return nil, err
	}
	if o.storeCalls, err = m.Int64Counter(MetricStoreCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Calls to the idempotency store made by idempotency.Do, by operation and outcome.")); err != nil {
		return nil, err
	}
	if o.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of the calls of idempotency.Do, the function's run included."),
		metric.WithExplicitBucketBoundaries(durationBounds...)); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe implements idempotency.Observer.
func (o *Observer) Observe(ctx context.Context, ev idempotency.Event) {
	attrs := o.attributes(ev.Operation, ev.Outcome)
	o.calls.Add(ctx, 1, attrs)
	if ev.StoreCalls > 0 {
		o.storeCalls.Add(ctx, int64(ev.StoreCalls), attrs)
	}
	o.duration.Record(ctx, ev.Duration.Seconds(), attrs)
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(EventName, trace.WithAttributes(
		AttrOperation.String(ev.Operation),
		AttrOutcome.String(string(ev.Outcome)),
		AttrRecordKey.String(ev.RecordKey),
		AttrStoreCalls.Int(ev.StoreCalls),
		AttrRan.Bool(ev.Ran),
		AttrFromCache.Bool(ev.FromCache),
		AttrTookOver.Bool(ev.TookOver),
	))
}

// attributes is the measurement option of (operation, outcome), made once.
func (o *Observer) attributes(operation string, outcome idempotency.CallOutcome) metric.MeasurementOption {
	k := setKey{operation, outcome}
	o.mu.RLock()
	opt, ok := o.sets[k]
	o.mu.RUnlock()
	if ok {
		return opt
	}
	opt = metric.WithAttributeSet(attribute.NewSet(AttrOperation.String(operation), AttrOutcome.String(string(outcome))))
	o.mu.Lock()
	if len(o.sets) < maxSets {
		o.sets[k] = opt
	}
	o.mu.Unlock()
	return opt
}
