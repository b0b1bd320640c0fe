package reaper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	"github.com/exactlyonce/transfers/internal/reservation"
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
	// OutcomeResumed: the transfer's execution died for a reason that is
	// not the transfer's (an infrastructure fault, a lost execution)
	// while its completion window was open. The record moved to the next
	// attempt (RESERVED again) and that attempt's execution was started
	// from the stored record: its legs replay what committed (a debit
	// that committed is not taken again) and go on from there, so the
	// transfer completes instead of being reversed.
	OutcomeResumed Outcome = "resumed"
	// OutcomeCompleted: debit and credit were posted; the record is now
	// COMPLETED.
	OutcomeCompleted Outcome = metrics.OutcomeCompleted
	// OutcomeFailed: no money moved; the record is now FAILED.
	OutcomeFailed Outcome = metrics.OutcomeFailed
	// OutcomeReversed: the debit was refunded (now or before); the record
	// is now FAILED with reversed = true.
	OutcomeReversed Outcome = metrics.OutcomeReversed
)

// Failure codes the reaper stores. Every other code of a FAILED transfer
// is a business refusal, stored by the workflow (see
// transfer.IsSettlementCode).
const (
	// CodeTimedOut: the transfer could not complete within its
	// completion window (Config.CompleteWithin); a debit was refunded.
	CodeTimedOut = transfer.CodeTimedOut
	// CodeAborted: an operator stopped the transfer's execution with a
	// cause (StopExecution); a debit was refunded.
	CodeAborted = transfer.CodeAborted
)

// codeFenced is the settle code of a record fenced before reasons were
// stored with the fence.
const codeFenced = "TransferFenced"

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
//
// Only the record's current attempt counts: its execution is described,
// and an event about an earlier attempt's execution is only a cue to look.
func (r *Reaper) step(ctx context.Context, log *slog.Logger, rec reservation.Record) (outcome Outcome, again bool, err error) {
	switch rec.Status {
	case reservation.StatusCompleted, reservation.StatusFailed:
		log.InfoContext(ctx, "already settled", "decision", OutcomeAlreadySettled, "status", rec.Status)
		return OutcomeAlreadySettled, false, nil
	case reservation.StatusReconciling:
		// Fenced by a reaper that decided to settle and stopped before
		// storing the outcome (no leg but a REFUND can commit now):
		// finish its work with its reason.
		return r.reconcile(ctx, log, rec, fencedCause(rec))
	case reservation.StatusReserved, reservation.StatusInProgress:
	default:
		return "", false, fmt.Errorf("record has unknown status %q", rec.Status)
	}

	exec, err := r.describe(ctx, rec)
	if err != nil {
		return "", false, err
	}
	open, err := r.windowOpen(rec)
	if err != nil {
		return "", false, err
	}
	if exec == nil {
		if rec.Status == reservation.StatusInProgress && r.notVisibleYet(rec) {
			log.InfoContext(ctx, "execution not visible yet", "decision", OutcomeRunning, "status", rec.Status, "updatedAt", rec.UpdatedAt)
			return OutcomeRunning, false, nil
		}
		switch {
		case !open:
			return r.reconcile(ctx, log, rec, r.timedOut())
		case rec.Status == reservation.StatusReserved:
			return r.start(ctx, log, rec)
		}
		// IN_PROGRESS and its execution is gone (a crashed runtime
		// loses its executions).
		return r.resume(ctx, log, rec, "the execution is lost")
	}

	switch exec.Status {
	case sfntypes.ExecutionStatusRunning, sfntypes.ExecutionStatusPendingRedrive:
		// The machine's timeout bounds the wait.
		log.InfoContext(ctx, "execution still running", "decision", OutcomeRunning, "status", rec.Status, "attempt", rec.Attempt)
		return OutcomeRunning, false, nil
	case sfntypes.ExecutionStatusSucceeded, sfntypes.ExecutionStatusFailed,
		sfntypes.ExecutionStatusTimedOut, sfntypes.ExecutionStatusAborted:
	default:
		return "", false, fmt.Errorf("execution %s has unknown status %q", aws.ToString(exec.ExecutionArn), exec.Status)
	}
	if IsOperatorAbort(exec.Status, aws.ToString(exec.Cause)) {
		log.WarnContext(ctx, "execution aborted by an operator", "attempt", rec.Attempt, "cause", aws.ToString(exec.Cause))
		return r.reconcile(ctx, log, rec, cause{CodeAborted, "The transfer was aborted by an operator"})
	}
	if !open {
		return r.reconcile(ctx, log, rec, r.timedOut())
	}
	// An infrastructure fault killed the attempt: the transfer is not
	// refused, it goes on. If both legs committed, only the outcome is
	// left to store.
	req, err := storedRequest(rec)
	if err != nil {
		return "", false, err
	}
	entries, err := r.entries(ctx, rec, req)
	if err != nil {
		return "", false, err
	}
	_, debited := entries[ledger.Debit]
	_, credited := entries[ledger.Credit]
	refund, refunded := entries[ledger.Refund]
	switch {
	case debited && credited:
		return r.reconcile(ctx, log, rec, cause{})
	case debited && refunded:
		// The workflow refunded a refused credit and died before storing
		// the outcome: the refusal is final and stored with the refund.
		return r.reconcile(ctx, log, rec, refundCause(refund))
	}
	return r.resume(ctx, log, rec, fmt.Sprintf("the execution ended %s (%s)", exec.Status, aws.ToString(exec.Error)))
}

// IsOperatorAbort reports whether an execution that closed with status
// and cause was stopped by an operator on purpose: ABORTED with a cause
// (StopExecution --cause "..."), which the reaper takes as "reverse the
// transfer". An execution aborted without a cause is resumed like any
// other that died.
func IsOperatorAbort(status sfntypes.ExecutionStatus, cause string) bool {
	return status == sfntypes.ExecutionStatusAborted && strings.TrimSpace(cause) != ""
}

// notVisibleYet reports whether an IN_PROGRESS record was updated too
// recently for DescribeExecution (eventually consistent) to be trusted
// when it does not find the execution: NotFoundGrace after MarkInProgress
// set updatedAt.
func (r *Reaper) notVisibleYet(rec reservation.Record) bool {
	since := rec.UpdatedAt
	if since == "" {
		since = rec.CreatedAt
	}
	updated, err := time.Parse(time.RFC3339Nano, since)
	return err == nil && r.cfg.Now().Sub(updated) < r.cfg.NotFoundGrace
}

// windowOpen reports whether rec's transfer is still inside its
// completion window: reserved less than CompleteWithin ago. Inside it, an
// infrastructure fault delays the transfer; past it, a lone debit is
// refunded (CodeTimedOut).
func (r *Reaper) windowOpen(rec reservation.Record) (bool, error) {
	created, err := time.Parse(time.RFC3339Nano, rec.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("record createdAt %q: %w", rec.CreatedAt, err)
	}
	return r.cfg.Now().Sub(created) < r.cfg.CompleteWithin, nil
}

func (r *Reaper) timedOut() cause {
	return cause{CodeTimedOut, "The transfer could not complete within " + humanDuration(r.cfg.CompleteWithin) + " of the request"}
}

// refundCause is why a refund was posted, as stored with it.
func refundCause(e ledger.Entry) cause {
	if e.Reason == "" {
		return cause{codeFenced, "The transfer was reversed"}
	}
	return refusalCause(e.Reason, e.Detail)
}

// refusalCause is a business refusal's code and detail as a cause.
func refusalCause(code, detail string) cause {
	return cause{code, strings.TrimSuffix(detail, ".")}
}

// fencedCause is the reason stored with a RECONCILING record's fence.
func fencedCause(rec reservation.Record) cause {
	if rec.SettleCode != "" {
		return cause{rec.SettleCode, rec.SettleDetail}
	}
	return cause{codeFenced, "The transfer was stopped while it ran"}
}

// storedRequest is the transfer request rec stores.
func storedRequest(rec reservation.Record) (transfer.Request, error) {
	var req transfer.Request
	if err := json.Unmarshal([]byte(rec.Request), &req); err != nil {
		return transfer.Request{}, fmt.Errorf("%w: stored request: %v", transfer.ErrCorruptRecord, err)
	}
	return req, nil
}

// entries reads the ledger entries of rec's transfer req (consistently).
func (r *Reaper) entries(ctx context.Context, rec reservation.Record, req transfer.Request) (map[ledger.Kind]ledger.Entry, error) {
	return retry(ctx, isTransientLedger, func() (map[ledger.Kind]ledger.Entry, error) {
		return r.ledger.TransferEntries(ctx, rec.ResourceID, req.SourceAccountID, req.DestinationAccountID)
	})
}

// resume moves rec to its next attempt and starts that attempt's
// execution. The move is conditional on the record being as read (same
// transfer, status and attempt), so of concurrent reapers one resumes and
// the others read again; the old attempt is fenced by it (its legs and
// its Mark states require their own attempt). A failed start leaves the
// record RESERVED under the new attempt, for the sweep or the client's
// retry to start.
func (r *Reaper) resume(ctx context.Context, log *slog.Logger, rec reservation.Record, why string) (Outcome, bool, error) {
	now := r.cfg.Now().UTC().Format(reservation.TimeFormat)
	next := rec
	next.Attempt, next.Status, next.Pending = rec.Attempt+1, reservation.StatusReserved, string(reservation.StatusReserved)
	next.ExecutionArn, next.UpdatedAt, next.SweepAt = "", now, now
	status := expression.Name(reservation.AttrStatus)
	cond := expression.Name(reservation.AttrResourceID).Equal(expression.Value(rec.ResourceID)).
		And(status.Equal(expression.Value(string(rec.Status))), reservation.AttemptIs(rec.Attempt))
	update := expression.Set(expression.Name(reservation.AttrAttempt), expression.Value(next.Attempt)).
		Set(status, expression.Value(string(next.Status))).
		Set(expression.Name(reservation.AttrPending), expression.Value(next.Pending)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Set(expression.Name(reservation.AttrSweepAt), expression.Value(now)).
		Remove(expression.Name(attrExecutionArn))
	ok, err := r.update(ctx, rec.Key, cond, update, "move the record to its next attempt")
	if err != nil || !ok {
		return "", !ok && err == nil, err
	}
	log.WarnContext(ctx, "transfer resumed under a new attempt", "decision", OutcomeResumed, "attempt", next.Attempt, "why", why)
	metrics.Emit(ctx, log, "resume metrics",
		[]slog.Attr{metrics.Service(metrics.ServiceReaper)}, metrics.Metric{Name: metrics.Resumed, Value: 1})
	outcome, again, err := r.start(ctx, log, next)
	if outcome == OutcomeStarted {
		outcome = OutcomeResumed
	}
	return outcome, again, err
}

// attrExecutionArn is the record's executionArn (idempotency.Record's
// ExecutionArn), set by the workflow's MarkInProgress.
const attrExecutionArn = "executionArn"

// read reads the record with a strongly consistent GetItem.
func (r *Reaper) read(ctx context.Context, recordKey string) (reservation.Record, bool, error) {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.cfg.IdempotencyTable),
		Key:            reservation.KeyOf(recordKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return reservation.Record{}, false, fmt.Errorf("read record: %w", err)
	}
	if len(out.Item) == 0 {
		return reservation.Record{}, false, nil
	}
	var rec reservation.Record
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return reservation.Record{}, false, fmt.Errorf("decode record: %w", err)
	}
	return rec, true, nil
}

// describe describes the execution of rec's current attempt; nil when it
// does not exist.
func (r *Reaper) describe(ctx context.Context, rec reservation.Record) (*sfn.DescribeExecutionOutput, error) {
	arn := r.executionARN(transfer.ExecutionName(rec.ResourceID, rec.Attempt))
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

// start starts the execution of a RESERVED record's attempt with the name
// and input the orchestrator builds. An execution that closed meanwhile
// (ExecutionAlreadyExists) sends the caller back to the record.
func (r *Reaper) start(ctx context.Context, log *slog.Logger, rec reservation.Record) (Outcome, bool, error) {
	input, err := transfer.NewWorkflowInput(rec)
	if err != nil {
		return "", false, fmt.Errorf("%w: %v", transfer.ErrCorruptRecord, err)
	}
	out, err := r.sfn.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(r.cfg.StateMachineARN),
		Name:            aws.String(transfer.ExecutionName(rec.ResourceID, rec.Attempt)),
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
		"execution", aws.ToString(out.ExecutionArn), "attempt", rec.Attempt)
	return OutcomeStarted, false, nil
}

// reconcile fences the record, reads the transfer's ledger entries and
// stores the terminal outcome they imply, posting the REFUND leg first
// when only the debit committed. why explains a failure: it is stored
// with the fence, and a reaper that finishes another's fenced record
// uses the stored one.
func (r *Reaper) reconcile(ctx context.Context, log *slog.Logger, rec reservation.Record, why cause) (Outcome, bool, error) {
	req, err := storedRequest(rec)
	if err != nil {
		return "", false, err
	}

	fenced, err := r.fence(ctx, rec, why)
	if err != nil {
		return "", false, err
	}
	if !fenced {
		return "", true, nil
	}

	entries, err := r.entries(ctx, rec, req)
	if err != nil {
		return "", false, err
	}
	_, debit := entries[ledger.Debit]
	_, credit := entries[ledger.Credit]
	_, refund := entries[ledger.Refund]

	var (
		outcome Outcome
		posted  bool
		refused bool // the debit's refusal failed the transfer
	)
	switch {
	case !debit && (credit || refund), credit && refund:
		// The ledger's conditions make these impossible: leave the
		// record fenced for a person to look at.
		return "", false, fmt.Errorf("inconsistent ledger entries (debit %t, credit %t, refund %t); the record stays %s",
			debit, credit, refund, reservation.StatusReconciling)
	case debit && credit:
		outcome = OutcomeCompleted
	case debit && refund:
		outcome = OutcomeReversed
		// The refund says why it was posted: a refused credit's
		// refusal (the workflow's), or the reaper's own cause. That
		// reason is the transfer's, whatever ended the execution since
		// (an abort, the window passing), as a debit's refusal is.
		if r := entries[ledger.Refund]; r.Reason != "" || why.code == "" || why.code == codeFenced {
			why = refundCause(r)
		}
	case debit:
		entry, err := retry(ctx, isTransientLedger, func() (ledger.Entry, error) {
			return r.ledger.Post(ctx, refundLeg(rec, req, why))
		})
		switch {
		case errors.Is(err, ledger.ErrFenced), errors.Is(err, ledger.ErrAlreadyCredited):
			// The record or the ledger moved on (another reaper settled
			// the transfer): decide again from what is there now.
			log.InfoContext(ctx, "refund not posted; reading the record again", "error", err)
			return "", true, nil
		case err != nil:
			return "", false, fmt.Errorf("refund the debit; the record stays %s: %w", reservation.StatusReconciling, err)
		}
		outcome, posted = OutcomeReversed, true
		if !entry.Replayed {
			// This refund settled the money: its time to settle ends now,
			// whether or not this reaper lives to store the outcome.
			metrics.Settled(ctx, log, metrics.ServiceReaper, metrics.OutcomeReversed, rec.CreatedAt, r.cfg.Now())
		}
	default:
		outcome = OutcomeFailed
		// A debit refused for good (a void marker) failed the transfer
		// before the execution died: that refusal is the answer, whatever
		// ended the execution, and the debit worker published its time
		// to settle.
		rejection, err := retry(ctx, isTransientLedger, func() (*ledger.VoidedError, error) {
			return r.ledger.Rejection(ctx, rec.ResourceID, req.SourceAccountID)
		})
		if err != nil {
			return "", false, fmt.Errorf("read the debit's rejection; the record stays %s: %w", reservation.StatusReconciling, err)
		}
		if rejection != nil {
			why, refused = refusalCause(rejection.Reason, rejection.Detail), true
		}
	}

	settled := r.cfg.Now().UTC()
	now := settled.Format(reservation.TimeFormat)
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
	if outcome == OutcomeFailed && !refused {
		// No money moved: storing FAILED settled the transfer. A
		// transfer found completed or reversed was settled by the leg
		// that committed its credit or its refund, which published it.
		metrics.Settled(ctx, log, metrics.ServiceReaper, metrics.OutcomeFailed, rec.CreatedAt, settled)
	}
	if outcome != OutcomeCompleted && why.code == CodeTimedOut {
		// Service alone, as TimedOutAlarm reads it.
		metrics.Incr(ctx, log, metrics.TimedOut, metrics.Service(metrics.ServiceReaper))
	}
	return outcome, false, nil
}

// refundLeg is the REFUND leg of the transfer: the amount back to the
// source, for why.
func refundLeg(rec reservation.Record, req transfer.Request, why cause) ledger.Leg {
	return ledger.Leg{
		Kind:                  ledger.Refund,
		TransferID:            rec.ResourceID,
		RecordKey:             rec.Key,
		AccountID:             req.SourceAccountID,
		CounterpartyAccountID: req.DestinationAccountID,
		Amount:                req.Amount,
		Currency:              req.Currency,
		Attempt:               rec.Attempt,
		Reason:                why.code,
		Detail:                why.why,
	}
}

// fence moves the record to RECONCILING if it is still this transfer's and
// still in the status the decision was taken on, or already RECONCILING
// (so a reaper resumes another's work). The observed status, rather than
// any non-terminal one, keeps a workflow that got in between the look and
// the fence (RESERVED -> IN_PROGRESS: an execution just started) from being
// fenced on a decision made without it. false: the condition failed.
//
// The fence keeps the attempt: the reaper's REFUND is posted under it. It
// stores why (the first fence's reason stands).
func (r *Reaper) fence(ctx context.Context, rec reservation.Record, why cause) (bool, error) {
	status := expression.Name(reservation.AttrStatus)
	cond := expression.Name(reservation.AttrResourceID).Equal(expression.Value(rec.ResourceID)).
		And(status.In(
			expression.Value(string(rec.Status)),
			expression.Value(string(reservation.StatusReconciling)),
		), reservation.AttemptIs(rec.Attempt))
	code, detail := expression.Name(attrSettleCode), expression.Name(attrSettleDetail)
	update := expression.Set(status, expression.Value(string(reservation.StatusReconciling))).
		Set(code, expression.IfNotExists(code, expression.Value(why.code))).
		Set(detail, expression.IfNotExists(detail, expression.Value(why.why))).
		Set(expression.Name(reservation.AttrPending), expression.Value(string(reservation.StatusReconciling))).
		Set(expression.Name(attrUpdatedAt), expression.Value(r.cfg.Now().UTC().Format(reservation.TimeFormat))).
		// A record is only deleted by TTL once terminal; one reserved
		// before expiresAt was the TTL attribute alone may still carry it.
		Remove(expression.Name(reservation.AttrExpiresAt))
	return r.update(ctx, rec.Key, cond, update, "fence the record")
}

// finish stores the terminal status and response of a fenced record, with
// its expiry (the TTL attribute, which only a terminal record carries), and
// takes it out of the Pending index. false: the record is no longer this
// transfer's RECONCILING record (another reaper finished first).
func (r *Reaper) finish(ctx context.Context, rec reservation.Record, final reservation.Status, response, now string, expiresAt int64) (bool, error) {
	cond := expression.Name(reservation.AttrStatus).Equal(expression.Value(string(reservation.StatusReconciling))).
		And(expression.Name(reservation.AttrResourceID).Equal(expression.Value(rec.ResourceID)))
	update := expression.Set(expression.Name(reservation.AttrStatus), expression.Value(string(final))).
		Set(expression.Name(reservation.AttrResponse), expression.Value(response)).
		Set(expression.Name(reservation.AttrExpiresAt), expression.Value(expiresAt)).
		Set(expression.Name(attrUpdatedAt), expression.Value(now)).
		Remove(expression.Name(reservation.AttrPending))
	return r.update(ctx, rec.Key, cond, update, "store the outcome")
}

// Attributes of the record the reaper writes: the last-change time
// (idempotency.Record's UpdatedAt) and the reason of a fence (SettleCode,
// SettleDetail).
const (
	attrUpdatedAt    = "updatedAt"
	attrSettleCode   = "settleCode"
	attrSettleDetail = "settleDetail"
)

// update takes the record for the reaper's next step under cond, in one
// conditional UpdateItem: the idempotency library's Claim. Each of the
// reaper's writes to a record is one: a resume takes it for the next
// attempt (the run of the current one can no longer commit), a fence for
// reconciliation, a finish for its settlement. A failed condition (the
// record moved on: another reaper, a retry of the client, the workflow)
// is reported as false, not as an error.
func (r *Reaper) update(ctx context.Context, recordKey string, cond expression.ConditionBuilder, update expression.UpdateBuilder, what string) (bool, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(update).Build()
	if err != nil {
		return false, fmt.Errorf("%s: build expression: %w", what, err)
	}
	claim := idempotency.Claim{
		Table:     r.cfg.IdempotencyTable,
		Key:       reservation.KeyOf(recordKey),
		Update:    aws.ToString(expr.Update()),
		Condition: aws.ToString(expr.Condition()),
		Names:     expr.Names(),
		Values:    expr.Values(),
	}
	got, err := retry(ctx, isTransactionConflict, func() (idempotency.Claimed, error) { return claim.Write(ctx, r.db) })
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return got.OK, nil
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
