package asl

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// budgetRetrier and task are the parts of the project definition's Task states
// the budget reads.
type budgetRetrier struct {
	ErrorEquals     []string
	IntervalSeconds float64
	MaxAttempts     *int
	BackoffRate     float64
	MaxDelaySeconds float64
	JitterStrategy  string
}

type budgetState struct {
	Type           string
	Resource       string
	TimeoutSeconds float64
	Retry          []budgetRetrier
}

func readProjectStates(t *testing.T) (timeout float64, states map[string]budgetState) {
	t.Helper()
	raw, err := os.ReadFile(projectDefinition)
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		TimeoutSeconds float64
		States         map[string]budgetState
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	return def.TimeoutSeconds, def.States
}

// TestProjectDynamoDBTasksRetryServerErrors: every DynamoDB task of the
// workflow retries, with full jitter, each name Step Functions gives a
// DynamoDB 5xx, throttle, dropped connection or task timeout, so an
// infrastructure fault delays a transfer instead of failing its execution.
func TestProjectDynamoDBTasksRetryServerErrors(t *testing.T) {
	_, states := readProjectStates(t)
	want := []string{
		"DynamoDB.InternalServerError", "DynamoDB.ServiceUnavailable", "DynamoDB.AmazonDynamoDBException",
		"DynamoDB.SdkClientException", "DynamoDB.ThrottlingException", "DynamoDB.ProvisionedThroughputExceededException",
		"DynamoDB.RequestLimitExceeded", "DynamoDB.TransactionConflictException", "States.Timeout",
	}
	n := 0
	for name, st := range states {
		if st.Type != "Task" || len(st.Resource) < 25 || st.Resource[:25] != "arn:aws:states:::dynamodb" {
			continue
		}
		n++
		if len(st.Retry) == 0 {
			t.Errorf("%s has no Retry", name)
			continue
		}
		r := st.Retry[0]
		for _, e := range want {
			if !slices.Contains(r.ErrorEquals, e) {
				t.Errorf("%s does not retry %s", name, e)
			}
		}
		if r.JitterStrategy != "FULL" {
			t.Errorf("%s retries with jitter %q, want FULL", name, r.JitterStrategy)
		}
	}
	if n != 3 {
		t.Errorf("%d DynamoDB tasks, want MarkInProgress, MarkCompleted and MarkFailed", n)
	}
}

// TestProjectRetryBudgetsEndBeforeTheMachineTimeout: the longest path
// through the workflow (MarkInProgress, Debit, Credit refused into Refund,
// MarkFailed), with every task on its last attempt, every Lambda attempt
// running to its TimeoutSeconds and every wait at its cap, ends before the
// machine's TimeoutSeconds: a stuck leg fails the execution with its own
// error, for the reaper to resume, rather than timing the machine out.
func TestProjectRetryBudgetsEndBeforeTheMachineTimeout(t *testing.T) {
	timeout, states := readProjectStates(t)
	var total float64
	for _, name := range []string{"MarkInProgress", "Debit", "Credit", "Refund", "MarkFailed"} {
		st, ok := states[name]
		if !ok {
			t.Fatalf("no state %s", name)
		}
		attempts, waits := 1.0, 0.0
		for _, r := range st.Retry {
			max := 3 // the ASL default
			if r.MaxAttempts != nil {
				max = *r.MaxAttempts
			}
			wait := r.IntervalSeconds
			for range max {
				w := wait
				if r.MaxDelaySeconds > 0 && w > r.MaxDelaySeconds {
					w = r.MaxDelaySeconds
				}
				waits += w
				wait *= r.BackoffRate
			}
			attempts += float64(max)
		}
		total += attempts*st.TimeoutSeconds + waits
	}
	if total >= timeout {
		t.Errorf("the longest retry path takes up to %.0f s, not less than the machine's TimeoutSeconds %.0f", total, timeout)
	}
	t.Logf("longest retry path: %.0f s of %.0f s", total, timeout)
}
