//go:build integration

package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/iamgate"
	"github.com/exactlyonce/transfers/internal/transfer"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

const (
	owner    = "rehearsal"
	outsider = "rehearsal-outsider"
	// budget bounds each wait; reaching it fails the flow.
	budget = 30 * time.Second
)

// run is one run of the flows on a stack.
type run struct {
	h   *chaos.Harness
	in  *fault.Injector
	id  string // makes this run's accounts and keys unique
	ctx context.Context
}

// flow is one thing the deployed stack does, ending in a checked outcome.
type flow struct {
	name string
	run  func(r *run) error
}

// flows together make every call the stack's principals are granted:
// the orchestrator's writes, reads and lists, the workflow's tasks and
// invocations, each leg (and each leg's refusal), the reaper through its
// rule and through its schedule, and Lambda's delivery of a failed
// asynchronous invocation to the reaper's on-failure queue.
var flows = []flow{
	{"a failed sweep goes to the on-failure queue", sweepFailsToItsQueue},
	{"a transfer completes", completes},
	{"the caller reads its transfers and accounts", reads},
	{"a refused credit is refunded", creditRefunded},
	{"a refused debit fails", debitRefused},
	{"another caller's source is refused", outsiderRefused},
	{"a dead execution is resumed by the reaper", resumedByReaper},
	{"an aborted transfer is refunded by the reaper", abortedRefunded},
	{"a sweep", sweeps},
	{"the PreTraffic hook checks each function's version", preTraffic},
}

// startRun starts a stack on the binary's DynamoDB Local with the
// transformed template at transformed ("" for the project's), the
// template's schedules on (the first one at once) and the reaper's first
// run failing, so that Lambda sends it to its on-failure destination.
// With refusals expected, the stack is stopped without waiting for the
// executions a refusal left retrying, and an error stopping it is logged,
// not failed.
func startRun(t *testing.T, transformed string, refusalsExpected bool) *run {
	t.Helper()
	in := fault.New(1)
	in.Lambda(fault.LambdaFault{Function: chaos.ReaperFunction, Kind: fault.Fail, Error: "Injected.Failure", Times: 3})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	var log *slog.Logger
	if os.Getenv("REHEARSAL_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h, err := chaos.Start(ctx, chaos.Options{
		Logger:              log,
		DynamoDBEndpoint:    os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		Faults:              in,
		TransformedTemplate: transformed,
		Schedules:           true,
		FirstScheduleAfter:  10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		budget := time.Minute
		if refusalsExpected {
			budget = time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			if refusalsExpected {
				t.Logf("close the stack: %v", err)
				return
			}
			t.Errorf("close the stack: %v", err)
		}
	})
	return &run{h: h, in: in, id: fmt.Sprintf("r%d", time.Now().UnixNano()%1e9), ctx: ctx}
}

// all runs the flows in order; it stops at the first that fails, or
// after the first flow during which a call was refused.
func (r *run) all() error {
	for _, f := range flows {
		if err := f.run(r); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := r.refused(); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

// refused is an error naming the first call the IAM checks refused, nil
// while none was: a wait stops at it rather than at its budget.
func (r *run) refused() error {
	if d := r.h.Stack.IAM.Denials(); len(d) > 0 {
		return fmt.Errorf("a call was refused: %s", d[0].Message)
	}
	return nil
}

// TestFlowsRunUnderTheirPolicies runs every flow under the policies of
// template.cfn.json: none is refused, and every grant of the stack's own
// policies is used by one of them, save those of services the local stack
// does not emulate.
func TestFlowsRunUnderTheirPolicies(t *testing.T) {
	r := startRun(t, "", false)
	if err := r.all(); err != nil {
		t.Fatal(err)
	}
	if d := r.h.Stack.IAM.Denials(); len(d) > 0 {
		t.Fatalf("refused calls: %+v", d)
	}
	u := r.h.Stack.IAM.Usage()
	for _, g := range u.Granted {
		if !slices.Contains(u.Used, g) && !iamgate.NotEmulated(g.Action) && keptUnused[g.String()] == "" {
			t.Errorf("no flow used %s", g)
		}
	}
}

// keptUnused are grants no flow uses, each kept for the reason given.
var keptUnused = map[string]string{
	"RefundFunctionRole: RefundFunctionRole/RefundFunctionRolePolicy0 statement 1: dynamodb:GetItem on arn:aws:dynamodb:us-east-1:123456789012:table/LedgerTable": "a refund reads its entry back only after its transaction was cancelled, which a refund (never refused) meets only as a stale attempt",
}

// TestRemovingAnyStatementIsRefused removes each statement of the
// stack's own policies, and each Lambda permission, from a copy of
// template.cfn.json in turn: each time a flow fails, and the call the
// statement allowed is refused with AccessDeniedException.
func TestRemovingAnyStatementIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: one stack per statement of the template's policies")
	}
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	src := cfn.TransformedPath(filepath.Join(root, "template.yaml"))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range removals(doc) {
		t.Run(m.name, func(t *testing.T) {
			path := writeCopy(t, root, data, m.remove)
			r := startRun(t, path, true)
			flowErr := r.all()
			denied := r.h.Stack.IAM.Denials()
			var hit *iamgate.Denial
			for i, d := range denied {
				if slices.Contains(m.actions, d.Action) {
					hit = &denied[i]
					break
				}
			}
			if hit == nil {
				t.Fatalf("without %s no call of %v was refused (flows: %v; refusals: %+v)", m.name, m.actions, flowErr, denied)
			}
			if flowErr == nil {
				t.Fatalf("without %s every flow still succeeded, though %s was refused", m.name, hit.Message)
			}
			t.Logf("refused: %s; failed: %v", hit.Message, flowErr)
		})
	}
}

// removal is one statement taken out of the transformed template.
type removal struct {
	name    string
	actions []string
	remove  func(doc map[string]any)
}

// removals lists the statements of the roles the local stack's principals
// assume (the functions' and the state machine's inline policies) and the
// Lambda permissions, but for statements whose every action is of a
// service the local stack does not emulate.
func removals(doc map[string]any) []removal {
	res := doc["Resources"].(map[string]any)
	var out []removal
	for _, id := range slices.Sorted(mapKeys(res)) {
		r := res[id].(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::IAM::Role":
			if id == "CodeDeployServiceRole" {
				continue // CodeDeploy's, not a principal of the local stack
			}
			pols, _ := props["Policies"].([]any)
			for pi, p := range pols {
				pm := p.(map[string]any)
				stmts := pm["PolicyDocument"].(map[string]any)["Statement"].([]any)
				for si, s := range stmts {
					actions := asStrings(s.(map[string]any)["Action"])
					if !slices.ContainsFunc(actions, func(a string) bool { return !iamgate.NotEmulated(a) }) {
						continue
					}
					out = append(out, removal{
						name:    fmt.Sprintf("%s %s statement %d", id, pm["PolicyName"], si),
						actions: actions,
						remove: func(doc map[string]any) {
							props := doc["Resources"].(map[string]any)[id].(map[string]any)["Properties"].(map[string]any)
							pols := props["Policies"].([]any)
							d := pols[pi].(map[string]any)["PolicyDocument"].(map[string]any)
							st := d["Statement"].([]any)
							if len(st) == 1 {
								// IAM refuses a policy without a statement:
								// the policy goes.
								props["Policies"] = append(slices.Clone(pols[:pi]), pols[pi+1:]...)
								return
							}
							d["Statement"] = append(slices.Clone(st[:si]), st[si+1:]...)
						},
					})
				}
			}
		case "AWS::Lambda::Permission":
			out = append(out, removal{
				name:    id,
				actions: []string{asStrings(props["Action"])[0]},
				remove:  func(doc map[string]any) { delete(doc["Resources"].(map[string]any), id) },
			})
		}
	}
	return out
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func asStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}

// writeCopy writes a copy of the transformed template, edited, beside
// copies of the files it was made from (so that it is not stale), and
// returns its path.
func writeCopy(t *testing.T, root string, data []byte, edit func(map[string]any)) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	dir := t.TempDir()
	for name := range doc["Metadata"].(map[string]any)["TransformedFrom"].(map[string]any) {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "template.cfn.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The flows.

func (r *run) name(s string) string { return r.id + "-" + s }

func (r *run) open(label, caller string, balance int64) (string, error) {
	id := r.name(label)
	return id, r.h.OpenAccount(r.ctx, id, caller, "EUR", balance)
}

func (r *run) post(caller, key, src, dst string, amount int64) chaos.Exchange {
	req := transfer.Request{SourceAccountID: src, DestinationAccountID: dst, Amount: amount, Currency: "EUR"}
	return r.h.Client.PostTransfer(r.ctx, caller, r.name(key), req.Canonical())
}

// settled polls the transfer until it is COMPLETED or FAILED.
func (r *run) settled(id string) (string, error) {
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		if err := r.refused(); err != nil {
			return "", err
		}
		e := r.h.Client.GetTransfer(r.ctx, owner, id)
		if e.TransferStatus == "COMPLETED" || e.TransferStatus == "FAILED" {
			return e.TransferStatus, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("transfer %s did not settle within %v", id, budget)
}

// accepted posts a transfer and waits for it to settle with want.
func (r *run) accepted(key, src, dst string, amount int64, want string) error {
	e := r.post(owner, key, src, dst, amount)
	if e.Status != http.StatusAccepted {
		return fmt.Errorf("POST: %s, want 202", e)
	}
	got, err := r.settled(e.TransferID)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("transfer %s is %s, want %s", e.TransferID, got, want)
	}
	return nil
}

func sweepFailsToItsQueue(r *run) error {
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		if err := r.refused(); err != nil {
			return err
		}
		for _, f := range r.h.Stack.FailedInvocations() {
			if f.Function == chaos.ReaperFunction {
				if f.Destination == "" {
					return fmt.Errorf("the failed sweep was not sent to its destination: %v", f.Err)
				}
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("the schedule's first sweep did not reach the reaper's on-failure destination")
}

func completes(r *run) error {
	src, err := r.open("a", owner, 1000)
	if err != nil {
		return err
	}
	dst, err := r.open("b", owner, 0)
	if err != nil {
		return err
	}
	return r.accepted("complete", src, dst, 100, "COMPLETED")
}

func reads(r *run) error {
	for _, path := range []string{"/transfers?limit=5", "/accounts/" + r.name("a"), "/accounts/" + r.name("a") + "/entries?limit=5"} {
		req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.h.Stack.APIURL+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	return nil
}

func creditRefunded(r *run) error {
	return r.accepted("nobody", r.name("a"), r.name("nobody"), 10, "FAILED")
}

func debitRefused(r *run) error {
	poor, err := r.open("poor", owner, 0)
	if err != nil {
		return err
	}
	return r.accepted("poor", poor, r.name("b"), 10, "FAILED")
}

// outsiderRefused: another caller debits an account the orchestrator has
// not seen, so the refusal settles the reservation it made.
func outsiderRefused(r *run) error {
	src, err := r.open("unseen", owner, 100)
	if err != nil {
		return err
	}
	e := r.post(outsider, "outsider", src, r.name("b"), 10)
	if e.Status != http.StatusForbidden || e.TransferStatus != "FAILED" {
		return fmt.Errorf("POST by another caller: %s, want 403 with the FAILED transfer", e)
	}
	return nil
}

func resumedByReaper(r *run) error {
	src, err := r.open("crash", owner, 1000)
	if err != nil {
		return err
	}
	r.in.Lambda(fault.LambdaFault{Function: "CreditFunction", Kind: fault.Fail, Error: "Injected.Crash", Times: 1,
		Match: func(p []byte) bool { return strings.Contains(string(p), src) }})
	e := r.post(owner, "crash", src, r.name("b"), 10)
	if e.Status != http.StatusAccepted {
		return fmt.Errorf("POST: %s, want 202", e)
	}
	got, err := r.settled(e.TransferID)
	if err != nil {
		return err
	}
	if got != "COMPLETED" {
		return fmt.Errorf("the resumed transfer is %s, want COMPLETED", got)
	}
	out, err := r.h.SFN.ListExecutions(r.ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(r.h.StateMachine)})
	if err != nil {
		return err
	}
	n := 0
	for _, x := range out.Executions {
		if strings.HasPrefix(aws.ToString(x.Name), e.TransferID) {
			n++
		}
	}
	if n != 2 {
		return fmt.Errorf("%d executions of the crashed transfer, want 2 (the reaper's resume)", n)
	}
	return nil
}

// abortedRefunded: an operator stops an execution whose credit hangs; the
// reaper refunds the debit.
func abortedRefunded(r *run) error {
	src, err := r.open("abort", owner, 1000)
	if err != nil {
		return err
	}
	r.in.Lambda(fault.LambdaFault{Function: "CreditFunction", Kind: fault.Hang,
		Match: func(p []byte) bool { return strings.Contains(string(p), src) }})
	hangs := r.in.Counts()[fault.CountLambdaHang]
	e := r.post(owner, "abort", src, r.name("b"), 10)
	if e.Status != http.StatusAccepted {
		return fmt.Errorf("POST: %s, want 202", e)
	}
	deadline := time.Now().Add(budget)
	for r.in.Counts()[fault.CountLambdaHang] == hangs {
		if err := r.refused(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("the credit never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := r.h.SFN.StopExecution(r.ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(r.h.ExecutionARN(e.TransferID)),
		Error: aws.String("Aborted"), Cause: aws.String("ops: the payer withdrew")}); err != nil {
		return err
	}
	got, err := r.settled(e.TransferID)
	if err != nil {
		return err
	}
	if got != "FAILED" {
		return fmt.Errorf("the aborted transfer is %s, want FAILED", got)
	}
	return nil
}

// preTraffic runs CodeDeploy's PreTraffic hook of a deployment, as
// CodeDeploy does before it shifts an alias: it must report Succeeded.
func preTraffic(r *run) error {
	d := r.h.Stack.CodeDeploy.CreateDeployment("ServerlessDeploymentApplication", "OrchestratorFunctionDeploymentGroup")
	event, err := json.Marshal(map[string]string{"DeploymentId": d.ID, "LifecycleEventHookExecutionId": r.name("hook")})
	if err != nil {
		return err
	}
	name := r.h.Stack.FunctionNames["PreTrafficHookFunction"]
	if _, fnErr, err := r.h.Stack.Functions.InvokeFunction(r.ctx, name, event); err != nil || fnErr != nil {
		return fmt.Errorf("the hook: %v %v", err, fnErr)
	}
	if got, ok := r.h.Stack.CodeDeploy.Status(r.name("hook")); !ok || got.Status != "Succeeded" {
		return fmt.Errorf("the hook reported %+v (%v), want Succeeded", got, ok)
	}
	return nil
}

func sweeps(r *run) error {
	return r.h.Sweep(r.ctx)
}
