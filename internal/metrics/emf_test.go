package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/metrics/emftest"
)

// The line a JSON slog handler writes is a valid EMF document: "_aws" names
// the namespace, one dimension set and each metric with its unit, and the
// dimension and metric values are top-level members.
func TestAttrsFormAnEMFDocument(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	now := time.UnixMilli(1_790_000_000_123)
	log.LogAttrs(context.Background(), slog.LevelInfo, "sweep",
		metrics.Attrs(now, []slog.Attr{slog.String("Function", "reaper")},
			metrics.Metric{Name: "Swept", Value: 3},
			metrics.Metric{Name: "SweepLatency", Value: 12.5, Unit: metrics.Milliseconds})...)

	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("log line %q: %v", buf.String(), err)
	}
	want := map[string]any{
		"Timestamp": float64(1_790_000_000_123),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  metrics.Namespace,
			"Dimensions": []any{[]any{"Function"}},
			"Metrics": []any{
				map[string]any{"Name": "Swept", "Unit": "Count"},
				map[string]any{"Name": "SweepLatency", "Unit": "Milliseconds"},
			},
		}},
	}
	if !reflect.DeepEqual(doc["_aws"], want) {
		t.Errorf("_aws = %#v\nwant %#v", doc["_aws"], want)
	}
	for k, v := range map[string]any{"Function": "reaper", "Swept": 3.0, "SweepLatency": 12.5} {
		if doc[k] != v {
			t.Errorf("%s = %v, want %v", k, doc[k], v)
		}
	}
}

// Each metric the functions publish is one EMF document of one count with
// its dimensions, and the log line keeps the logger's own attributes
// (request and transfer ids) beside it.
func TestIncrPublishesEachMetricAsACount(t *testing.T) {
	names := []string{
		metrics.Reserved, metrics.Replayed, metrics.KeyReused, metrics.StartRetried,
		metrics.LegFenced, metrics.Reaped, metrics.Refunded, metrics.Resumed, metrics.TimedOut, metrics.Swept, metrics.Reconciling,
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil)).With("transferId", "t-1")
			metrics.Incr(context.Background(), log, name, metrics.Service("svc"), slog.String("Leg", "DEBIT"))

			doc, ok, err := emftest.Parse(bytes.TrimSpace(buf.Bytes()))
			if err != nil || !ok {
				t.Fatalf("line %s: EMF document %v, %v", buf.String(), ok, err)
			}
			if doc.Values[name] != 1 || doc.Units[name] != metrics.Count || len(doc.Values) != 1 {
				t.Errorf("values %v units %v, want %s = 1 Count only", doc.Values, doc.Units, name)
			}
			if !reflect.DeepEqual(doc.Dimensions, map[string]string{"Service": "svc", "Leg": "DEBIT"}) {
				t.Errorf("dimensions %v", doc.Dimensions)
			}
			var line map[string]any
			_ = json.Unmarshal(buf.Bytes(), &line)
			if line["transferId"] != "t-1" {
				t.Errorf("transferId = %v, want the logger's t-1", line["transferId"])
			}
		})
	}
}

// A line without "_aws" is no document; a document whose metric is not a
// top-level number, or whose namespace is another, is refused.
func TestParseRefusesMalformedDocuments(t *testing.T) {
	if _, ok, err := emftest.Parse([]byte(`{"msg":"hello"}`)); ok || err != nil {
		t.Errorf("plain line: ok %v, err %v", ok, err)
	}
	bad := []string{
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"ExactlyOnceTransfers","Dimensions":[["Service"]],"Metrics":[{"Name":"Swept","Unit":"Count"}]}]},"Service":"reaper"}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Other","Dimensions":[["Service"]],"Metrics":[{"Name":"Swept","Unit":"Count"}]}]},"Service":"reaper","Swept":1}`,
		`{"_aws":{"CloudWatchMetrics":[{"Namespace":"ExactlyOnceTransfers","Dimensions":[["Service"]],"Metrics":[{"Name":"Swept","Unit":"Count"}]}]},"Service":"reaper","Swept":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"ExactlyOnceTransfers","Dimensions":[["Service"]],"Metrics":[{"Name":"Swept","Unit":"Count"}]}]},"Swept":1}`,
	}
	for _, line := range bad {
		if _, _, err := emftest.Parse([]byte(line)); err == nil {
			t.Errorf("accepted %s", line)
		}
	}
}

// Settled publishes one TimeToSettle in milliseconds, from the record's
// createdAt to the settling write, with the outcome as its one dimension
// and the settling function as a plain field; a createdAt it cannot read
// publishes nothing and says so at WARN.
func TestSettledPublishesTimeToSettle(t *testing.T) {
	settled := time.Date(2026, 1, 2, 3, 4, 7, 250_000_000, time.UTC)
	cases := []struct {
		name      string
		createdAt string
		want      float64 // milliseconds; < 0: nothing published
	}{
		{name: "record time format", createdAt: "2026-01-02T03:04:05.000Z", want: 2250},
		{name: "offset and nanoseconds", createdAt: "2026-01-02T04:04:06.999500+01:00", want: 250.5},
		{name: "same instant", createdAt: "2026-01-02T03:04:07.250Z", want: 0},
		{name: "settled before accepted (clock skew) is zero", createdAt: "2026-01-02T03:04:07.300Z", want: 0},
		{name: "missing", createdAt: "", want: -1},
		{name: "not RFC 3339", createdAt: "2026-01-02 03:04:05", want: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil)).With("transferId", "t-1")
			metrics.Settled(context.Background(), log, metrics.ServiceWorker, metrics.OutcomeReversed, c.createdAt, settled)

			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("want one JSON line, got %q: %v", buf.String(), err)
			}
			docs, err := emftest.Docs(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if c.want < 0 {
				if len(docs) != 0 || line["level"] != "WARN" || line["createdAt"] != c.createdAt {
					t.Errorf("line %s: want a WARN naming createdAt %q and no metric", buf.String(), c.createdAt)
				}
				return
			}
			if len(docs) != 1 {
				t.Fatalf("%d EMF documents in %s, want 1", len(docs), buf.String())
			}
			doc := docs[0]
			if doc.Values[metrics.TimeToSettle] != c.want || doc.Units[metrics.TimeToSettle] != metrics.Milliseconds || len(doc.Values) != 1 {
				t.Errorf("values %v units %v, want TimeToSettle = %v Milliseconds only", doc.Values, doc.Units, c.want)
			}
			if !reflect.DeepEqual(doc.Dimensions, map[string]string{"Outcome": metrics.OutcomeReversed}) {
				t.Errorf("dimensions %v, want Outcome alone", doc.Dimensions)
			}
			ts := line["_aws"].(map[string]any)["Timestamp"]
			if line["settledBy"] != metrics.ServiceWorker || line["transferId"] != "t-1" || ts != float64(settled.UnixMilli()) {
				t.Errorf("settledBy %v, transferId %v, Timestamp %v; want worker, t-1, the settling time", line["settledBy"], line["transferId"], ts)
			}
		})
	}
}

// WithStack adds the Stack dimension to every metric document, Incr's
// and Settled's alike, and leaves other lines and the documents of the
// logger it wraps as they are.
func TestWithStackAddsTheStackDimension(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, nil)).With("function", "debit")
	log := metrics.WithStack(base, "transfers-prod")
	ctx := context.Background()
	metrics.Incr(ctx, log, metrics.LegFenced, metrics.Service(metrics.ServiceWorker), slog.String("Leg", "DEBIT"))
	metrics.Settled(ctx, log, metrics.ServiceWorker, metrics.OutcomeCompleted, "2026-11-27T10:00:00Z", time.Date(2026, 11, 27, 10, 0, 1, 0, time.UTC))
	log.Info("not a metric", "n", 1)
	metrics.Incr(ctx, base, metrics.Swept, metrics.Service(metrics.ServiceReaper))

	var docs []emftest.Doc
	var plain []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		doc, ok, err := emftest.Parse(line)
		if err != nil {
			t.Fatalf("line %s: %v", line, err)
		}
		if !ok {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			plain = append(plain, m)
			continue
		}
		docs = append(docs, doc)
	}
	want := []map[string]string{
		{"Service": "worker", "Leg": "DEBIT", "Stack": "transfers-prod"},
		{"Outcome": "completed", "Stack": "transfers-prod"},
		{"Service": "reaper"},
	}
	if len(docs) != len(want) {
		t.Fatalf("%d metric documents, want %d", len(docs), len(want))
	}
	for i, w := range want {
		if !reflect.DeepEqual(docs[i].Dimensions, w) {
			t.Errorf("document %d: dimensions %v, want %v", i, docs[i].Dimensions, w)
		}
	}
	if len(plain) != 1 || plain[0]["Stack"] != nil || plain[0]["function"] != "debit" {
		t.Errorf("plain lines %v, want the one line, without Stack, with the logger's attributes", plain)
	}
	if metrics.WithStack(base, "") != base {
		t.Error("an empty stack name wrapped the logger")
	}
}
