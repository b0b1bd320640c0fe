package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// Options configure Start.
type Options struct {
	// DynamoDBEndpoint is a running DynamoDB Local; "" starts one for the
	// stack. With a shared endpoint the stack's tables are deleted on
	// Close, so the next stack starts empty.
	DynamoDBEndpoint string
	// TimeScale scales the workflow's and the event bus's retry intervals
	// and timeouts; 0 is DefaultTimeScale.
	TimeScale float64
	// Parameters override template parameters on top of the harness's
	// own: short stuck and grace periods, so the sweep settles at once.
	Parameters map[string]string
	// Faults, when set, is wired into the stack (stack.Options.Faults);
	// Quiesce disarms it.
	Faults *fault.Injector
	// Logger receives the stack's logs; nil discards them.
	Logger *slog.Logger
	// TransformedTemplate and Schedules are the stack's
	// (stack.Options): the template whose policies the calls are checked
	// against, and whether the template's schedules run (first after
	// FirstScheduleAfter).
	TransformedTemplate string
	Schedules           bool
	FirstScheduleAfter  time.Duration
}

// DefaultTimeScale makes the workflow's retries take milliseconds.
const DefaultTimeScale = 0.01

// harnessParameters are the template parameters the harness sets: a
// record counts as stuck, and a missing execution as gone, after a second;
// no per-caller rate limit, as the clients send far more than a caller's
// limit on purpose.
var harnessParameters = map[string]string{
	"StuckAfterSeconds":    "1",
	"NotFoundGraceSeconds": "1",
	"CallerRateLimit":      "0",
}

// Harness is a running local stack with clients for a test.
type Harness struct {
	Stack *stack.Stack
	// DB and SFN are clients of the stack's services with no faults.
	DB  *dynamodb.Client
	SFN *sfn.Client
	// Ledger opens accounts.
	Ledger                        *ledger.Ledger
	LedgerTable, IdempotencyTable string
	// StateMachine is the transfer state machine's ARN.
	StateMachine string
	// Client calls the API.
	Client *Client
	// Opening lists the accounts opened through OpenAccount.
	Opening map[string]Opening
	// StuckAfter is how old a record must be before a sweep settles it.
	StuckAfter time.Duration

	faults    *fault.Injector
	sharedDDB bool
	// options start the stack again (Restart).
	options stack.Options
}

// Start starts the stack in-process and its clients. Close stops it.
func Start(ctx context.Context, opts Options) (*Harness, error) {
	params, stuck, err := parameters(opts.Parameters)
	if err != nil {
		return nil, err
	}
	so := stack.Options{
		DynamoDBEndpoint: opts.DynamoDBEndpoint,
		TimeScale:        cmpOr(opts.TimeScale, DefaultTimeScale),
		Parameters:       params,
		Logger:           opts.Logger,
		Faults:           opts.Faults,

		TransformedTemplate: opts.TransformedTemplate,
		Schedules:           opts.Schedules,
		FirstScheduleAfter:  opts.FirstScheduleAfter,
	}
	st, err := stack.Start(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("chaos: start the local stack: %w", err)
	}
	h := &Harness{Stack: st, Opening: map[string]Opening{}, StuckAfter: stuck, faults: opts.Faults, sharedDDB: opts.DynamoDBEndpoint != "", options: so}
	if err := h.init(ctx); err != nil {
		return nil, errors.Join(err, h.Close(context.Background()))
	}
	return h, nil
}

func cmpOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// parameters merges the harness's parameters with the caller's and
// returns the stuck period they set.
func parameters(extra map[string]string) (map[string]string, time.Duration, error) {
	out := maps.Clone(harnessParameters)
	maps.Copy(out, extra)
	n, err := strconv.Atoi(out["StuckAfterSeconds"])
	if err != nil || n < 1 {
		return nil, 0, fmt.Errorf("chaos: StuckAfterSeconds %q is not a positive number", out["StuckAfterSeconds"])
	}
	return out, time.Duration(n) * time.Second, nil
}

func (h *Harness) init(ctx context.Context) error {
	st := h.Stack
	h.LedgerTable, h.IdempotencyTable = st.Tables["LedgerTable"], st.Tables["IdempotencyTable"]
	h.StateMachine = st.StateMachines["TransferStateMachine"]
	if h.LedgerTable == "" || h.IdempotencyTable == "" || h.StateMachine == "" {
		return fmt.Errorf("chaos: the stack lacks LedgerTable, IdempotencyTable or TransferStateMachine: %v %v", st.Tables, st.StateMachines)
	}
	// Own clients, not the stack's configuration: faults injected into
	// the functions' SDK calls must not touch the checks.
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(stack.Region))
	if err != nil {
		return fmt.Errorf("chaos: AWS configuration: %w", err)
	}
	h.DB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(st.DynamoDBEndpoint) })
	h.SFN = sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(st.SFNEndpoint) })
	if h.Ledger, err = ledger.New(h.DB, ledger.Config{LedgerTable: h.LedgerTable, IdempotencyTable: h.IdempotencyTable}); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	h.Client = NewClient(st.APIURL)
	return nil
}

// Close stops the stack; with a shared DynamoDB it deletes the stack's
// tables first.
func (h *Harness) Close(ctx context.Context) error {
	var errs []error
	if err := h.Stack.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("chaos: stop the stack: %w", err))
	}
	if h.sharedDDB && h.DB != nil {
		for _, name := range h.Stack.Tables {
			if _, err := h.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				errs = append(errs, fmt.Errorf("chaos: delete table %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Restart stops the stack at once, as a crash of the whole runtime does:
// its running executions and invocations are lost, nothing is drained or
// settled. down runs while the stack is down; then the stack starts again
// on the same tables, with the same options. It needs a DynamoDB Local
// that outlives the stack (Options.DynamoDBEndpoint).
func (h *Harness) Restart(ctx context.Context, down func()) error {
	if !h.sharedDDB {
		return errors.New("chaos: restart: the stack's DynamoDB Local would stop with it; start it with Options.DynamoDBEndpoint")
	}
	crashed, cancel := context.WithCancel(context.Background())
	cancel() // no grace: running executions are aborted at once
	// What a crash leaves unfinished fails (aborted executions, cancelled
	// invocations): that is the point, not an error of the restart.
	_ = h.Stack.Close(crashed)
	if down != nil {
		down()
	}
	st, err := stack.Start(ctx, h.options)
	if err != nil {
		return fmt.Errorf("chaos: restart the local stack: %w", err)
	}
	h.Stack = st
	return h.init(ctx)
}

// OpenAccount opens an account of caller (see Scope) and adds it to
// Opening.
func (h *Harness) OpenAccount(ctx context.Context, id, caller, currency string, balance int64) error {
	created, err := h.Ledger.OpenAccount(ctx, id, Scope(caller), currency, balance)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	if !created {
		return fmt.Errorf("chaos: open account %s: it already exists", id)
	}
	h.Opening[id] = Opening{Currency: currency, Balance: balance}
	return nil
}

// SetOwner gives an account to another owner (a caller scope, see Scope),
// as an operator's change of the account's owner would: the ledger has
// no operation for it, so this writes the attribute.
func (h *Harness) SetOwner(ctx context.Context, id, owner string) error {
	update, err := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name("owner"), expression.Value(owner))).
		WithCondition(expression.AttributeExists(expression.Name("pk"))).
		Build()
	if err != nil {
		return fmt.Errorf("chaos: give account %s to %s: %w", id, owner, err)
	}
	if _, err := h.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(h.LedgerTable),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "ACCOUNT#" + id},
			"sk": &ddbtypes.AttributeValueMemberS{Value: "ACCOUNT"},
		},
		UpdateExpression:          update.Update(),
		ConditionExpression:       update.Condition(),
		ExpressionAttributeNames:  update.Names(),
		ExpressionAttributeValues: update.Values(),
	}); err != nil {
		return fmt.Errorf("chaos: give account %s to %s: %w", id, owner, err)
	}
	return nil
}

// ReaperFunction is the reaper's function name in the local stack.
const ReaperFunction = "ReaperFunction"

// Sweep invokes the reaper with a scheduled event, as the schedule would.
func (h *Harness) Sweep(ctx context.Context) error {
	event, err := json.Marshal(map[string]any{
		"version": "0", "id": strconv.FormatInt(time.Now().UnixNano(), 36), "detail-type": "Scheduled Event",
		"source": "aws.events", "account": stack.AccountID, "time": time.Now().UTC().Format(time.RFC3339),
		"region": stack.Region, "resources": []string{}, "detail": map[string]any{},
	})
	if err != nil {
		return err
	}
	_, fnErr, err := h.Stack.Functions.InvokeFunction(ctx, ReaperFunction, event)
	if err != nil {
		return fmt.Errorf("chaos: sweep: %w", err)
	}
	if fnErr != nil {
		return fmt.Errorf("chaos: sweep: %s: %s", fnErr.Type, fnErr.Message)
	}
	return nil
}

// Running returns the ARNs of the transfer executions still running.
func (h *Harness) Running(ctx context.Context) ([]string, error) {
	var arns []string
	pages := sfn.NewListExecutionsPaginator(h.SFN, &sfn.ListExecutionsInput{
		StateMachineArn: aws.String(h.StateMachine), StatusFilter: sfntypes.ExecutionStatusRunning, MaxResults: 1000,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: list running executions: %w", err)
		}
		for _, e := range page.Executions {
			arns = append(arns, aws.ToString(e.ExecutionArn))
		}
	}
	return arns, nil
}

// Pending returns the records that are not terminal.
func (h *Harness) Pending(ctx context.Context) ([]reservation.Record, error) {
	s, err := ReadSnapshot(ctx, h.DB, h.LedgerTable, h.IdempotencyTable)
	if err != nil {
		return nil, err
	}
	var out []reservation.Record
	for _, k := range slices.Sorted(maps.Keys(s.Records)) {
		if rec := s.Records[k]; !rec.Status.Terminal() {
			out = append(out, rec)
		}
	}
	return out, nil
}

// QuiesceReport says what Quiesce did.
type QuiesceReport struct {
	// Sweeps is the number of sweeps invoked; SweepErrors those that
	// failed.
	Sweeps, SweepErrors int
	// Pending is what was left non-terminal when Quiesce gave up; empty
	// on success.
	Pending []reservation.Record
	// Running is the executions still running when Quiesce gave up.
	Running []string
	// Expired is the number of items the TTL emulator deleted.
	Expired int
	// FailedInvocations are the events the stack sent to an on-failure
	// destination or dead-letter queue, during the run or Quiesce.
	FailedInvocations []stack.FailedInvocation
	Elapsed           time.Duration
}

// quiescePoll is how often Quiesce looks again; settleTimeout bounds one
// wait for the stack to come to rest.
const (
	quiescePoll   = 50 * time.Millisecond
	settleTimeout = 30 * time.Second
)

// Quiesce brings the stack to rest: it disarms the faults, waits for the
// running executions, the event deliveries, the asynchronous invocations
// and the faults' late work, then sweeps until every record is terminal
// (or ctx ends: give it a deadline), then runs the TTL emulator once. It
// returns an error when it gave up; the report says what was left.
func (h *Harness) Quiesce(ctx context.Context) (QuiesceReport, error) {
	start := time.Now()
	var rep QuiesceReport
	done := func(err error) (QuiesceReport, error) {
		rep.Elapsed = time.Since(start)
		rep.FailedInvocations = h.Stack.FailedInvocations()
		if err != nil {
			rest := context.WithoutCancel(ctx)
			rep.Running, _ = h.Running(rest)
			rep.Pending, _ = h.Pending(rest)
		}
		return rep, err
	}
	if h.faults != nil {
		h.faults.Reset()
	}
	var unquiet error
	for {
		// A stack that does not come to rest (a hung invocation, say) is
		// reported, but the sweeps still run, so the invariants are
		// checked on settled records.
		sctx, cancel := context.WithTimeout(ctx, settleTimeout)
		err := h.settle(sctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return done(err)
			}
			unquiet = err
		}
		pending, err := h.Pending(ctx)
		if err != nil {
			return done(fmt.Errorf("chaos: quiesce: %w", err))
		}
		if len(pending) == 0 {
			break
		}
		// The sweep takes only records whose sweepAt (creation or last
		// resume) is older than StuckAfter.
		youngest := time.Time{}
		for _, r := range pending {
			at := cmp.Or(r.SweepAt, r.CreatedAt)
			if c, err := time.Parse(reservation.TimeFormat, at); err == nil && c.After(youngest) {
				youngest = c
			}
		}
		wait := time.Until(youngest.Add(h.StuckAfter))
		if err := sleep(ctx, max(min(wait, time.Second), quiescePoll)); err != nil {
			return done(fmt.Errorf("chaos: quiesce: %d records left: %w", len(pending), err))
		}
		rep.Sweeps++
		if err := h.Sweep(ctx); err != nil {
			rep.SweepErrors++
			if ctx.Err() != nil {
				return done(fmt.Errorf("chaos: quiesce: %d records left: %w", len(pending), err))
			}
		}
	}
	if h.Stack.TTL != nil {
		n, err := h.Stack.TTL.RunNow(ctx)
		if err != nil {
			return done(fmt.Errorf("chaos: quiesce: TTL: %w", err))
		}
		rep.Expired = n
	}
	if unquiet != nil {
		return done(fmt.Errorf("chaos: quiesce: the records settled, but the stack did not come to rest within %v: %w", settleTimeout, unquiet))
	}
	return done(nil)
}

// settle waits until, at one moment, no execution runs and the stack is
// quiet (stack.Drain).
func (h *Harness) settle(ctx context.Context) error {
	for {
		if err := h.Stack.Drain(ctx); err != nil {
			return fmt.Errorf("chaos: quiesce: %w", err)
		}
		running, err := h.Running(ctx)
		if err != nil {
			return err
		}
		if len(running) == 0 {
			if err := h.Stack.Drain(ctx); err != nil {
				return fmt.Errorf("chaos: quiesce: %w", err)
			}
			if running, err = h.Running(ctx); err != nil {
				return err
			}
			if len(running) == 0 {
				return nil
			}
		}
		if err := sleep(ctx, quiescePoll); err != nil {
			return fmt.Errorf("chaos: quiesce: %d executions still running: %w", len(running), err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Check checks the invariants on the stack's tables against Opening. It
// returns the snapshot it read, for reporting a violation's history.
func (h *Harness) Check(ctx context.Context) (Report, *Snapshot, error) {
	s, err := ReadSnapshot(ctx, h.DB, h.LedgerTable, h.IdempotencyTable)
	if err != nil {
		return Report{}, nil, err
	}
	return s.Check(h.Opening), s, nil
}

// ExecutionARN is the ARN of a transfer's execution (executions are named
// by transfer id).
func (h *Harness) ExecutionARN(transferID string) string {
	return strings.Replace(h.StateMachine, ":stateMachine:", ":execution:", 1) + ":" + transferID
}

// History returns a transfer's execution history, one line per event.
func (h *Harness) History(ctx context.Context, transferID string) ([]string, error) {
	var lines []string
	pages := sfn.NewGetExecutionHistoryPaginator(h.SFN, &sfn.GetExecutionHistoryInput{
		ExecutionArn: aws.String(h.ExecutionARN(transferID)), MaxResults: 1000,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return lines, fmt.Errorf("chaos: history of %s: %w", transferID, err)
		}
		for _, e := range page.Events {
			lines = append(lines, describeEvent(e))
		}
	}
	return lines, nil
}

// describeEvent is one line of an execution history: id, time, type and
// whatever the event details carry (state name, error, cause).
func describeEvent(e sfntypes.HistoryEvent) string {
	s := fmt.Sprintf("%3d %s %s", e.Id, aws.ToTime(e.Timestamp).UTC().Format("15:04:05.000"), e.Type)
	// The details are in one of many typed fields; their JSON is the
	// shortest way to show whichever is set.
	e.Id, e.PreviousEventId, e.Timestamp, e.Type = 0, 0, nil, ""
	if b, err := json.Marshal(e); err == nil {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			for k, v := range m {
				if v == nil || k == "Id" || k == "PreviousEventId" || k == "Type" || k == "Timestamp" {
					delete(m, k)
				}
			}
			if len(m) > 0 {
				if d, err := json.Marshal(m); err == nil {
					s += " " + truncate(string(d), 400)
				}
			}
		}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
