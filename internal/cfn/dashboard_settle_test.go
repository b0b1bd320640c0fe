package cfn_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/metrics"
)

// TestDashboardPlotsTimeToSettle: the dashboard plots the p50 and p99 of
// TimeToSettle for each outcome the functions publish, under the one
// dimension (Outcome) they publish it with, so that no line of the widget
// is a metric that never exists.
func TestDashboardPlotsTimeToSettle(t *testing.T) {
	tmpl := projectTemplate(t)
	r, err := cfn.NewResolver(tmpl, cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := r.String(tmpl.Resources["Dashboard"].Properties.Get("DashboardBody"))
	if err != nil {
		t.Fatalf("DashboardBody: %v", err)
	}
	var dash struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("DashboardBody is not JSON: %v", err)
	}
	plotted := map[string][]string{} // outcome -> stats
	for _, w := range dash.Widgets {
		for _, m := range w.Properties.Metrics {
			if len(m) < 2 || m[0] != metrics.Namespace || m[1] != metrics.TimeToSettle {
				continue
			}
			if len(m) != 7 || m[2] != "Outcome" || m[4] != metrics.StackDimension || m[5] != cfn.DefaultStackName {
				t.Errorf("row %v: want namespace, TimeToSettle, Outcome and its value, Stack and the stack's name, and the options", m)
				continue
			}
			outcome, _ := m[3].(string)
			opts, _ := m[6].(map[string]any)
			stat, _ := opts["stat"].(string)
			plotted[outcome] = append(plotted[outcome], stat)
		}
	}
	want := []string{"p50", "p99"}
	for _, o := range []string{metrics.OutcomeCompleted, metrics.OutcomeFailed, metrics.OutcomeReversed} {
		got := slices.Sorted(slices.Values(plotted[o]))
		if !slices.Equal(got, want) {
			t.Errorf("TimeToSettle Outcome=%s plotted as %v, want %v", o, got, want)
		}
		delete(plotted, o)
	}
	for o := range plotted {
		t.Errorf("the dashboard plots TimeToSettle Outcome=%s, which no function publishes", o)
	}
}

// TestCustomMetricsArePerStack: every function is told its stack's name
// (the Stack dimension of its metrics, internal/metrics.WithStack), and
// every alarm on a custom metric counts this stack's alone.
func TestCustomMetricsArePerStack(t *testing.T) {
	tmpl := projectTemplate(t)
	env := cfn.Env{StackName: "transfers-prod"}
	fns, err := tmpl.Functions(env)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		if f.Environment["STACK_NAME"] != "transfers-prod" {
			t.Errorf("function %s: STACK_NAME = %q, want the stack's name", f.LogicalID, f.Environment["STACK_NAME"])
		}
	}
	r, err := cfn.NewResolver(tmpl, env)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, res := range tmpl.ResourcesOfType("AWS::CloudWatch::Alarm") {
		if ns, _ := res.Properties.Get("Namespace").Str(); ns != metrics.Namespace {
			continue
		}
		v, err := r.Value(res.Properties)
		if err != nil {
			t.Fatalf("%s: %v", res.LogicalID, err)
		}
		props := v.(map[string]any)
		if props["Namespace"] != metrics.Namespace {
			continue
		}
		n++
		dims := map[string]any{}
		for _, d := range props["Dimensions"].([]any) {
			dm := d.(map[string]any)
			dims[dm["Name"].(string)] = dm["Value"]
		}
		if dims[metrics.StackDimension] != "transfers-prod" {
			t.Errorf("alarm %s: dimensions %v, want Stack = the stack's name", res.LogicalID, dims)
		}
	}
	if n == 0 {
		t.Fatal("no alarm on a custom metric")
	}
}
