package cfn_test

import (
	"encoding/json"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
)

// TestProjectDashboard: the stack's dashboard body, resolved, is the JSON
// CloudWatch takes, and every function, state machine and queue it plots
// is one of the stack's.
func TestProjectDashboard(t *testing.T) {
	tmpl := projectTemplate(t)
	r, err := cfn.NewResolver(tmpl, cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := tmpl.Resources["Dashboard"]
	if !ok {
		t.Fatal("template.yaml has no Dashboard")
	}
	body, err := r.String(res.Properties.Get("DashboardBody"))
	if err != nil {
		t.Fatalf("DashboardBody: %v", err)
	}
	var dash struct {
		Widgets []struct {
			Properties struct {
				Title   string  `json:"title"`
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("DashboardBody is not JSON: %v\n%s", err, body)
	}
	if len(dash.Widgets) == 0 {
		t.Fatal("the dashboard has no widgets")
	}
	known := map[string]bool{}
	fns, err := tmpl.Functions(cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		known[f.Name] = true
	}
	sms, err := tmpl.StateMachines(cfn.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sm := range sms {
		known[sm.ARN] = true
	}
	for _, q := range []string{"ReaperDeadLetterQueue", "ReaperFailureQueue"} {
		name, err := r.PhysicalName(tmpl.Resources[q])
		if err != nil {
			t.Fatal(err)
		}
		known[name] = true
	}
	for _, w := range dash.Widgets {
		for _, m := range w.Properties.Metrics {
			for i := 0; i+1 < len(m); i++ {
				switch m[i] {
				case "FunctionName", "StateMachineArn", "QueueName":
					if v, _ := m[i+1].(string); v != "." && !known[v] {
						t.Errorf("widget %q plots %s %v, which is not the stack's", w.Properties.Title, m[i], m[i+1])
					}
				}
			}
			// "..." rows repeat the row above with their last dimension value.
			if len(m) > 1 && m[0] == "..." {
				if v, ok := m[1].(string); ok && !known[v] {
					t.Errorf("widget %q plots %q, which is not the stack's", w.Properties.Title, v)
				}
			}
		}
	}
}
