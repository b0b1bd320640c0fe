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
