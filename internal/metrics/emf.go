// Package metrics publishes CloudWatch metrics in the Embedded Metric
// Format (EMF): a structured log line whose "_aws" member tells CloudWatch
// Logs which of its fields are metrics. Publishing costs no API call and no
// extra latency; the log line is the metric.
//
// The functions log JSON through log/slog (Lambda's JSON log format), so a
// metric is one slog record whose attributes form the EMF document.
package metrics

import (
	"context"
	"log/slog"
	"time"
)

// Namespace is the CloudWatch namespace of the project's metrics.
const Namespace = "ExactlyOnceTransfers"

// Units of CloudWatch metrics used here.
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
)

// Metric is one value of one metric.
type Metric struct {
	Name  string
	Value float64
	Unit  string // Count when empty
}

// emf is the "_aws" member of an embedded metric format document: typed,
// so that encoding a log line needs no maps; its members are in name
// order.
type emf struct {
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
	Timestamp         int64          `json:"Timestamp"`
}

type emfDirective struct {
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
	Namespace  string      `json:"Namespace"`
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// Attrs returns the attributes of one EMF document: the "_aws" metadata
// (timestamp, namespace, the dimension set and the metric definitions),
// then each dimension and each metric value as a top-level member.
func Attrs(now time.Time, dims []slog.Attr, ms ...Metric) []slog.Attr {
	doc := emf{Timestamp: now.UnixMilli(), CloudWatchMetrics: []emfDirective{{
		Namespace:  Namespace,
		Dimensions: [][]string{make([]string, 0, len(dims))},
		Metrics:    make([]emfMetric, 0, len(ms)),
	}}}
	d := &doc.CloudWatchMetrics[0]
	for _, a := range dims {
		d.Dimensions[0] = append(d.Dimensions[0], a.Key)
	}
	for _, m := range ms {
		unit := m.Unit
		if unit == "" {
			unit = Count
		}
		d.Metrics = append(d.Metrics, emfMetric{Name: m.Name, Unit: unit})
	}
	attrs := make([]slog.Attr, 0, 1+len(dims)+len(ms))
	attrs = append(attrs, slog.Any("_aws", doc))
	attrs = append(attrs, dims...)
	for _, m := range ms {
		attrs = append(attrs, slog.Float64(m.Name, m.Value))
	}
	return attrs
}

// Emit logs one EMF document at info level with message msg.
func Emit(ctx context.Context, log *slog.Logger, msg string, dims []slog.Attr, ms ...Metric) {
	log.LogAttrs(ctx, slog.LevelInfo, msg, Attrs(time.Now(), dims, ms...)...)
}

// Names of the metrics the functions publish, each a count.
const (
	// Orchestrator (dimension Service=orchestrator).
	Reserved     = "Reserved"     // a new key reserved: a new transfer
	Replayed     = "Replayed"     // a duplicate answered from its record
	KeyReused    = "KeyReused"    // a key sent again with another request
	StartRetried = "StartRetried" // a duplicate of a RESERVED record started its execution again

	// Ledger legs (dimensions Service=worker, Leg=DEBIT|CREDIT|REFUND).
	LegFenced = "LegFenced" // a leg refused by the fence on its idempotency record

	// Reaper (dimensions Service=reaper, Outcome=<decision>).
	Reaped   = "Reaped"   // a transfer the reaper settled (completed, failed or reversed)
	Refunded = "Refunded" // a debit the reaper refunded while settling
	Resumed  = "Resumed"  // a transfer whose execution died, resumed under its next attempt
	TimedOut = "TimedOut" // a transfer failed because its completion window passed (an alarm fires on it)

	// Sweep (dimension Service=reaper).
	Swept       = "Swept"       // stuck transfers the sweep settled without error
	Reconciling = "Reconciling" // stuck RECONCILING records the sweep found

	// Transfers (dimension Outcome=completed|failed|reversed), published
	// by Settled: in milliseconds, not a count.
	TimeToSettle = "TimeToSettle" // from a transfer's acceptance to the write that settled its money
)

// Dimension values of Service.
const (
	ServiceOrchestrator = "orchestrator"
	ServiceWorker       = "worker"
	ServiceReaper       = "reaper"
)

// Service is the Service dimension.
func Service(name string) slog.Attr { return slog.String("Service", name) }

// Incr logs one EMF document counting one event of metric name, with the
// given dimensions (Service first).
func Incr(ctx context.Context, log *slog.Logger, name string, dims ...slog.Attr) {
	Emit(ctx, log, "metric "+name, dims, Metric{Name: name, Value: 1})
}

// Outcomes of a settled transfer, the Outcome dimension of TimeToSettle:
// how its record ends (COMPLETED; FAILED without money moved; FAILED with
// the debit refunded), named as the reaper's Outcome dimension names them.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeReversed  = "reversed"
)

// Settled publishes the TimeToSettle of one transfer: from createdAt, its
// record's acceptance time as stored (RFC 3339), to settledAt, when the
// write that settled its money committed. The one dimension is Outcome, so
// that a percentile covers every transfer of an outcome whichever function
// settled it; service, the function that did, is a plain field of the
// line ("settledBy"), for Logs Insights.
//
// A createdAt that is missing or does not parse publishes nothing: the
// line says so at WARN, and the caller's work goes on (a metric never
// fails a leg). A settledAt before createdAt (clocks of two hosts) counts
// as zero.
func Settled(ctx context.Context, log *slog.Logger, service, outcome, createdAt string, settledAt time.Time) {
	accepted, err := time.Parse(time.RFC3339Nano, createdAt)
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "time to settle not published",
			slog.String("settledBy", service), slog.String("outcome", outcome),
			slog.String("createdAt", createdAt), slog.String("error", err.Error()))
		return
	}
	ms := float64(max(settledAt.Sub(accepted), 0)) / float64(time.Millisecond)
	attrs := Attrs(settledAt, []slog.Attr{slog.String("Outcome", outcome)},
		Metric{Name: TimeToSettle, Value: ms, Unit: Milliseconds})
	attrs = append(attrs, slog.String("settledBy", service))
	log.LogAttrs(ctx, slog.LevelInfo, "metric "+TimeToSettle, attrs...)
}

// StackDimension names the stack a metric comes from, so that two stacks
// in one account and Region (dev and prod, say) publish apart, and each
// stack's alarms count its own.
const StackDimension = "Stack"

// WithStack returns a logger whose metric documents carry the dimension
// Stack=stack besides their own: the dimension is added to each
// document's dimension set and as a member of the line. Other lines pass
// unchanged. An empty stack returns log itself.
func WithStack(log *slog.Logger, stack string) *slog.Logger {
	if stack == "" {
		return log
	}
	return slog.New(stackHandler{next: log.Handler(), stack: stack})
}

// stackHandler adds the Stack dimension to the EMF documents it handles.
type stackHandler struct {
	next  slog.Handler
	stack string
}

func (h stackHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h stackHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return stackHandler{next: h.next.WithAttrs(as), stack: h.stack}
}

func (h stackHandler) WithGroup(name string) slog.Handler {
	return stackHandler{next: h.next.WithGroup(name), stack: h.stack}
}

func (h stackHandler) Handle(ctx context.Context, r slog.Record) error {
	isMetric := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "_aws" {
			_, isMetric = a.Value.Any().(emf)
			return false
		}
		return true
	})
	if !isMetric {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if doc, ok := a.Value.Any().(emf); ok && a.Key == "_aws" {
			a = slog.Any("_aws", doc.withDimension(StackDimension))
		}
		out.AddAttrs(a)
		return true
	})
	out.AddAttrs(slog.String(StackDimension, h.stack))
	return h.next.Handle(ctx, out)
}

// withDimension returns a copy of the document with name added to each of
// its dimension sets.
func (d emf) withDimension(name string) emf {
	out := emf{Timestamp: d.Timestamp, CloudWatchMetrics: make([]emfDirective, len(d.CloudWatchMetrics))}
	for i, dir := range d.CloudWatchMetrics {
		sets := make([][]string, len(dir.Dimensions))
		for j, set := range dir.Dimensions {
			sets[j] = append(append(make([]string, 0, len(set)+1), set...), name)
		}
		out.CloudWatchMetrics[i] = emfDirective{Dimensions: sets, Metrics: dir.Metrics, Namespace: dir.Namespace}
	}
	return out
}
