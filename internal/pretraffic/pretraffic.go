// Package pretraffic is the CodeDeploy PreTraffic hook of the stack's
// gradual deployments. Before CodeDeploy shifts a function's live alias
// to a new version it invokes the hook with the deployment's id and the
// lifecycle hook execution's id; the hook invokes the new versions
// synchronously with requests that move no money, judges their answers,
// and reports Succeeded (every probe passed) or Failed (CodeDeploy then
// rolls the deployment back) with PutLifecycleEventHookExecutionStatus.
//
// The probes run concurrently, within the handler's deadline less the
// time kept to report:
//
//	orchestrator  GET /transfers?limit=1 as an API Gateway REST proxy event of
//	              a caller that owns nothing: passes on a 200 answer whose
//	              body is a JSON object with a "transfers" array.
//	debit, credit,
//	refund        the workflow's task of a transfer that does not exist:
//	              passes when the leg refuses it with TransferFenced (its
//	              fence finds no idempotency record), which writes nothing.
//	reaper        a Step Functions status change (FAILED) of an execution of
//	              the transfer state machine for a transfer that does not
//	              exist: passes when the reaper answers without a function
//	              error. The reaper reads the transfer's idempotency record,
//	              finds none and writes nothing (reaper.OutcomeNotFound).
package pretraffic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Invoker invokes a Lambda function version; *lambda.Client is one.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ Invoker = (*lambda.Client)(nil)

// Reporter reports a lifecycle hook's status to CodeDeploy;
// *codedeploy.Client is one.
type Reporter interface {
	PutLifecycleEventHookExecutionStatus(ctx context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, optFns ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error)
}

var _ Reporter = (*codedeploy.Client)(nil)

// Environment variables read by ConfigFromEnv: the qualified ARNs of the
// versions the deployment shifts to, and the transfer state machine.
const (
	EnvOrchestratorVersion = "ORCHESTRATOR_VERSION_ARN"
	EnvDebitVersion        = "DEBIT_VERSION_ARN"
	EnvCreditVersion       = "CREDIT_VERSION_ARN"
	EnvRefundVersion       = "REFUND_VERSION_ARN"
	EnvReaperVersion       = "REAPER_VERSION_ARN"
	EnvStateMachineARN     = "STATE_MACHINE_ARN"
)

// Names of the probes, in the order they are reported.
const (
	ProbeOrchestrator = "orchestrator"
	ProbeDebit        = "debit"
	ProbeCredit       = "credit"
	ProbeRefund       = "refund"
	ProbeReaper       = "reaper"
)

// The statuses the hook reports.
const (
	StatusSucceeded = string(cdtypes.LifecycleEventStatusSucceeded)
	StatusFailed    = string(cdtypes.LifecycleEventStatusFailed)
)

const (
	// ReportReserve is the time kept before the handler's deadline to
	// report the status: the probes must be done by then (half the time
	// left when the handler has less than twice as much).
	ReportReserve = 3 * time.Second
	// DefaultProbeTimeout bounds the probes of a handler called without a
	// deadline.
	DefaultProbeTimeout = time.Minute
)

// Config names the versions the probes invoke. Each is passed as it is as
// the FunctionName of Invoke: a qualified function ARN (a version or an
// alias), or any other reference Lambda accepts.
type Config struct {
	Orchestrator string
	Debit        string
	Credit       string
	Refund       string
	Reaper       string
	// StateMachineARN is the transfer state machine, whose executions
	// the reaper settles: the reaper probe's status change names it, and
	// its partition, region and account are the probes' (the synthetic
	// caller's, the event's).
	StateMachineARN string
}

// ConfigFromEnv reads the Config from ORCHESTRATOR_VERSION_ARN,
// DEBIT_VERSION_ARN, CREDIT_VERSION_ARN, REFUND_VERSION_ARN,
// REAPER_VERSION_ARN and STATE_MACHINE_ARN, all required.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		Orchestrator:    getenv(EnvOrchestratorVersion),
		Debit:           getenv(EnvDebitVersion),
		Credit:          getenv(EnvCreditVersion),
		Refund:          getenv(EnvRefundVersion),
		Reaper:          getenv(EnvReaperVersion),
		StateMachineARN: getenv(EnvStateMachineARN),
	}
	for _, v := range []struct{ name, value string }{
		{EnvOrchestratorVersion, cfg.Orchestrator},
		{EnvDebitVersion, cfg.Debit},
		{EnvCreditVersion, cfg.Credit},
		{EnvRefundVersion, cfg.Refund},
		{EnvReaperVersion, cfg.Reaper},
		{EnvStateMachineARN, cfg.StateMachineARN},
	} {
		if strings.TrimSpace(v.value) == "" {
			return Config{}, &ConfigError{Variable: v.name, Problem: "is required"}
		}
	}
	if _, err := parseStateMachineARN(cfg.StateMachineARN); err != nil {
		return Config{}, &ConfigError{Variable: EnvStateMachineARN, Problem: err.Error()}
	}
	return cfg, nil
}

// Event is the event CodeDeploy invokes a lifecycle hook with.
type Event struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Result is what the hook found: the status it reported and each probe's
// outcome.
type Result struct {
	Status string        `json:"status"`
	Probes []ProbeResult `json:"probes"`
}

// Failed returns the probes that failed.
func (r Result) Failed() []ProbeResult {
	var out []ProbeResult
	for _, p := range r.Probes {
		if p.Err != nil {
			out = append(out, p)
		}
	}
	return out
}

// ProbeResult is one probe's outcome: Err is nil when it passed, a
// *ProbeError otherwise.
type ProbeResult struct {
	Probe    string        `json:"probe"`
	Function string        `json:"function"`
	Duration time.Duration `json:"-"`
	Err      error         `json:"-"`
}

// MarshalJSON writes the outcome with its error as text.
func (p ProbeResult) MarshalJSON() ([]byte, error) {
	v := struct {
		Probe      string `json:"probe"`
		Function   string `json:"function"`
		Passed     bool   `json:"passed"`
		DurationMS int64  `json:"durationMs"`
		Error      string `json:"error,omitempty"`
	}{Probe: p.Probe, Function: p.Function, Passed: p.Err == nil, DurationMS: p.Duration.Milliseconds()}
	if p.Err != nil {
		v.Error = p.Err.Error()
	}
	return json.Marshal(v)
}

// Hook is the PreTraffic hook. It is safe for concurrent use.
type Hook struct {
	cfg      Config
	invoker  Invoker
	reporter Reporter
	log      *slog.Logger
	now      func() time.Time
	where    stateMachine
}

// Option configures a Hook.
type Option func(*Hook)

// WithClock sets the clock the probes' timestamps come from (default
// time.Now).
func WithClock(now func() time.Time) Option { return func(h *Hook) { h.now = now } }

// New returns the hook. log receives one line per probe and one for the
// report; nil discards.
func New(cfg Config, invoker Invoker, reporter Reporter, log *slog.Logger, opts ...Option) (*Hook, error) {
	if invoker == nil || reporter == nil {
		return nil, errors.New("pretraffic: a Lambda invoker and a CodeDeploy reporter are required")
	}
	for _, v := range []struct{ name, value string }{
		{"Orchestrator", cfg.Orchestrator}, {"Debit", cfg.Debit}, {"Credit", cfg.Credit},
		{"Refund", cfg.Refund}, {"Reaper", cfg.Reaper},
	} {
		if strings.TrimSpace(v.value) == "" {
			return nil, fmt.Errorf("pretraffic: Config.%s (the version to probe) is required", v.name)
		}
	}
	where, err := parseStateMachineARN(cfg.StateMachineARN)
	if err != nil {
		return nil, fmt.Errorf("pretraffic: Config.StateMachineARN: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hook{cfg: cfg, invoker: invoker, reporter: reporter, log: log, now: time.Now, where: where}
	for _, o := range opts {
		o(h)
	}
	return h, nil
}

// Handle is the Lambda handler: it runs the probes, then reports the
// deployment's status. A probe that fails makes the status Failed, not an
// error of the handler; the handler fails when the event names nothing to
// report for (ErrInvalidEvent) or when the report fails (*ReportError).
func (h *Hook) Handle(ctx context.Context, ev Event) (Result, error) {
	if ev.DeploymentID == "" || ev.LifecycleEventHookExecutionID == "" {
		h.log.ErrorContext(ctx, "hook event without its ids", "deploymentId", ev.DeploymentID,
			"lifecycleEventHookExecutionId", ev.LifecycleEventHookExecutionID)
		return Result{}, ErrInvalidEvent
	}
	log := h.log.With("deploymentId", ev.DeploymentID, "lifecycleEventHookExecutionId", ev.LifecycleEventHookExecutionID)

	pctx, cancel := probeContext(ctx)
	res := Result{Status: StatusSucceeded, Probes: h.runProbes(pctx, ev, log)}
	cancel()
	var failed []string
	for _, p := range res.Probes {
		if p.Err != nil {
			res.Status = StatusFailed
			failed = append(failed, p.Probe)
		}
	}

	_, err := h.reporter.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
		DeploymentId:                  aws.String(ev.DeploymentID),
		LifecycleEventHookExecutionId: aws.String(ev.LifecycleEventHookExecutionID),
		Status:                        cdtypes.LifecycleEventStatus(res.Status),
	})
	if err != nil {
		rerr := &ReportError{DeploymentID: ev.DeploymentID, ExecutionID: ev.LifecycleEventHookExecutionID, Status: res.Status, Err: err}
		log.ErrorContext(ctx, "hook status not reported", "status", res.Status, "failedProbes", failed, "error", err)
		return res, rerr
	}
	log.InfoContext(ctx, "hook status reported", "status", res.Status, "failedProbes", failed)
	return res, nil
}

// probeContext is the probes' context: the handler's deadline less the
// time kept to report, or DefaultProbeTimeout without a deadline.
func probeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, DefaultProbeTimeout)
	}
	reserve := min(ReportReserve, time.Until(deadline)/2)
	return context.WithDeadline(ctx, deadline.Add(-reserve))
}

// probe is one version to invoke, the payload to invoke it with and the
// judge of its answer.
type probe struct {
	name     string
	function string
	payload  func(ev Event) ([]byte, error)
	judge    func(out *lambda.InvokeOutput) error
}

func (h *Hook) probes() []probe {
	return []probe{
		{ProbeOrchestrator, h.cfg.Orchestrator, h.orchestratorEvent, judgeOrchestrator},
		{ProbeDebit, h.cfg.Debit, h.legTask(ProbeDebit), judgeLeg},
		{ProbeCredit, h.cfg.Credit, h.legTask(ProbeCredit), judgeLeg},
		{ProbeRefund, h.cfg.Refund, h.legTask(ProbeRefund), judgeLeg},
		{ProbeReaper, h.cfg.Reaper, h.reaperEvent, judgeReaper},
	}
}

// runProbes runs every probe concurrently and returns their outcomes in
// the order of probes.
func (h *Hook) runProbes(ctx context.Context, ev Event, log *slog.Logger) []ProbeResult {
	ps := h.probes()
	out := make([]ProbeResult, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			start := time.Now()
			err := h.run(ctx, p, ev)
			r := ProbeResult{Probe: p.name, Function: p.function, Duration: time.Since(start)}
			if err != nil {
				r.Err = &ProbeError{Probe: p.name, Function: p.function, Err: err}
			}
			out[i] = r
			logProbe(ctx, log, r)
		})
	}
	wg.Wait()
	return out
}

func logProbe(ctx context.Context, log *slog.Logger, r ProbeResult) {
	attrs := []slog.Attr{
		slog.String("probe", r.Probe),
		slog.String("function", r.Function),
		slog.Int64("durationMs", r.Duration.Milliseconds()),
	}
	switch {
	case r.Err == nil:
		log.LogAttrs(ctx, slog.LevelInfo, "probe passed", attrs...)
	case errors.Is(r.Err, ErrLegAccepted):
		log.LogAttrs(ctx, slog.LevelError, "probe failed: a leg accepted a task of a transfer that does not exist",
			append(attrs, slog.String("error", r.Err.Error()))...)
	default:
		log.LogAttrs(ctx, slog.LevelWarn, "probe failed", append(attrs, slog.String("error", r.Err.Error()))...)
	}
}

// run invokes the probe's version synchronously and judges the answer.
func (h *Hook) run(ctx context.Context, p probe, ev Event) error {
	payload, err := p.payload(ev)
	if err != nil {
		return fmt.Errorf("build the payload: %w", err)
	}
	out, err := h.invoker.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(p.function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvoke, err)
	}
	return p.judge(out)
}

// functionError is the function error of an answer, nil without one.
func functionError(out *lambda.InvokeOutput) *FunctionError {
	if out.FunctionError == nil {
		return nil
	}
	fe := &FunctionError{Kind: aws.ToString(out.FunctionError)}
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if err := json.Unmarshal(out.Payload, &doc); err != nil || doc.Type == "" {
		fe.Message = shown(out.Payload)
		return fe
	}
	fe.Type, fe.Message = doc.Type, doc.Message
	return fe
}
