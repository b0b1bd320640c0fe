package coldstart

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/stack"
)

// -coldstart.starts measures the project's functions with more starts
// than the test's default, and -v logs the figures:
//
//	go test -run TestProjectFunctions -coldstart.starts=20 -v ./internal/bench/coldstart/
var projectStarts = flag.Int("coldstart.starts", 2, "starts per function in TestProjectFunctions")

// The project's five functions start against a local stack, and each
// first invoke does its real work (ProjectFunctions' After checks it):
// a transfer accepted and its workflow run, legs posted, a sweep.
func TestProjectFunctions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())

	fns, err := ProjectFunctions(ProjectConfig{
		IdempotencyTable: st.Tables["IdempotencyTable"],
		LedgerTable:      st.Tables["LedgerTable"],
		StateMachineARN:  st.StateMachines["TransferStateMachine"],
		DynamoDBEndpoint: st.DynamoDBEndpoint,
		SFNEndpoint:      st.SFNEndpoint,
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(fns))
	for i, f := range fns {
		names[i] = f.Name
		if f.Env["IDEMPOTENCY_TABLE"] != st.Tables["IdempotencyTable"] || f.Env["AWS_ENDPOINT_URL_DYNAMODB"] != st.DynamoDBEndpoint ||
			f.Env["AWS_ENDPOINT_URL_SFN"] != st.SFNEndpoint {
			t.Errorf("%s: environment %v does not point at the stack", f.Name, f.Env)
		}
	}
	if got := strings.Join(names, " "); got != "orchestrator debit credit refund reaper" {
		t.Fatalf("functions %s, want the template's five", got)
	}

	floor := Floor()
	hello, all, err := Measure(ctx, Options{Functions: append(fns, floor), Starts: *projectStarts, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	results := all[:len(fns)]
	t.Logf("%-12s %10s %10s %12s %12s %8s", "function", "size", "ready", "first invoke", "spans", "/ hello")
	for _, r := range append([]Result{hello}, all...) {
		t.Logf("%-12s %10d %10v %12v %12d %8.2f", r.Name, r.SizeArm64, r.Ready, r.FirstInvoke, r.Spans, float64(r.Ready)/float64(hello.Ready))
		if r.Samples != *projectStarts || r.Errors != 0 || r.SizeArm64 <= 0 || r.Ready <= 0 || r.FirstInvoke <= 0 {
			t.Errorf("%+v: want %d samples without errors, a size and positive medians", r, *projectStarts)
		}
		// Every function's first invoke makes AWS calls, each traced;
		// hello and the floor make none.
		if traced := r.Spans >= 2**projectStarts; traced != (r.Name != HelloName && r.Name != FloorName) {
			t.Errorf("%s sent %d spans to the OTLP collector in %d starts", r.Name, r.Spans, *projectStarts)
		}
	}
	if err := Check(hello, results); err != nil {
		// The times are the machine's: report, do not fail the test on
		// them (the benchmark checks its targets).
		t.Logf("targets: %v", err)
	}
}

// The functions are the template's, with the template's environment
// pointed at the given resources; a missing resource is refused.
func TestProjectFunctionsFromTheTemplate(t *testing.T) {
	cfg := ProjectConfig{
		IdempotencyTable: "idem", LedgerTable: "ledger",
		StateMachineARN:  "arn:aws:states:us-east-1:123456789012:stateMachine:T",
		DynamoDBEndpoint: "http://127.0.0.1:8000", SFNEndpoint: "http://127.0.0.1:8083",
	}
	fns, err := ProjectFunctions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, pkg    string
		stateMachine bool
		ownership    bool
	}{
		{"orchestrator", "./functions/orchestrator", true, true},
		{"debit", "./functions/debit", false, true},
		{"credit", "./functions/credit", false, true},
		{"refund", "./functions/refund", false, false},
		{"reaper", "./functions/reaper", true, false},
	}
	if len(fns) != len(tests) {
		t.Fatalf("%d functions, want %d", len(fns), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fns[i]
			env := f.Env
			switch {
			case f.Name != tt.name || f.Package != tt.pkg:
				t.Errorf("function %s in %s, want %s in %s", f.Name, f.Package, tt.name, tt.pkg)
			case env["IDEMPOTENCY_TABLE"] != "idem" || env["LEDGER_TABLE"] != "ledger":
				t.Errorf("tables %q %q", env["IDEMPOTENCY_TABLE"], env["LEDGER_TABLE"])
			case env["AWS_ENDPOINT_URL_DYNAMODB"] != cfg.DynamoDBEndpoint || env["AWS_ENDPOINT_URL_SFN"] != cfg.SFNEndpoint:
				t.Errorf("endpoints %q %q", env["AWS_ENDPOINT_URL_DYNAMODB"], env["AWS_ENDPOINT_URL_SFN"])
			case env["AWS_REGION"] != "us-east-1" || env["AWS_ACCESS_KEY_ID"] == "" || env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] != "256":
				t.Errorf("region %q, key %q, memory %q", env["AWS_REGION"], env["AWS_ACCESS_KEY_ID"], env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
			case (env["STATE_MACHINE_ARN"] == cfg.StateMachineARN) != tt.stateMachine:
				t.Errorf("STATE_MACHINE_ARN %q, want it set: %v", env["STATE_MACHINE_ARN"], tt.stateMachine)
			case (env["ACCOUNT_OWNERSHIP"] == "enforce") != tt.ownership:
				t.Errorf("ACCOUNT_OWNERSHIP %q, want the template's enforce: %v", env["ACCOUNT_OWNERSHIP"], tt.ownership)
			case f.Event == nil || f.After == nil:
				t.Error("no first event or no check of its answer")
			}
		})
	}

	cfg.SFNEndpoint = ""
	if _, err := ProjectFunctions(cfg); err == nil || !strings.Contains(err.Error(), "SFNEndpoint is required") {
		t.Errorf("without an SFN endpoint: err = %v, want one naming SFNEndpoint", err)
	}
}
