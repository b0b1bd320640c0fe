// Package reaper pushes forward the transfers whose workflow failed, timed
// out, was aborted, or never ran, and settles those that cannot complete.
//
// The reaper Lambda takes two kinds of EventBridge event:
//
//   - "Step Functions Execution Status Change" (FAILED, TIMED_OUT, ABORTED):
//     the execution's input names the idempotency record; that transfer is
//     settled.
//   - "Scheduled Event": the sweep. Records still RESERVED, IN_PROGRESS or
//     RECONCILING some time after their creation are read from the sparse
//     Pending index and settled, a bounded number per run.
//
// Settling a transfer (Settle) rolls it forward. It decides from the
// record, the execution of the record's current attempt and the ledger,
// with every write conditional, so duplicate events, concurrent reapers
// and a reaper that stops between two steps are harmless:
//
//	record terminal                               nothing to do
//	execution RUNNING                             leave it: the workflow finishes (machine timeout)
//	RESERVED, no execution                        StartExecution of the attempt, with the orchestrator's input
//	IN_PROGRESS, execution lost                   resume (below)
//	execution closed, record not terminal:
//	    aborted by an operator (with a cause)     settle: refund a lone debit, FAILED "Aborted"
//	    DEBIT + CREDIT                            settle: COMPLETED
//	    DEBIT + REFUND (a refused credit)         settle: FAILED reversed with the refusal's code
//	    anything else                             resume (below)
//	past the completion window (CompleteWithin)   settle: COMPLETED if credited, else refund a lone
//	                                              debit, FAILED "TimedOut"
//	RECONCILING                                   settle, for the reason its fence stored
//
// Resuming moves the record to its next attempt (RESERVED, attempt + 1)
// and starts that attempt's execution, named after the transfer and the
// attempt (transfer.ExecutionName): Step Functions keeps a closed
// execution's name for 90 days. The new run replays what committed (a
// leg's entry is written once) and goes on: no debit, it debits; a debit,
// it credits. Every step of a run is fenced to its attempt, so a run that
// was given up can commit nothing once the record has moved on.
//
// Settling fences the record (RECONCILING, with the reason), on condition
// that it is still this transfer's, in the status and attempt the
// decision was taken on (or already RECONCILING). From then on no DEBIT or
// CREDIT can commit, so the ledger read after it is final; only the
// REFUND leg, which the reaper itself drives, is still accepted. A reaper
// that stops after the fence leaves the record RECONCILING, in the Pending
// index, and the next event or sweep finishes it.
package reaper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Defaults of Config.
const (
	DefaultStuckAfter     = 15 * time.Minute
	DefaultCompleteWithin = time.Hour
	DefaultSweepLimit     = 100
	DefaultNotFoundGrace  = time.Minute
	DefaultAttentionAfter = 5
	DefaultMaxBackoff     = 6 * time.Hour
)

// Environment variables read by ConfigFromEnv.
const (
	EnvIdempotencyTable     = "IDEMPOTENCY_TABLE"
	EnvLedgerTable          = "LEDGER_TABLE"
	EnvStateMachineARN      = "STATE_MACHINE_ARN"
	EnvStuckAfterSeconds    = "STUCK_AFTER_SECONDS"
	EnvNotFoundGraceSeconds = "NOT_FOUND_GRACE_SECONDS"
	EnvCompleteWithin       = "COMPLETE_WITHIN_SECONDS"
)

// EventBridge detail-type and source values the handler dispatches on.
const (
	DetailTypeStatusChange = "Step Functions Execution Status Change"
	DetailTypeScheduled    = "Scheduled Event"
	SourceScheduled        = "aws.events"
)

// Config configures a Reaper.
type Config struct {
	// IdempotencyTable holds the idempotency records.
	IdempotencyTable string
	// LedgerTable holds accounts and ledger entries; the reaper reaches it
	// through its Ledger, and FromEnv builds that ledger on it.
	LedgerTable string
	// StateMachineARN is the transfer state machine. Executions are named
	// by transferId under it.
	StateMachineARN string
	// StuckAfter is how old a non-terminal record must be before the sweep
	// settles it. Default DefaultStuckAfter.
	StuckAfter time.Duration
	// CompleteWithin is the completion window: how long after its
	// reservation a transfer is pushed forward. Inside it an execution
	// that dies for any reason but an operator's abort is resumed; past
	// it, the transfer is settled from the ledger and a lone debit is
	// refunded (CodeTimedOut). Default DefaultCompleteWithin.
	CompleteWithin time.Duration
	// SweepLimit bounds the records one sweep settles; each pending status
	// (RECONCILING, IN_PROGRESS, RESERVED) gets its own share, so records
	// of one status that keep failing cannot starve the others. Default
	// DefaultSweepLimit.
	SweepLimit int
	// NotFoundGrace is how long after an IN_PROGRESS record's last update
	// the reaper still waits when DescribeExecution says its execution
	// does not exist: DescribeExecution is eventually consistent, so a
	// healthy execution that just started may not be visible yet.
	// Default DefaultNotFoundGrace.
	NotFoundGrace time.Duration
	// AttentionAfter is the number of failed sweeps after which a record
	// is flagged for an operator (needsAttention, and the NeedsAttention
	// metric). Each failure also pushes the record's next sweep back
	// (StuckAfter doubled per failure, at most MaxBackoff). Defaults
	// DefaultAttentionAfter and DefaultMaxBackoff.
	AttentionAfter int
	MaxBackoff     time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// ConfigFromEnv reads the configuration from the environment:
// IDEMPOTENCY_TABLE, LEDGER_TABLE and STATE_MACHINE_ARN (required),
// STUCK_AFTER_SECONDS (a positive integer, default 900),
// NOT_FOUND_GRACE_SECONDS (a positive integer, default 60) and
// COMPLETE_WITHIN_SECONDS (a positive integer, default 3600).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		IdempotencyTable: getenv(EnvIdempotencyTable),
		LedgerTable:      getenv(EnvLedgerTable),
		StateMachineARN:  getenv(EnvStateMachineARN),
	}
	for _, v := range []struct{ name, value string }{
		{EnvIdempotencyTable, cfg.IdempotencyTable},
		{EnvLedgerTable, cfg.LedgerTable},
		{EnvStateMachineARN, cfg.StateMachineARN},
	} {
		if v.value == "" {
			return Config{}, fmt.Errorf("reaper: environment variable %s is required", v.name)
		}
	}
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{
		{EnvStuckAfterSeconds, &cfg.StuckAfter},
		{EnvNotFoundGraceSeconds, &cfg.NotFoundGrace},
		{EnvCompleteWithin, &cfg.CompleteWithin},
	} {
		d, err := seconds(getenv, v.name)
		if err != nil {
			return Config{}, err
		}
		*v.dst = d
	}
	return cfg, nil
}

// seconds reads an optional positive number of seconds (at most a year);
// 0 when unset.
func seconds(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(365*24*3600) {
		return 0, fmt.Errorf("reaper: environment variable %s must be a positive number of seconds, got %q", name, v)
	}
	return time.Duration(n) * time.Second, nil
}

// DynamoDBAPI is the part of the DynamoDB client the reaper uses on the
// idempotency table.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// StepFunctionsAPI is the part of the Step Functions client the reaper
// uses.
type StepFunctionsAPI interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, optFns ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
}

var _ StepFunctionsAPI = (*sfn.Client)(nil)

// Ledger reads a transfer's entries and its debit's final rejection, and
// posts its REFUND leg; *ledger.Ledger is one.
type Ledger interface {
	TransferEntries(ctx context.Context, transferID, source, destination string) (map[ledger.Kind]ledger.Entry, error)
	Rejection(ctx context.Context, transferID, source string) (*ledger.VoidedError, error)
	Post(ctx context.Context, leg ledger.Leg) (ledger.Entry, error)
}

var _ Ledger = (*ledger.Ledger)(nil)

// Reaper settles transfers. It is safe for concurrent use, and any number
// of reapers may work on the same transfers.
type Reaper struct {
	cfg        Config
	db         DynamoDBAPI
	sfn        StepFunctionsAPI
	ledger     Ledger
	log        *slog.Logger
	execPrefix string // execution ARN of a transfer, without its name
}

// New returns a reaper. log receives one line per decision; nil discards.
func New(cfg Config, db DynamoDBAPI, sfnClient StepFunctionsAPI, l Ledger, log *slog.Logger) (*Reaper, error) {
	if db == nil || sfnClient == nil || l == nil {
		return nil, errors.New("reaper: DynamoDB client, Step Functions client and ledger are required")
	}
	if cfg.IdempotencyTable == "" {
		return nil, errors.New("reaper: IdempotencyTable is required")
	}
	prefix, err := executionPrefix(cfg.StateMachineARN)
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	if cfg.StuckAfter == 0 {
		cfg.StuckAfter = DefaultStuckAfter
	}
	if cfg.CompleteWithin == 0 {
		cfg.CompleteWithin = DefaultCompleteWithin
	}
	if cfg.SweepLimit == 0 {
		cfg.SweepLimit = DefaultSweepLimit
	}
	if cfg.NotFoundGrace == 0 {
		cfg.NotFoundGrace = DefaultNotFoundGrace
	}
	if cfg.AttentionAfter == 0 {
		cfg.AttentionAfter = DefaultAttentionAfter
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.StuckAfter < 0 || cfg.CompleteWithin < 0 || cfg.SweepLimit < 0 || cfg.NotFoundGrace < 0 ||
		cfg.AttentionAfter < 0 || cfg.MaxBackoff < 0 {
		return nil, errors.New("reaper: StuckAfter, CompleteWithin, SweepLimit, NotFoundGrace, AttentionAfter and MaxBackoff must not be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reaper{cfg: cfg, db: db, sfn: sfnClient, ledger: l, log: log, execPrefix: prefix}, nil
}

// FromEnv builds a reaper from the environment (see ConfigFromEnv) with a
// ledger on LEDGER_TABLE over the same DynamoDB client.
func FromEnv(getenv func(string) string, db *dynamodb.Client, sfnClient StepFunctionsAPI, log *slog.Logger) (*Reaper, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	l, err := ledger.New(db, ledger.Config{LedgerTable: cfg.LedgerTable, IdempotencyTable: cfg.IdempotencyTable})
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	return New(cfg, db, sfnClient, l, log)
}

// executionPrefix turns arn:P:states:R:A:stateMachine:NAME into
// arn:P:states:R:A:execution:NAME: (the execution name follows).
func executionPrefix(stateMachineARN string) (string, error) {
	parts := strings.Split(stateMachineARN, ":")
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "states" || parts[5] != "stateMachine" || parts[6] == "" {
		return "", fmt.Errorf("StateMachineARN %q is not a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)", stateMachineARN)
	}
	parts[5] = "execution"
	return strings.Join(parts, ":") + ":", nil
}

// executionARN is the ARN of the execution of transferID.
func (r *Reaper) executionARN(transferID string) string { return r.execPrefix + transferID }

// ErrUnsupportedEvent reports an event the reaper does not handle.
var ErrUnsupportedEvent = errors.New("unsupported event")

// ErrMalformedEvent reports a status change event whose detail cannot name
// a transfer.
var ErrMalformedEvent = errors.New("malformed status change event")

// envelope is the part of an EventBridge event the handler reads.
type envelope struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Detail     json.RawMessage `json:"detail"`
}

// statusChange is the detail of a Step Functions execution status change.
type statusChange struct {
	ExecutionArn    string `json:"executionArn"`
	StateMachineArn string `json:"stateMachineArn"`
	Name            string `json:"name"`
	Status          string `json:"status"`
	// Input is the execution input, a JSON document in a string.
	Input string  `json:"input"`
	Error *string `json:"error"`
	Cause *string `json:"cause"`
}

// Handle is the Lambda handler. It settles the transfer of a status change
// event, or sweeps on a scheduled event. An error makes EventBridge (or
// Lambda's asynchronous retries) deliver the event again; every step is
// conditional, so a redelivery is harmless.
func (r *Reaper) Handle(ctx context.Context, event json.RawMessage) error {
	var env envelope
	if err := json.Unmarshal(event, &env); err != nil {
		return fmt.Errorf("reaper: decode event: %w", err)
	}
	switch {
	case env.DetailType == DetailTypeStatusChange:
		return r.handleStatusChange(ctx, env.Detail)
	case env.DetailType == DetailTypeScheduled && env.Source == SourceScheduled:
		_, err := r.Sweep(ctx)
		return err
	}
	r.log.ErrorContext(ctx, "unsupported event", "detailType", env.DetailType, "source", env.Source)
	return fmt.Errorf("reaper: %w: detail-type %q from %q", ErrUnsupportedEvent, env.DetailType, env.Source)
}

func (r *Reaper) handleStatusChange(ctx context.Context, raw json.RawMessage) error {
	var d statusChange
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("reaper: %w: %v", ErrMalformedEvent, err)
	}
	if d.StateMachineArn != r.cfg.StateMachineARN {
		// The rule matches only this state machine; an event of another
		// one is not ours to settle.
		r.log.WarnContext(ctx, "status change of another state machine ignored",
			"stateMachineArn", d.StateMachineArn, "execution", d.ExecutionArn)
		return nil
	}
	var in transfer.WorkflowInput
	if err := json.Unmarshal([]byte(d.Input), &in); err != nil {
		r.log.ErrorContext(ctx, "status change without a readable input", "execution", d.ExecutionArn, "error", err)
		return fmt.Errorf("reaper: %w: execution %s: input: %v", ErrMalformedEvent, d.ExecutionArn, err)
	}
	if in.RecordKey == "" || d.Name == "" || transfer.ExecutionName(in.TransferID, in.Attempt) != d.Name {
		r.log.ErrorContext(ctx, "status change does not name a transfer", "execution", d.ExecutionArn,
			"name", d.Name, "inputTransferId", in.TransferID)
		return fmt.Errorf("reaper: %w: execution %s: input names transfer %q and record %q",
			ErrMalformedEvent, d.ExecutionArn, in.TransferID, in.RecordKey)
	}
	r.log.InfoContext(ctx, "execution closed", "transferId", in.TransferID, "recordKey", in.RecordKey, "attempt", in.Attempt,
		"executionStatus", d.Status, "executionError", deref(d.Error))
	_, err := r.Settle(ctx, in.RecordKey, in.TransferID)
	return err
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
