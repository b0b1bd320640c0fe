// Package worker is the Lambda handler of one transfer leg (DEBIT, CREDIT or
// REFUND) run by the transfer state machine.
//
// The handler posts the leg to the ledger and answers with a Result: the
// posted entry, or, for a DEBIT that a business rule refused, the
// rejection. A rejected debit is made final before the answer (a void
// marker in the leg's slot, ledger.Void), so that no earlier attempt of the
// debit that Step Functions gave up on can commit after the workflow has
// stored the transfer as FAILED; if such an attempt committed first, the
// debit stands and the answer is its entry.
//
// A DEBIT worker that enforces ownership (EnforceOwnership) passes the
// task's caller scope to the ledger as the leg's owner: a debit of an
// account that is not the transfer's caller's is a business rejection,
// Forbidden, voided and answered like any other. A CREDIT worker that
// enforces ownership passes it as the leg's caller: a credit refused on an
// account that is not the caller's (or that does not exist) fails with
// DestinationUnavailable, whatever the rule, so that a caller learns
// nothing of another caller's account from its transfer's outcome.
//
// A business refusal is logged with its code at INFO and its detail (the
// account's currency, state or balance) at DEBUG only.
//
// Other failures come back as Lambda function errors whose errorType is
// one of the Type constants, so the state machine's Retry and Catch match
// them by name:
//
//	AccountNotFound, CurrencyMismatch, AccountClosed, BalanceLimitExceeded,
//	DestinationUnavailable
//	    business rule failures of a CREDIT (or a REFUND): the leg wrote
//	    nothing (Catch: Refund after a credit).
//	TransferFenced
//	    the idempotency record no longer allows the leg (the reaper fenced
//	    it, or it is terminal, missing or another transfer's). Terminal:
//	    do not retry; the reaper settles the transfer.
//	DebitMissing
//	    a CREDIT whose transfer has no matching DEBIT entry. Terminal.
//	NothingToRefund
//	    a REFUND whose transfer has no matching DEBIT entry: no money left
//	    the source. Terminal.
//	TransferRefunded
//	    a CREDIT whose debit was already refunded. Terminal.
//	TransferCredited
//	    a REFUND whose transfer was already credited: the transfer
//	    completed, nothing may be reversed. Terminal.
//	InvalidTask
//	    the task payload is malformed (missing ids, amount not a positive
//	    integer, currency not three upper-case letters, source equal to
//	    destination). Terminal.
//	LedgerUnavailable
//	    DynamoDB throttled or could not be reached after the SDK's retries,
//	    or transactions kept conflicting after the worker's own jittered
//	    retries. Transient: Retry with backoff.
//
// A retried leg that already committed succeeds with the stored entry, and
// a retried debit that was voided answers with the stored rejection, so
// every Retry is safe.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Lambda errorType names, as the state machine's ErrorEquals match them.
const (
	TypeInsufficientFunds = transfer.CodeInsufficientFunds
	TypeAccountNotFound   = transfer.CodeAccountNotFound
	TypeCurrencyMismatch  = transfer.CodeCurrencyMismatch
	TypeAccountClosed     = transfer.CodeAccountClosed
	TypeBalanceLimit      = transfer.CodeBalanceLimit
	TypeForbidden         = transfer.CodeForbidden
	// TypeDestinationUnavailable: a CREDIT refused on an account that is
	// not the transfer's caller's, whatever the rule (EnforceOwnership).
	TypeDestinationUnavailable = transfer.CodeDestinationUnavailable
	TypeTransferFenced         = "TransferFenced"
	TypeDebitMissing           = "DebitMissing"
	TypeNothingToRefund        = "NothingToRefund"
	TypeTransferRefunded       = "TransferRefunded"
	TypeTransferCredited       = "TransferCredited"
	TypeInvalidTask            = "InvalidTask"
	TypeLedgerUnavailable      = "LedgerUnavailable"
)

// errorTypes maps the ledger's errors to errorType names. Errors matching
// none of them are LedgerUnavailable: the state machine retries, then the
// reaper settles the transfer.
var errorTypes = []struct {
	target error
	name   string
}{
	{ledger.ErrInsufficientFunds, TypeInsufficientFunds},
	{ledger.ErrAccountNotFound, TypeAccountNotFound},
	{ledger.ErrCurrencyMismatch, TypeCurrencyMismatch},
	{ledger.ErrAccountClosed, TypeAccountClosed},
	{ledger.ErrBalanceLimit, TypeBalanceLimit},
	{ledger.ErrForbidden, TypeForbidden},
	{ledger.ErrDestinationUnavailable, TypeDestinationUnavailable},
	{ledger.ErrFenced, TypeTransferFenced},
	{ledger.ErrVoided, TypeTransferFenced},
	{ledger.ErrDebitMissing, TypeDebitMissing},
	{ledger.ErrNothingToRefund, TypeNothingToRefund},
	{ledger.ErrAlreadyRefunded, TypeTransferRefunded},
	{ledger.ErrAlreadyCredited, TypeTransferCredited},
	{ledger.ErrInvalidInput, TypeInvalidTask},
	{ledger.ErrUnavailable, TypeLedgerUnavailable},
}

// ErrorType is the Lambda errorType name of a ledger error.
func ErrorType(err error) string {
	for _, t := range errorTypes {
		if errors.Is(err, t.target) {
			return t.name
		}
	}
	return TypeLedgerUnavailable
}

// Poster posts a ledger leg and voids a rejected debit; *ledger.Ledger is
// one.
type Poster interface {
	Post(ctx context.Context, leg ledger.Leg) (ledger.Entry, error)
	Void(ctx context.Context, leg ledger.Leg, reason, detail string) (ledger.VoidResult, error)
}

var _ Poster = (*ledger.Ledger)(nil)

// Task is the payload the state machine sends to a leg function.
type Task struct {
	TransferID string `json:"transferId"`
	// RecordKey is the idempotency record's key (its pk).
	RecordKey            string `json:"recordKey"`
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	// Amount is in minor units of Currency, a positive JSON integer.
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// RetentionSeconds is how long the transfer's idempotency record is
	// kept once settled; when positive, the Result carries ExpiresAt.
	RetentionSeconds int64 `json:"retentionSeconds,omitempty"`
	// Scope is the caller scope of the transfer (its record's), sent to
	// the DEBIT and the CREDIT: when the worker enforces ownership, the
	// debited account's owner must be this scope, and a credit refused on
	// an account that is not this scope's is DestinationUnavailable.
	Scope string `json:"scope,omitempty"`
	// Attempt is the transfer's attempt the execution runs (the workflow
	// input's): the leg commits only while it is the record's current
	// attempt.
	Attempt int64 `json:"attempt"`
	// CreatedAt is when the transfer was accepted (the workflow input's,
	// its record's createdAt, RFC 3339): the start of the TimeToSettle
	// the worker publishes when its leg settles the transfer.
	CreatedAt string `json:"createdAt,omitempty"`
	// Refused, on the REFUND the workflow posts when a business rule
	// refused the credit, is that refusal as Step Functions caught it:
	// it is stored with the refund entry (ledger.Leg.Reason).
	Refused *Refusal `json:"refused,omitempty"`
}

// Refusal is an error Step Functions caught: its name and its cause, the
// leg's Lambda error ({"errorMessage": ..., "errorType": ...}) as JSON.
type Refusal struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// detail is the sentence of the refusal: the cause's errorMessage, or the
// cause itself when it is no Lambda error.
func (r Refusal) detail() string {
	var le struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(r.Cause), &le) == nil && le.ErrorMessage != "" {
		return le.ErrorMessage
	}
	return r.Cause
}

// Result is a leg function's answer: the posted entry (the stored one when
// the leg had already committed), or the rejection of a DEBIT. Its JSON is
// the entry's fields, or "rejected", plus "expiresAt".
type Result struct {
	*ledger.Entry
	// Rejected is set when a business rule refused the debit; the
	// rejection is final (the leg's slot is void).
	Rejected *Rejection `json:"rejected,omitempty"`
	// ExpiresAt is when the transfer's idempotency record may expire if
	// the transfer settles on this answer: now plus the task's
	// RetentionSeconds, in epoch seconds (the table's TTL attribute). The
	// workflow has no clock of its own to compute it from.
	ExpiresAt int64 `json:"expiresAt,omitempty"`
}

// Rejection is a business rule's refusal of a debit, as the client reads
// it: Code is the errorType name (InsufficientFunds, ...), Detail the
// sentence.
type Rejection struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// leg is the posting the task asks of a worker of the given kind: DEBIT
// and REFUND post to the source, CREDIT to the destination.
func (t Task) leg(kind ledger.Kind) ledger.Leg {
	l := ledger.Leg{
		Kind:                  kind,
		TransferID:            t.TransferID,
		RecordKey:             t.RecordKey,
		AccountID:             t.SourceAccountID,
		CounterpartyAccountID: t.DestinationAccountID,
		Amount:                t.Amount,
		Currency:              t.Currency,
		Attempt:               t.Attempt,
	}
	if kind == ledger.Credit {
		l.AccountID, l.CounterpartyAccountID = t.DestinationAccountID, t.SourceAccountID
	}
	if kind == ledger.Refund && t.Refused != nil {
		l.Reason, l.Detail = t.Refused.Error, t.Refused.detail()
	}
	return l
}

// taskField names the Task field behind a Leg field, for InvalidTask
// messages.
func taskField(kind ledger.Kind, legField string) string {
	source, destination := "sourceAccountId", "destinationAccountId"
	if kind == ledger.Credit {
		source, destination = destination, source
	}
	switch legField {
	case "TransferID":
		return "transferId"
	case "RecordKey":
		return "recordKey"
	case "AccountID":
		return source
	case "CounterpartyAccountID":
		return destination
	case "Amount":
		return "amount"
	case "Currency":
		return "currency"
	case "Owner", "Caller":
		return "scope"
	case "Attempt":
		return "attempt"
	}
	return legField
}

// Worker handles the tasks of one leg kind.
type Worker struct {
	kind   ledger.Kind
	poster Poster
	log    *slog.Logger
	now    func() time.Time
	// owned: a DEBIT requires the account to be the task's Scope's.
	owned bool
}

// Option configures a Worker.
type Option func(*Worker)

// EnforceOwnership makes a DEBIT worker post the leg with the task's Scope
// as its owner (ledger.Leg.Owner): the debit commits only on an account of
// the transfer's caller, under a record of that caller, and is rejected
// with Forbidden otherwise. It makes a CREDIT worker post the leg with the
// task's Scope as its caller (ledger.Leg.Caller): a refusal on an account
// that is not the caller's is DestinationUnavailable. A task without a
// Scope is an InvalidTask. It changes nothing for a REFUND.
func EnforceOwnership() Option { return func(w *Worker) { w.owned = true } }

// New returns the worker of a leg kind. A nil logger means slog.Default().
func New(kind ledger.Kind, poster Poster, logger *slog.Logger, opts ...Option) (*Worker, error) {
	if !kind.Valid() {
		return nil, fmt.Errorf("worker: unknown leg kind %q", string(kind))
	}
	if poster == nil {
		return nil, errors.New("worker: nil poster")
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &Worker{kind: kind, poster: poster, log: logger, now: time.Now}
	for _, o := range opts {
		o(w)
	}
	return w, nil
}

// verb names the leg in messages, as the ledger does ("debit t-1: ...").
func (w *Worker) verb() string { return strings.ToLower(string(w.kind)) }

// Handle posts the task's leg. It returns the Result, or a
// messages.InvokeResponse_Error value whose Type is one of the Type
// constants.
func (w *Worker) Handle(ctx context.Context, task Task) (Result, error) {
	leg := task.leg(w.kind)
	if w.owned && w.kind != ledger.Refund {
		if task.Scope == "" {
			return Result{}, w.fail(ctx, task, &ledger.InvalidInputError{Field: "Owner", Problem: "must name the transfer's caller"})
		}
		if w.kind == ledger.Debit {
			leg.Owner = task.Scope
		} else {
			leg.Caller = task.Scope
		}
	}
	entry, err := w.post(ctx, leg)
	var voided *ledger.VoidedError
	switch {
	case err == nil:
	case w.kind == ledger.Debit && errors.As(err, &voided):
		// An earlier attempt was rejected: answer with its rejection.
		return w.rejected(ctx, task, voided.Reason, voided.Detail, "replayed"), nil
	case w.kind == ledger.Debit && transfer.ClassifyFailure(ErrorType(err)) == transfer.Business:
		name := ErrorType(err)
		w.refusalDetail(ctx, task, err)
		res, verr := w.poster.Void(ctx, leg, name, businessMessage(name, leg))
		if verr != nil {
			return Result{}, w.fail(ctx, task, fmt.Errorf("make the rejection (%s) final: %w", name, verr))
		}
		if res.Committed == nil {
			if !res.Replayed {
				// Not when a concurrent attempt of the debit voided it
				// first: that attempt publishes it.
				w.settled(ctx, task, metrics.OutcomeFailed)
			}
			return w.rejected(ctx, task, res.Reason, res.Detail, "rejected"), nil
		}
		// An earlier attempt committed before the rejection could be made
		// final: the debit stands.
		entry = *res.Committed
	default:
		return Result{}, w.fail(ctx, task, err)
	}
	outcome := "committed"
	if entry.Replayed {
		outcome = "replayed"
	}
	switch {
	case entry.Replayed:
		// Published by the attempt that committed it.
	case w.kind == ledger.Credit:
		w.settled(ctx, task, metrics.OutcomeCompleted)
	case w.kind == ledger.Refund:
		w.settled(ctx, task, metrics.OutcomeReversed)
	}
	w.log.LogAttrs(ctx, slog.LevelInfo, "leg posted",
		slog.String("transferId", task.TransferID),
		slog.String("recordKey", task.RecordKey),
		slog.String("leg", string(w.kind)),
		slog.String("outcome", outcome),
		slog.Int64("amount", entry.Amount),
		slog.String("currency", entry.Currency),
		slog.Time("postedAt", entry.PostedAt),
	)
	w.log.LogAttrs(ctx, slog.LevelDebug, "leg account",
		slog.String("transferId", task.TransferID),
		slog.String("recordKey", task.RecordKey),
		slog.String("accountId", entry.AccountID),
	)
	return Result{Entry: &entry, ExpiresAt: w.expiresAt(task)}, nil
}

// settled publishes the transfer's TimeToSettle: this worker's write
// settled its money (the credit committed, the refund committed, or the
// debit's rejection was made final), now. The workflow stores the outcome
// on the record in its next state.
func (w *Worker) settled(ctx context.Context, task Task, outcome string) {
	metrics.Settled(ctx, w.log.With(slog.String("transferId", task.TransferID), slog.String("recordKey", task.RecordKey)),
		metrics.ServiceWorker, outcome, task.CreatedAt, w.now())
}

// rejected is the answer for a voided debit.
func (w *Worker) rejected(ctx context.Context, task Task, code, detail, outcome string) Result {
	w.log.LogAttrs(ctx, slog.LevelInfo, "leg rejected",
		slog.String("transferId", task.TransferID),
		slog.String("recordKey", task.RecordKey),
		slog.String("leg", string(w.kind)),
		slog.String("outcome", outcome),
		slog.String("code", code),
	)
	return Result{Rejected: &Rejection{Code: code, Detail: detail}, ExpiresAt: w.expiresAt(task)}
}

func (w *Worker) expiresAt(task Task) int64 {
	if task.RetentionSeconds <= 0 {
		return 0
	}
	return w.now().Unix() + task.RetentionSeconds
}

// Retries of a leg whose transaction conflicted with another on the same
// items (a busy account): the conflict lasts milliseconds, so a few short
// waits with full jitter settle it here, where the state machine's Retry
// would wait seconds and could run out before a busy account frees up.
const (
	conflictAttempts = 8
	conflictBase     = 10 * time.Millisecond
	conflictCap      = 400 * time.Millisecond
	// deadlineMargin is left before the invocation's deadline, so that a
	// worker that keeps conflicting answers LedgerUnavailable instead of
	// timing out.
	deadlineMargin = time.Second
)

// post posts leg, retrying transaction conflicts with jittered backoff.
func (w *Worker) post(ctx context.Context, leg ledger.Leg) (ledger.Entry, error) {
	for attempt := 0; ; attempt++ {
		entry, err := w.poster.Post(ctx, leg)
		if err == nil || !isConflict(err) || attempt+1 == conflictAttempts {
			return entry, err
		}
		wait := rand.N(min(conflictCap, conflictBase<<attempt) + 1)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait+deadlineMargin {
			return entry, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return entry, err
		}
	}
}

// isConflict reports a transaction that lost a race with another one on
// the same items.
func isConflict(err error) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				return true
			}
		}
	}
	var tc *types.TransactionConflictException
	return errors.As(err, &tc)
}

// Invoke implements lambda.Handler, so lambda.Start(w) runs the worker: it
// decodes the task itself, so that a payload that is not a Task (an amount
// that is not an integer, say) is an InvalidTask like any other malformed
// task, then encodes the Result.
func (w *Worker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var task Task
	if err := json.Unmarshal(payload, &task); err != nil {
		w.log.LogAttrs(ctx, slog.LevelWarn, "leg rejected",
			slog.String("leg", string(w.kind)),
			slog.String("outcome", TypeInvalidTask),
			slog.String("error", err.Error()),
		)
		return nil, messages.InvokeResponse_Error{
			Type:    TypeInvalidTask,
			Message: fmt.Sprintf("%s: invalid task: %v", w.verb(), err),
		}
	}
	res, err := w.Handle(ctx, task)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		// A Result always encodes; fail closed all the same.
		return nil, w.fail(ctx, task, fmt.Errorf("%w: encode result: %w", ledger.ErrUnavailable, err))
	}
	return out, nil
}

// fail logs a failed leg and turns its error into the Lambda error the
// state machine matches: the one place where ledger errors get their
// names.
func (w *Worker) fail(ctx context.Context, task Task, err error) error {
	name := ErrorType(err)
	class := ledger.ClassOf(err)
	message := err.Error()
	var iv *ledger.InvalidInputError
	switch {
	case errors.As(err, &iv):
		message = fmt.Sprintf("%s %s: invalid task: %s: %s", w.verb(), task.TransferID, taskField(w.kind, iv.Field), iv.Problem)
	case class == ledger.ClassBusiness:
		// Stored with the failed transfer and shown to its client.
		message = businessMessage(name, task.leg(w.kind))
	case name == TypeLedgerUnavailable:
		// The SDK's detail (request ids, table names) stays in the log.
		message = fmt.Sprintf("%s %s: the ledger is temporarily unavailable", w.verb(), task.TransferID)
	}
	level := slog.LevelWarn
	switch class {
	case ledger.ClassBusiness:
		level = slog.LevelInfo
	case ledger.ClassTransient:
		level = slog.LevelError
	}
	if name == TypeTransferFenced {
		metrics.Incr(ctx, w.log, metrics.LegFenced, metrics.Service(metrics.ServiceWorker), slog.String("Leg", string(w.kind)))
	}
	attrs := []slog.Attr{
		slog.String("transferId", task.TransferID),
		slog.String("recordKey", task.RecordKey),
		slog.String("leg", string(w.kind)),
		slog.String("outcome", name),
		slog.String("class", class.String()),
	}
	if class == ledger.ClassBusiness {
		// The refusal's detail is the account's (its currency, state or
		// balance), which may be another caller's: DEBUG only.
		w.refusalDetail(ctx, task, err)
	} else {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	w.log.LogAttrs(ctx, level, "leg failed", attrs...)
	return messages.InvokeResponse_Error{Type: name, Message: message}
}

// refusalDetail logs a business refusal's whole error at DEBUG, beside the
// account ids.
func (w *Worker) refusalDetail(ctx context.Context, task Task, err error) {
	w.log.LogAttrs(ctx, slog.LevelDebug, "leg refusal detail",
		slog.String("transferId", task.TransferID),
		slog.String("recordKey", task.RecordKey),
		slog.String("leg", string(w.kind)),
		slog.String("error", err.Error()),
	)
}

// businessMessage is the sentence a client reads when the ledger refuses a
// transfer.
func businessMessage(name string, l ledger.Leg) string {
	switch name {
	case TypeInsufficientFunds:
		return fmt.Sprintf("Account %s has insufficient funds for %d %s (minor units).", l.AccountID, l.Amount, l.Currency)
	case TypeAccountNotFound:
		return fmt.Sprintf("Account %s does not exist.", l.AccountID)
	case TypeCurrencyMismatch:
		return fmt.Sprintf("Account %s does not hold %s.", l.AccountID, l.Currency)
	case TypeAccountClosed:
		return fmt.Sprintf("Account %s is closed.", l.AccountID)
	case TypeBalanceLimit:
		return fmt.Sprintf("Account %s cannot hold a larger balance.", l.AccountID)
	case TypeForbidden:
		return fmt.Sprintf("The caller may not debit account %s.", l.AccountID)
	case TypeDestinationUnavailable:
		// Neither the account's currency nor its state: it may be
		// another caller's.
		return "The destination account cannot receive this transfer."
	}
	return fmt.Sprintf("The ledger refused the %s on account %s.", strings.ToLower(string(l.Kind)), l.AccountID)
}
