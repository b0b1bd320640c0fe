package reaper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Outcome is what Settle decided.
type Outcome string

// Outcomes of Settle.
const (
	// OutcomeNotFound: no record under the key, or the key now belongs to
	// another transfer; nothing to settle.
	OutcomeNotFound Outcome = "not-found"
	// OutcomeAlreadySettled: the record is COMPLETED or FAILED.
	OutcomeAlreadySettled Outcome = "already-settled"
	// OutcomeRunning: the execution is running; the workflow settles the
	// transfer (its machine timeout bounds the wait).
	OutcomeRunning Outcome = "running"
	// OutcomeStarted: a RESERVED record had no execution; it was started.
	OutcomeStarted Outcome = "started"
	// OutcomeRestarted: an IN_PROGRESS record's execution does not exist
	// (it was lost, as executions of a stopped local runtime are); a new
	// one was started from the stored record with the same name and
	// input, so the transfer finishes instead of being reversed. Every
	// leg of the new execution replays what the lost one committed.
	OutcomeRestarted Outcome = "restarted"
	// OutcomeCompleted: debit and credit were posted; the record is now
	// COMPLETED.
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed: no money moved; the record is now FAILED.
	OutcomeFailed Outcome = "failed"
	// OutcomeReversed: the debit was refunded (now or before); the record
	// is now FAILED with reversed = true.
	OutcomeReversed Outcome = "reversed"
)

// Failure codes the reaper stores when the execution reports no error.
const (
	CodeNotStarted        = "NotStarted"
	CodeExecutionFailed   = "ExecutionFailed"
	CodeExecutionTimedOut = "ExecutionTimedOut"
	CodeExecutionAborted  = "ExecutionAborted"
	// CodeOutcomeNotStored: the execution succeeded but the record was not
	// terminal.
	CodeOutcomeNotStored = "OutcomeNotStored"
	// CodeExecutionNotFound: the record is IN_PROGRESS but its execution
	// does not exist (any more).
	CodeExecutionNotFound = "ExecutionNotFound"
	// CodeTransferFenced: the record was already fenced while its
	// execution still ran; the execution can commit nothing and fails
	// with this error.
	CodeTransferFenced = "TransferFenced"
)

// maxRounds bounds how often Settle reads the record again after losing a
// conditional write to a concurrent change. Each round follows a change of
// the record, which has few states, so reaching it means something keeps
// changing the record; the error makes the event come again.
const maxRounds = 8

// errTooManyRounds reports that the record kept changing under the reaper.
var errTooManyRounds = errors.New("the record kept changing; try again")

// cause says why the workflow did not settle the transfer: the stored
// failure code and the first half of its detail.
type cause struct {
	code string
	why  string // sentence start, e.g. "The transfer's workflow timed out"
}

// Settle settles the transfer whose idempotency record is recordKey (see
// the package documentation). transferID guards against a key reused for
// a newer transfer. Conditional write failures are not errors: the record
// is read again and settled from the state found. Other errors are
// returned, wrapped with the transfer id; calling Settle again is safe.
func (r *Reaper) Settle(ctx context.Context, recordKey, transferID string) (Outcome, error) {
	log := r.log.With("transferId", transferID, "recordKey", recordKey)
	for range maxRounds {
		rec, found, err := r.read(ctx, recordKey)
		if err != nil {
			return "", fmt.Errorf("settle %s: %w", transferID, err)
		}
		if !found || rec.ResourceID != transferID {
			log.InfoContext(ctx, "no record of the transfer", "decision", OutcomeNotFound, "recordTransferId", rec.ResourceID)
			return OutcomeNotFound, nil
		}
		outcome, again, err := r.step(ctx, log, rec)
		if err != nil {
			log.ErrorContext(ctx, "settle failed", "status", rec.Status, "error", err)
			return "", fmt.Errorf("settle %s: %w", transferID, err)
		}
		if !again {
			return outcome, nil
		}
		log.InfoContext(ctx, "record changed concurrently; reading it again", "status", rec.Status)
	}
	return "", fmt.Errorf("settle %s: %w", transferID, errTooManyRounds)
}

// step takes one decision on rec. again reports a lost conditional write:
// read the record and decide again.
func (r *Reaper) step(ctx context.Context, log *slog.Logger, rec idempotency.Record) (outcome Outcome, again bool, err error) {
	switch rec.Status {
	case idempotency.StatusCompleted, idempotency.StatusFailed:
		log.InfoContext(ctx, "already settled", "decision", OutcomeAlreadySettled, "status", rec.Status)
		return OutcomeAlreadySettled, false, nil
	case idempotency.StatusReserved, idempotency.StatusInProgress, idempotency.StatusReconciling:
	default:
		return "", false, fmt.Errorf("record has unknown status %q", rec.Status)
	}

	exec, err := r.describe(ctx, rec.ResourceID)
	if err != nil {
		return "", false, err
	}
	if exec == nil {
		switch rec.Status {
		case idempotency.StatusReserved:
			startable, err := r.startable(rec)
			if err != nil {
				return "", false, err
			}
			if startable {
				return r.start(ctx, log, rec)
			}
			return r.reconcile(ctx, log, rec, r.notStarted())
		case idempotency.StatusReconciling:
			// Fenced by a reaper (for a start that came too late) that
			// stopped before storing the outcome.
			return r.reconcile(ctx, log, rec, r.notStarted())
		default:
			return r.lost(ctx, log, rec)
		}
	}

	switch exec.Status {
	case sfntypes.ExecutionStatusRunning, sfntypes.ExecutionStatusPendingRedrive:
		if rec.Status != idempotency.StatusReconciling {
			log.InfoContext(ctx, "execution still running", "decision", OutcomeRunning, "status", rec.Status)
			return OutcomeRunning, false, nil
		}
		// Fenced: the execution can commit no DEBIT or CREDIT and will
		// fail with TransferFenced; finish what the fence started.
		return r.reconcile(ctx, log, rec, cause{CodeTransferFenced, "The transfer was stopped while its workflow was running"})
	case sfntypes.ExecutionStatusSucceeded, sfntypes.ExecutionStatusFailed,
		sfntypes.ExecutionStatusTimedOut, sfntypes.ExecutionStatusAborted:
		return r.reconcile(ctx, log, rec, closedCause(exec))
	}
	return "", false, fmt.Errorf("execution %s has unknown status %q", aws.ToString(exec.ExecutionArn), exec.Status)
}

// lost decides on an IN_PROGRESS record whose execution DescribeExecution
// does not find. That answer is eventually consistent, so it is trusted
// only NotFoundGrace after the record's last update (MarkInProgress sets
// it when the execution begins). Then the transfer is restarted from its
// record while it is younger than MaxStartAge (finishing beats reversing
// when nothing was rejected), and settled from the ledger after that.
func (r *Reaper) lost(ctx context.Context, log *slog.Logger, rec idempotency.Record) (Outcome, bool, error) {
	since := rec.UpdatedAt
	if since == "" {
		since = rec.CreatedAt
	}
	updated, err := time.Parse(time.RFC3339Nano, since)
	if err != nil {
		return "", false, fmt.Errorf("record updatedAt %q: %w", since, err)
	}
	if r.cfg.Now().Sub(updated) < r.cfg.NotFoundGrace {
		log.InfoContext(ctx, "execution not visible yet", "decision", OutcomeRunning, "status", rec.Status, "updatedAt", since)
		return OutcomeRunning, false, nil
	}
	startable, err := r.startable(rec)
	if err != nil {
		return "", false, err
	}
	if !startable {
		return r.reconcile(ctx, log, rec, cause{CodeExecutionNotFound, "The transfer's workflow could not be found"})
	}
	outcome, again, err := r.start(ctx, log, rec)
	if outcome == OutcomeStarted {
		outcome = OutcomeRestarted
	}
	return outcome, again, err
}

// startable reports whether rec's transfer may still be started: it was
// reserved less than MaxStartAge ago.
func (r *Reaper) startable(rec idempotency.Record) (bool, error) {
	created, err := time.Parse(time.RFC3339Nano, rec.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("record createdAt %q: %w", rec.CreatedAt, err)
	}
	return r.cfg.Now().Sub(created) < r.cfg.MaxStartAge, nil
}

func (r *Reaper) notStarted() cause {
	return cause{CodeNotStarted, "The transfer did not start within " + humanDuration(r.cfg.MaxStartAge) + " of the request"}
}

// closedCause is the failure of a closed execution: its error when it has
// one, else a code for its status.
func closedCause(exec *sfn.DescribeExecutionOutput) cause {
	var c cause
	switch exec.Status {
	case sfntypes.ExecutionStatusSucceeded:
		return cause{CodeOutcomeNotStored, "The transfer's workflow ended without storing its outcome"}
	case sfntypes.ExecutionStatusTimedOut:
		c = cause{CodeExecutionTimedOut, "The transfer's workflow timed out"}
	case sfntypes.ExecutionStatusAborted:
		c = cause{CodeExecutionAborted, "The transfer's workflow was stopped"}
	default:
		c = cause{CodeExecutionFailed, "The transfer's workflow failed"}
	}
	if e := aws.ToString(exec.Error); e != "" {
		c.code = e
	}
	return c
}

// read reads the record with a strongly consistent GetItem.
func (r *Reaper) read(ctx context.Context, recordKey string) (idempotency.Record, bool, error) {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.cfg.IdempotencyTable),
		Key:            recordKeyAttr(recordKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("read record: %w", err)
	}
	if len(out.Item) == 0 {
		return idempotency.Record{}, false, nil
	}
	var rec idempotency.Record
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return idempotency.Record{}, false, fmt.Errorf("decode record: %w", err)
	}
	return rec, true, nil
}

func recordKeyAttr(recordKey string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: recordKey}}
}

// describe describes the transfer's execution; nil when it does not exist.
func (r *Reaper) describe(ctx context.Context, transferID string) (*sfn.DescribeExecutionOutput, error) {
	arn := r.executionARN(transferID)
	// Default included data: the error and cause are wanted.
	out, err := r.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	var missing *sfntypes.ExecutionDoesNotExist
	switch {
	case errors.As(err, &missing):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe execution %s: %w", arn, err)
	}
	return out, nil
}

// start starts the execution of a RESERVED record with the input the
// orchestrator builds. An execution that closed meanwhile
// (ExecutionAlreadyExists) sends the caller back to the record.
func (r *Reaper) start(ctx context.Context, log *slog.Logger, rec idempotency.Record) (Outcome, bool, error) {
	input, err := transfer.NewWorkflowInput(rec)
	if err != nil {
		return "", false, fmt.Errorf("%w: %v", transfer.ErrCorruptRecord, err)
	}
	out, err := r.sfn.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(r.cfg.StateMachineARN),
		Name:            aws.String(rec.ResourceID),
		Input:           aws.String(string(input)),
	})
	var exists *sfntypes.ExecutionAlreadyExists
	switch {
	case errors.As(err, &exists):
		return "", true, nil
	case err != nil:
		return "", false, fmt.Errorf("start execution: %w", err)
	}
	log.InfoContext(ctx, "started the execution of a reserved transfer", "decision", OutcomeStarted,
		"execution", aws.ToString(out.ExecutionArn))
	return OutcomeStarted, false, nil
}

// reconcile fences the record, reads the transfer's ledger entries and
// stores the terminal outcome they imply, posting the REFUND leg first
// when only the debit committed. why explains a failure.
func (r *Reaper) reconcile(ctx context.Context, log *slog.Logger, rec idempotency.Record, why cause) (Outcome, bool, error) {
	var req transfer.Request
	if err := json.Unmarshal([]byte(rec.Request), &req); err != nil {
		return "", false, fmt.Errorf("%w: stored request: %v", transfer.ErrCorruptRecord, err)
	}

	fenced, err := r.fence(ctx, rec)
	if err != nil {
		return "", false, err
	}
	if !fenced {
		return "", true, nil
	}

	entries, err := retry(ctx, isTransientLedger, func() (map[ledger.Kind]ledger.Entry, error) {
		return r.ledger.TransferEntries(ctx, rec.ResourceID, req.SourceAccountID, req.DestinationAccountID)
	})
	if err != nil {
		return "", false, err
	}
	_, debit := entries[ledger.Debit]
	_, credit := entries[ledger.Credit]
	_, refund := entries[ledger.Refund]

	var (
		outcome Outcome
		posted  bool
	)
	switch {
	case !debit && (credit || refund), credit && refund:
		// The ledger's conditions make these impossible: leave the
		// record fenced for a person to look at.
		return "", false, fmt.Errorf("inconsistent ledger entries (debit %t, credit %t, refund %t); the record stays %s",
			debit, credit, refund, idempotency.StatusReconciling)
	case debit && credit:
		outcome = OutcomeCompleted
	case debit && refund:
		outcome = OutcomeReversed
	case debit:
		_, err := retry(ctx, isTransientLedger, func() (ledger.Entry, error) {
			return r.ledger.Post(ctx, refundLeg(rec, req))
		})
		switch {
		case errors.Is(err, ledger.ErrFenced), errors.Is(err, ledger.ErrAlreadyCredited):
			// The record or the ledger moved on (another reaper settled
			// the transfer): decide again from what is there now.
			log.InfoContext(ctx, "refund not posted; reading the record again", "error", err)
			return "", true, nil
		case err != nil:
			return "", false, fmt.Errorf("refund the debit; the record stays %s: %w", idempotency.StatusReconciling, err)
		}
		outcome, posted = OutcomeReversed, true
	default:
		outcome = OutcomeFailed
	}

	settled := r.cfg.Now().UTC()
	now := settled.Format(idempotency.TimeFormat)
	final, response, err := settledResponse(rec, req, outcome, why, now)
	if err != nil {
		return "", false, err
	}
	done, err := r.finish(ctx, rec, final, response, now, settled.Add(rec.Retention()).Unix())
	if err != nil {
		return "", false, err
	}
	if !done {
		return "", true, nil
	}
	attrs := []any{"decision", outcome, "status", final, "refundPosted", posted}
	if outcome != OutcomeCompleted {
		attrs = append(attrs, "failureCode", why.code)
	}
	log.InfoContext(ctx, "transfer settled", attrs...)
	settledMetrics := []metrics.Metric{{Name: metrics.Reaped, Value: 1}}
	if posted {
		settledMetrics = append(settledMetrics, metrics.Metric{Name: metrics.Refunded, Value: 1})
	}
	metrics.Emit(ctx, log, "settle metrics",
		[]slog.Attr{metrics.Service(metrics.ServiceReaper), slog.String("Outcome", string(outcome))}, settledMetrics...)
	return outcome, false, nil
}

// refundLeg is the REFUND leg of the transfer: the amount back to the
// source.
func refundLeg(rec idempotency.Record, req transfer.Request) ledger.Leg {
	return ledger.Leg{
		Kind:                  ledger.Refund,
		TransferID:            rec.ResourceID,
		RecordKey:             rec.Key,
		AccountID:             req.SourceAccountID,
		CounterpartyAccountID: req.DestinationAccountID,
		Amount:                req.Amount,
		Currency:              req.Currency,
	}
}

// fence moves the record to RECONCILING if it is still this transfer's and
// still in the status the decision was taken on, or already RECONCILING
// (so a reaper resumes another's work). The observed status, rather than
// any non-terminal one, keeps a workflow that got in between the look and
// the fence (RESERVED -> IN_PROGRESS: an execution just started) from being
// fenced on a decision made without it. false: the condition failed.
func (r *Reaper) fence(ctx context.Context, rec idempotency.Record) (bool, error) {
	status := expression.Name(idempotency.AttrStatus)
	cond := expression.Name(idempotency.AttrResourceID).Equal(expression.Value(rec.ResourceID)).
		And(status.In(
			expression.Value(string(rec.Status)),
			expression.Value(string(idempotency.StatusReconciling)),
		))
	update := expression.Set(status, expression.Value(string(idempotency.StatusReconciling))).
		Set(expression.Name(idempotency.AttrPending), expression.Value(string(idempotency.StatusReconciling))).
		Set(expression.Name(attrUpdatedAt), expression.Value(r.cfg.Now().UTC().Format(idempotency.TimeFormat))).
		// A record is only deleted by TTL once terminal; one reserved
		// before expiresAt was the TTL attribute alone may still carry it.
		Remove(expression.Name(idempotency.AttrExpiresAt))
	return r.update(ctx, rec.Key, cond, update, "fence the record")
}

// finish stores the terminal status and response of a fenced record, with
// its expiry (the TTL attribute, which only a terminal record carries), and
// takes it out of the Pending index. false: the record is no longer this
// transfer's RECONCILING record (another reaper finished first).
func (r *Reaper) finish(ctx context.Context, rec idempotency.Record, final idempotency.Status, response, now string, expiresAt int64) (bool, error) {
	cond := expression.Name(idempotency.AttrStatus).Equal(expression.Value(string(idempotency.StatusReconciling))).
		And(expression.Name(idempotency.AttrResourceID).Equal(expression.Value(rec.ResourceID)))
	update := expression.Set(expression.Name(idempotency.AttrStatus), expression.Value(string(final))).
		Set(expression.Name(idempotency.AttrResponse), expression.Value(response)).
		Set(expression.Name(idempotency.AttrExpiresAt), expression.Value(expiresAt)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Remove(expression.Name(idempotency.AttrPending))
	return r.update(ctx, rec.Key, cond, update, "store the outcome")
}

// attrUpdatedAt is the record's last-change time (idempotency.Record's
// UpdatedAt).
const attrUpdatedAt = "updatedAt"

// update runs a conditional UpdateItem on the record. A failed condition
// is reported as false, not as an error.
func (r *Reaper) update(ctx context.Context, recordKey string, cond expression.ConditionBuilder, update expression.UpdateBuilder, what string) (bool, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(update).Build()
	if err != nil {
		return false, fmt.Errorf("%s: build expression: %w", what, err)
	}
	_, err = retry(ctx, isTransactionConflict, func() (*dynamodb.UpdateItemOutput, error) {
		return r.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(r.cfg.IdempotencyTable),
			Key:                       recordKeyAttr(recordKey),
			ConditionExpression:       expr.Condition(),
			UpdateExpression:          expr.Update(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		})
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return true, nil
}

// Retries of operations that lose a race with a concurrent transaction on
// the same items (a leg posted by the workflow or another reaper): the
// race ends within milliseconds, so a few short waits settle it here
// instead of failing the whole event.
const (
	retryAttempts = 4
	retryDelay    = 20 * time.Millisecond
)

func isTransientLedger(err error) bool { return ledger.ClassOf(err) == ledger.ClassTransient }

func isTransactionConflict(err error) bool {
	var tc *types.TransactionConflictException
	return errors.As(err, &tc)
}

// retry calls fn until it succeeds, fails with an error transient does not
// accept, or retryAttempts calls were made.
func retry[T any](ctx context.Context, transient func(error) bool, fn func() (T, error)) (T, error) {
	delay := retryDelay
	for attempt := 1; ; attempt++ {
		v, err := fn()
		if err == nil || attempt == retryAttempts || !transient(err) {
			return v, err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return v, err
		}
		delay *= 2
	}
}

// humanDuration renders d for people: "1 hour", "90 minutes".
func humanDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		if d == time.Minute {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
