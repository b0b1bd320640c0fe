package pretraffic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/app/all"
	"github.com/exactlyonce/transfers/internal/pretraffic"
	"github.com/exactlyonce/transfers/internal/worker"
)

const (
	orchestratorARN = "arn:aws:lambda:us-east-1:123456789012:function:OrchestratorFunction:7"
	debitARN        = "arn:aws:lambda:us-east-1:123456789012:function:DebitFunction:7"
	creditARN       = "arn:aws:lambda:us-east-1:123456789012:function:CreditFunction:7"
	refundARN       = "arn:aws:lambda:us-east-1:123456789012:function:RefundFunction:7"
	reaperARN       = "arn:aws:lambda:us-east-1:123456789012:function:ReaperFunction:7"
	machineARN      = "arn:aws:states:us-east-1:123456789012:stateMachine:TransferStateMachine"
)

var (
	testConfig = pretraffic.Config{
		Orchestrator: orchestratorARN, Debit: debitARN, Credit: creditARN, Refund: refundARN, Reaper: reaperARN,
		StateMachineARN: machineARN,
	}
	testEvent = pretraffic.Event{DeploymentID: "d-ABCDEF123", LifecycleEventHookExecutionID: "exec-1"}
	// probeFunctions maps each probe to the version it invokes.
	probeFunctions = map[string]string{
		pretraffic.ProbeOrchestrator: orchestratorARN,
		pretraffic.ProbeDebit:        debitARN,
		pretraffic.ProbeCredit:       creditARN,
		pretraffic.ProbeRefund:       refundARN,
		pretraffic.ProbeReaper:       reaperARN,
	}
)

// answer is a version's answer to an invocation.
type answer func(ctx context.Context, payload []byte) (*lambda.InvokeOutput, error)

func result(payload string) answer {
	return func(context.Context, []byte) (*lambda.InvokeOutput, error) {
		return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(payload)}, nil
	}
}

func functionError(errorType, message string) answer {
	return func(context.Context, []byte) (*lambda.InvokeOutput, error) {
		doc, _ := json.Marshal(map[string]string{"errorType": errorType, "errorMessage": message})
		return &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: doc}, nil
	}
}

func apiAnswer(status int, body string) answer {
	resp, _ := json.Marshal(events.APIGatewayProxyResponse{StatusCode: status, Body: body,
		Headers: map[string]string{"Content-Type": "application/json"}})
	return result(string(resp))
}

func invokeError(err error) answer {
	return func(context.Context, []byte) (*lambda.InvokeOutput, error) { return nil, err }
}

// hang answers when the caller gives up.
func hang(ctx context.Context, _ []byte) (*lambda.InvokeOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// healthy are the answers of versions that work.
func healthy() map[string]answer {
	fenced := functionError(worker.TypeTransferFenced, "debit pretraffic-d-ABCDEF123: transfer fenced: idempotency record not found")
	return map[string]answer{
		orchestratorARN: apiAnswer(http.StatusOK, `{"transfers":[]}`),
		debitARN:        fenced,
		creditARN:       fenced,
		refundARN:       fenced,
		reaperARN:       result("null"),
	}
}

// fakeLambda answers each function with its answer and keeps what it was
// invoked with.
type fakeLambda struct {
	answers map[string]answer
	mu      sync.Mutex
	calls   map[string]*lambda.InvokeInput
}

func (f *fakeLambda) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	name := aws.ToString(in.FunctionName)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]*lambda.InvokeInput{}
	}
	f.calls[name] = in
	f.mu.Unlock()
	a, ok := f.answers[name]
	if !ok {
		return nil, errors.New("ResourceNotFoundException: " + name)
	}
	return a(ctx, in.Payload)
}

func (f *fakeLambda) payload(t *testing.T, function string) []byte {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.calls[function]
	if !ok {
		t.Fatalf("%s was not invoked", function)
	}
	if in.InvocationType != types.InvocationTypeRequestResponse {
		t.Errorf("%s invoked with %q, want RequestResponse", function, in.InvocationType)
	}
	return in.Payload
}

// fakeCodeDeploy keeps the statuses reported, or fails with err.
type fakeCodeDeploy struct {
	err     error
	mu      sync.Mutex
	reports []*codedeploy.PutLifecycleEventHookExecutionStatusInput
	// late is whether the report came after its context ended.
	late bool
}

func (f *fakeCodeDeploy) PutLifecycleEventHookExecutionStatus(ctx context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, _ ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, in)
	if ctx.Err() != nil {
		f.late = true
	}
	if f.err != nil {
		return nil, f.err
	}
	return &codedeploy.PutLifecycleEventHookExecutionStatusOutput{LifecycleEventHookExecutionId: in.LifecycleEventHookExecutionId}, nil
}

func newHook(t *testing.T, answers map[string]answer, cd *fakeCodeDeploy, log *slog.Logger) (*pretraffic.Hook, *fakeLambda) {
	t.Helper()
	fl := &fakeLambda{answers: answers}
	h, err := pretraffic.New(testConfig, fl, cd, log, pretraffic.WithClock(func() time.Time {
		return time.Date(2026, 11, 22, 8, 4, 11, 663e6, time.UTC)
	}))
	if err != nil {
		t.Fatal(err)
	}
	return h, fl
}

func TestHandle(t *testing.T) {
	var statusErr *pretraffic.StatusError
	var fnErr *pretraffic.FunctionError
	tests := []struct {
		name       string
		probe      string // the probe whose version answers instead with answer
		answer     answer
		wantIs     error // errors.Is of the probe's error
		wantAs     any   // errors.As target of the probe's error
		wantInText string
	}{
		{name: "all pass"},
		{name: "orchestrator function error", probe: pretraffic.ProbeOrchestrator,
			answer: functionError("Runtime.ExitError", "exit status 2"), wantIs: pretraffic.ErrFunctionError, wantAs: &fnErr, wantInText: "exit status 2"},
		{name: "orchestrator 5xx", probe: pretraffic.ProbeOrchestrator,
			answer: apiAnswer(http.StatusServiceUnavailable, `{"code":"unavailable"}`), wantIs: pretraffic.ErrUnexpectedAnswer, wantAs: &statusErr, wantInText: "status 503"},
		{name: "orchestrator 4xx", probe: pretraffic.ProbeOrchestrator,
			answer: apiAnswer(http.StatusUnauthorized, `{"code":"no_caller"}`), wantIs: pretraffic.ErrUnexpectedAnswer, wantAs: &statusErr, wantInText: "no_caller"},
		{name: "orchestrator 200 without transfers", probe: pretraffic.ProbeOrchestrator,
			answer: apiAnswer(http.StatusOK, `{"entries":[]}`), wantIs: pretraffic.ErrUnexpectedAnswer, wantInText: "transfers"},
		{name: "orchestrator 200 with transfers null", probe: pretraffic.ProbeOrchestrator,
			answer: apiAnswer(http.StatusOK, `{"transfers":null}`), wantIs: pretraffic.ErrUnexpectedAnswer, wantInText: "transfers"},
		{name: "orchestrator 200 not JSON", probe: pretraffic.ProbeOrchestrator,
			answer: apiAnswer(http.StatusOK, `<html>`), wantIs: pretraffic.ErrUnexpectedAnswer, wantInText: "<html>"},
		{name: "orchestrator answer not an API answer", probe: pretraffic.ProbeOrchestrator,
			answer: result(`"ok"`), wantIs: pretraffic.ErrUnexpectedAnswer, wantInText: "proxy answer"},
		{name: "orchestrator not invoked", probe: pretraffic.ProbeOrchestrator,
			answer: invokeError(errors.New("AccessDeniedException: not authorized")), wantIs: pretraffic.ErrInvoke, wantInText: "AccessDeniedException"},
		{name: "debit accepted", probe: pretraffic.ProbeDebit,
			answer: result(`{"amount":-1}`), wantIs: pretraffic.ErrLegAccepted, wantInText: `"amount":-1`},
		{name: "debit other error", probe: pretraffic.ProbeDebit,
			answer: functionError(worker.TypeInvalidTask, "invalid task"), wantIs: pretraffic.ErrFunctionError, wantAs: &fnErr, wantInText: "want errorType TransferFenced"},
		{name: "debit not invoked", probe: pretraffic.ProbeDebit,
			answer: invokeError(errors.New("TooManyRequestsException")), wantIs: pretraffic.ErrInvoke},
		{name: "credit accepted", probe: pretraffic.ProbeCredit,
			answer: result(`{"amount":1}`), wantIs: pretraffic.ErrLegAccepted},
		{name: "credit other error", probe: pretraffic.ProbeCredit,
			answer: functionError(worker.TypeLedgerUnavailable, "the ledger is temporarily unavailable"), wantIs: pretraffic.ErrFunctionError, wantAs: &fnErr},
		{name: "credit not invoked", probe: pretraffic.ProbeCredit,
			answer: invokeError(errors.New("ServiceException")), wantIs: pretraffic.ErrInvoke},
		{name: "refund accepted", probe: pretraffic.ProbeRefund,
			answer: result(`{"amount":1}`), wantIs: pretraffic.ErrLegAccepted},
		{name: "refund other error", probe: pretraffic.ProbeRefund,
			answer: functionError("Sandbox.Timedout", "Task timed out after 10.00 seconds"), wantIs: pretraffic.ErrFunctionError, wantAs: &fnErr, wantInText: "Sandbox.Timedout"},
		{name: "refund not invoked", probe: pretraffic.ProbeRefund,
			answer: invokeError(errors.New("ResourceNotFoundException")), wantIs: pretraffic.ErrInvoke},
		{name: "reaper function error", probe: pretraffic.ProbeReaper,
			answer: functionError("errorString", "reaper: malformed status change event"), wantIs: pretraffic.ErrFunctionError, wantAs: &fnErr},
		{name: "reaper not invoked", probe: pretraffic.ProbeReaper,
			answer: invokeError(errors.New("ServiceException")), wantIs: pretraffic.ErrInvoke},
		{name: "function error without a document", probe: pretraffic.ProbeReaper,
			answer: func(context.Context, []byte) (*lambda.InvokeOutput, error) {
				return &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte("boom")}, nil
			}, wantIs: pretraffic.ErrFunctionError, wantInText: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := healthy()
			if tt.probe != "" {
				answers[probeFunctions[tt.probe]] = tt.answer
			}
			var logs bytes.Buffer
			cd := &fakeCodeDeploy{}
			h, _ := newHook(t, answers, cd, slog.New(slog.NewJSONHandler(&logs, nil)))
			res, err := h.Handle(context.Background(), testEvent)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			wantStatus := pretraffic.StatusSucceeded
			if tt.probe != "" {
				wantStatus = pretraffic.StatusFailed
			}
			if res.Status != wantStatus {
				t.Fatalf("status %s, want %s: %+v", res.Status, wantStatus, res.Failed())
			}
			if len(cd.reports) != 1 {
				t.Fatalf("%d reports, want 1", len(cd.reports))
			}
			rep := cd.reports[0]
			if aws.ToString(rep.DeploymentId) != testEvent.DeploymentID ||
				aws.ToString(rep.LifecycleEventHookExecutionId) != testEvent.LifecycleEventHookExecutionID ||
				string(rep.Status) != wantStatus {
				t.Errorf("reported %s %s %s", aws.ToString(rep.DeploymentId), aws.ToString(rep.LifecycleEventHookExecutionId), rep.Status)
			}
			if len(res.Probes) != 5 {
				t.Fatalf("%d probe results, want 5", len(res.Probes))
			}
			for _, p := range res.Probes {
				if p.Function != probeFunctions[p.Probe] {
					t.Errorf("probe %s invoked %s", p.Probe, p.Function)
				}
				if p.Probe != tt.probe {
					if p.Err != nil {
						t.Errorf("probe %s failed: %v", p.Probe, p.Err)
					}
					continue
				}
				var pe *pretraffic.ProbeError
				if !errors.As(p.Err, &pe) || pe.Probe != tt.probe || pe.Function != probeFunctions[tt.probe] {
					t.Fatalf("probe %s error %v, want a *ProbeError naming it", p.Probe, p.Err)
				}
				if !errors.Is(p.Err, tt.wantIs) {
					t.Errorf("probe %s error %v, want one matching %v", p.Probe, p.Err, tt.wantIs)
				}
				if tt.wantAs != nil && !errors.As(p.Err, tt.wantAs) {
					t.Errorf("probe %s error %v (%T), want %T", p.Probe, p.Err, errors.Unwrap(p.Err), tt.wantAs)
				}
				if !strings.Contains(p.Err.Error(), tt.wantInText) {
					t.Errorf("probe %s error %q does not quote %q", p.Probe, p.Err, tt.wantInText)
				}
			}
			// One log line per probe, and one for the report.
			lines := map[string]map[string]any{}
			for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if p, ok := m["probe"].(string); ok {
					lines[p] = m
				} else if m["msg"] == "hook status reported" {
					lines["report"] = m
				}
				if m["deploymentId"] != testEvent.DeploymentID {
					t.Errorf("log line without the deployment id: %s", l)
				}
			}
			if len(lines) != 6 || lines["report"]["status"] != wantStatus {
				t.Errorf("logs:\n%s", logs.String())
			}
			if tt.probe != "" && lines[tt.probe]["error"] == nil {
				t.Errorf("failed probe %s logged without its error: %v", tt.probe, lines[tt.probe])
			}
		})
	}
}

// TestHandleReportFails: when the status cannot be reported the handler
// fails, so that CodeDeploy times the hook out and rolls back.
func TestHandleReportFails(t *testing.T) {
	for _, tt := range []struct {
		name       string
		answers    func() map[string]answer
		wantStatus string
	}{
		{"after the probes passed", healthy, pretraffic.StatusSucceeded},
		{"after a probe failed", func() map[string]answer {
			a := healthy()
			a[debitARN] = result(`{}`)
			return a
		}, pretraffic.StatusFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cause := errors.New("DeploymentDoesNotExistException: no such deployment")
			h, _ := newHook(t, tt.answers(), &fakeCodeDeploy{err: cause}, nil)
			_, err := h.Handle(context.Background(), testEvent)
			var re *pretraffic.ReportError
			if !errors.As(err, &re) || !errors.Is(err, cause) {
				t.Fatalf("err %v, want a *ReportError of the report's failure", err)
			}
			if re.Status != tt.wantStatus || re.DeploymentID != testEvent.DeploymentID || re.ExecutionID != testEvent.LifecycleEventHookExecutionID {
				t.Errorf("ReportError %+v", re)
			}
		})
	}
}

func TestHandleInvalidEvent(t *testing.T) {
	for _, ev := range []pretraffic.Event{
		{LifecycleEventHookExecutionID: "exec-1"},
		{DeploymentID: "d-1"},
	} {
		cd := &fakeCodeDeploy{}
		h, fl := newHook(t, healthy(), cd, nil)
		if _, err := h.Handle(context.Background(), ev); !errors.Is(err, pretraffic.ErrInvalidEvent) {
			t.Errorf("event %+v: err %v, want ErrInvalidEvent", ev, err)
		}
		if len(cd.reports) != 0 || len(fl.calls) != 0 {
			t.Errorf("event %+v: %d reports, %d invocations, want none", ev, len(cd.reports), len(fl.calls))
		}
	}
}

// TestHandleDeadline: a version that does not answer fails its probe at
// the handler's deadline less the report's reserve, and the status is
// still reported in time.
func TestHandleDeadline(t *testing.T) {
	answers := healthy()
	answers[reaperARN] = hang
	cd := &fakeCodeDeploy{}
	h, _ := newHook(t, answers, cd, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := h.Handle(ctx, testEvent)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != pretraffic.StatusFailed || len(res.Failed()) != 1 || res.Failed()[0].Probe != pretraffic.ProbeReaper ||
		!errors.Is(res.Failed()[0].Err, pretraffic.ErrInvoke) || !errors.Is(res.Failed()[0].Err, context.DeadlineExceeded) {
		t.Fatalf("result %+v", res)
	}
	if elapsed := time.Since(start); elapsed > 300*time.Millisecond {
		t.Errorf("probes ran %s, past the reserve before the 400ms deadline", elapsed)
	}
	if len(cd.reports) != 1 || cd.late {
		t.Errorf("%d reports (late %v), want 1 in time", len(cd.reports), cd.late)
	}
}

// TestProbesRunConcurrently: five versions that each take a while are
// probed in about the time of one.
func TestProbesRunConcurrently(t *testing.T) {
	const each = 150 * time.Millisecond
	answers := healthy()
	for fn, a := range answers {
		answers[fn] = func(ctx context.Context, p []byte) (*lambda.InvokeOutput, error) {
			time.Sleep(each)
			return a(ctx, p)
		}
	}
	h, _ := newHook(t, answers, &fakeCodeDeploy{}, nil)
	start := time.Now()
	res, err := h.Handle(context.Background(), testEvent)
	if err != nil || res.Status != pretraffic.StatusSucceeded {
		t.Fatalf("%+v, %v", res, err)
	}
	if elapsed := time.Since(start); elapsed > 3*each {
		t.Errorf("five probes took %s, want about %s", elapsed, each)
	}
}

func TestResultJSON(t *testing.T) {
	answers := healthy()
	answers[creditARN] = result(`{}`)
	h, _ := newHook(t, answers, &fakeCodeDeploy{}, nil)
	res, err := h.Handle(context.Background(), testEvent)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status string `json:"status"`
		Probes []struct {
			Probe  string `json:"probe"`
			Passed bool   `json:"passed"`
			Error  string `json:"error"`
		} `json:"probes"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != pretraffic.StatusFailed || len(got.Probes) != 5 || got.Probes[2].Probe != pretraffic.ProbeCredit ||
		got.Probes[2].Passed || got.Probes[2].Error == "" || !got.Probes[0].Passed {
		t.Errorf("JSON %s", b)
	}
}

// fullEnv is the environment of the hook.
func fullEnv() map[string]string {
	return map[string]string{
		pretraffic.EnvOrchestratorVersion: orchestratorARN,
		pretraffic.EnvDebitVersion:        debitARN,
		pretraffic.EnvCreditVersion:       creditARN,
		pretraffic.EnvRefundVersion:       refundARN,
		pretraffic.EnvReaperVersion:       reaperARN,
		pretraffic.EnvStateMachineARN:     machineARN,
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := fullEnv()
	cfg, err := pretraffic.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil || cfg != testConfig {
		t.Fatalf("ConfigFromEnv = %+v, %v", cfg, err)
	}
	for name := range fullEnv() {
		t.Run("without "+name, func(t *testing.T) {
			env := fullEnv()
			delete(env, name)
			_, err := pretraffic.ConfigFromEnv(func(k string) string { return env[k] })
			var ce *pretraffic.ConfigError
			if !errors.As(err, &ce) || ce.Variable != name {
				t.Fatalf("err %v, want a *ConfigError naming %s", err, name)
			}
		})
	}
	t.Run("state machine not an ARN", func(t *testing.T) {
		env := fullEnv()
		env[pretraffic.EnvStateMachineARN] = "TransferStateMachine"
		_, err := pretraffic.ConfigFromEnv(func(k string) string { return env[k] })
		var ce *pretraffic.ConfigError
		if !errors.As(err, &ce) || ce.Variable != pretraffic.EnvStateMachineARN {
			t.Fatalf("err %v, want a *ConfigError naming %s", err, pretraffic.EnvStateMachineARN)
		}
	})
}

// TestAppConstructor: the function's constructor refuses an environment
// without one of its variables, and builds a handler from a full one.
func TestAppConstructor(t *testing.T) {
	build := all.Functions["pretraffic"]
	if build == nil {
		t.Fatal("internal/app/all.Functions has no pretraffic constructor")
	}
	clients := app.AWS{Config: aws.Config{Region: "us-east-1"}}
	h, err := build(context.Background(), func(k string) string { return fullEnv()[k] }, clients, slog.New(slog.DiscardHandler))
	if err != nil || h == nil {
		t.Fatalf("build = %v, %v", h, err)
	}
	for name := range fullEnv() {
		env := fullEnv()
		delete(env, name)
		_, err := build(context.Background(), func(k string) string { return env[k] }, clients, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: err %v, want one naming it", name, err)
		}
	}
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	fl, cd := &fakeLambda{}, &fakeCodeDeploy{}
	for _, tt := range []struct {
		name   string
		mutate func(*pretraffic.Config)
	}{
		{"Orchestrator", func(c *pretraffic.Config) { c.Orchestrator = "" }},
		{"Debit", func(c *pretraffic.Config) { c.Debit = "" }},
		{"Credit", func(c *pretraffic.Config) { c.Credit = "" }},
		{"Refund", func(c *pretraffic.Config) { c.Refund = "" }},
		{"Reaper", func(c *pretraffic.Config) { c.Reaper = "" }},
		{"StateMachineARN", func(c *pretraffic.Config) { c.StateMachineARN = "arn:aws:lambda:us-east-1:1:function:F" }},
	} {
		cfg := testConfig
		tt.mutate(&cfg)
		if _, err := pretraffic.New(cfg, fl, cd, nil); err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("without %s: err %v", tt.name, err)
		}
	}
	if _, err := pretraffic.New(testConfig, nil, cd, nil); err == nil {
		t.Error("a hook without an invoker was built")
	}
	if _, err := pretraffic.New(testConfig, fl, nil, nil); err == nil {
		t.Error("a hook without a reporter was built")
	}
}
