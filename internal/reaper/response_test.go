package reaper_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/ddblocal"
)

// TestResponseFormat: the reaper stores the same JSON shape as the
// workflow's BuildCompletedTransfer and BuildFailedTransfer states.
func TestResponseFormat(t *testing.T) {
	asl := workflowResponses(t)
	e := newEnv(t, envOptions{})
	tests := []struct {
		name  string
		state string // the workflow state building the same response
		legs  bool   // debit and credit posted
	}{
		{"completed", "BuildCompletedTransfer", true},
		{"failed", "BuildFailedTransfer", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Past its completion window: the reaper stores the outcome.
			f := e.newTransfer(t, failRef, 2*time.Hour)
			e.closeExecution(t, f)
			e.markInProgress(t, f)
			if tc.legs {
				e.post(t, f, debit, credit)
			}
			if _, err := e.newReaper(t, nil, nil).Settle(testContext(t), f.rec.Key, f.rec.ResourceID); err != nil {
				t.Fatalf("Settle: %v", err)
			}
			var stored map[string]any
			if err := json.Unmarshal([]byte(e.record(t, f).Response), &stored); err != nil {
				t.Fatalf("stored response: %v", err)
			}
			if got, want := keys(stored), keys(asl[tc.state]); !slices.Equal(got, want) {
				t.Errorf("response fields = %v; the workflow stores %v", got, want)
			}
			if failure, ok := stored["failure"].(map[string]any); ok {
				wantFailure, _ := asl[tc.state]["failure"].(map[string]any)
				if got, want := keys(failure), keys(wantFailure); !slices.Equal(got, want) {
					t.Errorf("failure fields = %v; the workflow stores %v", got, want)
				}
			}
		})
	}
}

// workflowResponses reads the Parameters of the response-building states
// of the transfer state machine.
func workflowResponses(t *testing.T) map[string]map[string]any {
	t.Helper()
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "statemachine", "transfer.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		States map[string]struct {
			Parameters map[string]any `json:"Parameters"`
		} `json:"States"`
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatalf("decode the state machine: %v", err)
	}
	out := map[string]map[string]any{}
	for _, name := range []string{"BuildCompletedTransfer", "BuildFailedTransfer"} {
		p := def.States[name].Parameters
		if p == nil {
			t.Fatalf("state %s has no Parameters", name)
		}
		out[name] = p
	}
	return out
}

// keys are the field names of a JSON object or an ASL template (without
// the ".$" suffix of paths), sorted.
func keys(m map[string]any) []string {
	ks := slices.Sorted(maps.Keys(m))
	for i, k := range ks {
		ks[i] = strings.TrimSuffix(k, ".$")
	}
	slices.Sort(ks)
	return ks
}
