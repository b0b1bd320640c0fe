//go:build integration

package pretraffic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/pretraffic"
)

// hookResult is the hook's answer as CodeDeploy's invocation gets it.
type hookResult struct {
	Status string `json:"status"`
	Probes []struct {
		Probe  string `json:"probe"`
		Passed bool   `json:"passed"`
		Error  string `json:"error"`
	} `json:"probes"`
}

// TestHookOnTheLocalStack runs the hook, built as the deployed function
// is (app.PreTraffic), against the local stack's functions through the
// local Lambda endpoint: healthy versions are reported Succeeded to the
// local CodeDeploy endpoint, no money moves and nothing is written for
// the probes' transfer; a broken orchestrator is reported Failed.
func TestHookOnTheLocalStack(t *testing.T) {
	ctx := context.Background()
	faults := fault.New(1)
	st, err := stack.Start(ctx, stack.Options{TimeScale: 0.01, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if st.LambdaEndpoint == "" || st.CodeDeploy == nil {
		t.Fatalf("the stack serves no Lambda endpoint (%q) or CodeDeploy recorder", st.LambdaEndpoint)
	}

	db := dynamodb.NewFromConfig(st.AWS)
	led, err := ledger.New(db, ledger.Config{LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"]})
	if err != nil {
		t.Fatal(err)
	}
	// The probe transfer's accounts exist, hold money and belong to the
	// probe's caller: only the fence (no idempotency record) stops the
	// legs. Another caller's account stands beside them.
	probeScope := api.IAMScope("arn:aws:sts::" + stack.AccountID + ":assumed-role/" + pretraffic.CallerRole + "/" + pretraffic.CallerSession)
	for _, a := range []struct {
		id, owner string
	}{
		{pretraffic.SourceAccount, probeScope},
		{pretraffic.DestinationAccount, probeScope},
		{"alice", "iam:arn:aws:iam::" + stack.AccountID + ":user/alice"},
	} {
		if _, err := led.OpenAccount(ctx, a.id, a.owner, pretraffic.Currency, 10000); err != nil {
			t.Fatal(err)
		}
	}

	// The hook as the template deploys it: its environment (the
	// versions' ARNs) and its role, whose calls the stack checks.
	hook := st.FunctionNames["PreTrafficHookFunction"]
	if hook == "" {
		t.Fatal("the stack has no PreTrafficHookFunction")
	}
	deploy := func() string {
		return st.CodeDeploy.CreateDeployment("ServerlessDeploymentApplication", "OrchestratorFunctionDeploymentGroup").ID
	}
	invoke := func(t *testing.T, deployment, execution string) hookResult {
		t.Helper()
		ictx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		event, _ := json.Marshal(map[string]string{"DeploymentId": deployment, "LifecycleEventHookExecutionId": execution})
		out, fnErr, err := st.Functions.InvokeFunction(ictx, hook, event)
		if err != nil || fnErr != nil {
			t.Fatalf("hook: %v %v", err, fnErr)
		}
		var res hookResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("hook answer %s: %v", out, err)
		}
		if err := st.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("healthy versions", func(t *testing.T) {
		before := snapshot(t, db, st.Tables)
		deployment, execution := deploy(), "exec-healthy"
		res := invoke(t, deployment, execution)
		if res.Status != pretraffic.StatusSucceeded || len(res.Probes) != 5 {
			t.Fatalf("result %+v", res)
		}
		for _, p := range res.Probes {
			if !p.Passed {
				t.Errorf("probe %s failed: %s", p.Probe, p.Error)
			}
		}
		got, ok := st.CodeDeploy.Status(execution)
		if !ok || got.Status != pretraffic.StatusSucceeded || got.DeploymentID != deployment {
			t.Fatalf("CodeDeploy has %+v (%v), want Succeeded for %s", got, ok, execution)
		}
		after := snapshot(t, db, st.Tables)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("the probes changed the tables:\nbefore %v\nafter  %v", before, after)
		}
		id := pretraffic.TransferID(deployment)
		for table, items := range after {
			for _, item := range items {
				if b, _ := json.Marshal(item); strings.Contains(string(b), id) {
					t.Errorf("table %s has an item of the probe transfer %s: %s", table, id, b)
				}
			}
		}
		for _, a := range []string{pretraffic.SourceAccount, pretraffic.DestinationAccount} {
			acc, err := led.Account(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			if acc.Balance != 10000 {
				t.Errorf("account %s holds %d, want 10000", a, acc.Balance)
			}
		}
		if denials := st.IAM.Denials(); len(denials) > 0 {
			t.Errorf("IAM denials: %+v", denials)
		}
	})

	t.Run("broken orchestrator", func(t *testing.T) {
		deployment, execution := deploy(), "exec-broken"
		faults.Lambda(fault.LambdaFault{Function: "OrchestratorFunction", Kind: fault.Fail,
			Match: func(p []byte) bool { return bytes.Contains(p, []byte(deployment)) }})
		res := invoke(t, deployment, execution)
		if res.Status != pretraffic.StatusFailed {
			t.Fatalf("result %+v", res)
		}
		for _, p := range res.Probes {
			if p.Passed == (p.Probe == pretraffic.ProbeOrchestrator) {
				t.Errorf("probe %s passed %v: %s", p.Probe, p.Passed, p.Error)
			}
			if p.Probe == pretraffic.ProbeOrchestrator && !strings.Contains(p.Error, "ServiceException") {
				t.Errorf("orchestrator probe error %q does not name the service error", p.Error)
			}
		}
		got, ok := st.CodeDeploy.Status(execution)
		if !ok || got.Status != pretraffic.StatusFailed || got.DeploymentID != deployment {
			t.Fatalf("CodeDeploy has %+v (%v), want Failed for %s", got, ok, execution)
		}
		if faults.Counts()[fault.CountLambdaFail] == 0 {
			t.Error("the orchestrator's fault never fired")
		}
	})

	if statuses := st.CodeDeploy.Statuses(); len(statuses) != 2 {
		t.Errorf("CodeDeploy statuses %+v, want one per hook run", statuses)
	}
}

// snapshot reads every item of the stack's tables, by logical ID.
func snapshot(t *testing.T, db *dynamodb.Client, tables map[string]string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for id, name := range tables {
		p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var items []map[string]any
			if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
				t.Fatal(err)
			}
			out[id] = append(out[id], items...)
		}
	}
	return out
}
