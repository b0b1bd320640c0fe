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
