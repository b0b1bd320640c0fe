package otel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	idemotel "github.com/exactlyonce/transfers/idempotency/otel"
)

// The observer goes in Config.Observer; without WithMeterProvider it uses
// the global meter provider (otel.SetMeterProvider).
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	obs, err := idemotel.New(idemotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		panic(err)
	}
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Observer: obs})
	op := idempotency.Operation[string]{Name: "greet", Scope: "alice", Key: "k1"}
	for range 2 {
		_, _ = idempotency.Do(context.Background(), idem, op, "hello", func(_ context.Context, s string) (string, error) { return s + "!", nil })
	}
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != idemotel.MetricCalls {
			continue
		}
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			outcome, _ := dp.Attributes.Value(idemotel.AttrOutcome)
			fmt.Println(outcome.AsString(), dp.Value)
		}
	}
	// Unordered output:
	// completed 1
	// replayed 1
}

// WithMeterProvider gives the observer its meter provider; the
// instruments are those named by MetricCalls, MetricStoreCalls and
// MetricDuration.
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader()
	obs, _ := idemotel.New(idemotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	obs.Observe(context.Background(), idempotency.Event{Operation: "greet", Outcome: idempotency.OutcomeCompleted, StoreCalls: 2})
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		fmt.Println(m.Name, m.Unit)
	}
	// Unordered output:
	// idempotency.calls {call}
	// idempotency.store.calls {call}
	// idempotency.duration s
}
