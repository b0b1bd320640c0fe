// Package worker is the Lambda handler of one transfer leg (DEBIT, CREDIT or
// REFUND) run by the transfer state machine.
//
// The handler posts the leg to the ledger and answers with the posted entry.
// Failures come back as Lambda function errors whose errorType is one of the
// Type constants, so the state machine's Retry and Catch match them by name:
//
//	InsufficientFunds, AccountNotFound, CurrencyMismatch, AccountClosed
//	    business rule failures: the leg wrote nothing and the transfer fails
//	    (Catch: MarkFailed after a debit, Refund after a credit).
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
//	    DynamoDB throttled, conflicted or could not be reached after the
//	    SDK's retries. Transient: Retry with backoff.
//
// A retried leg that already committed succeeds with the stored entry, so
// every Retry is safe.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/exactlyonce/transfers/internal/ledger"
)

// Lambda errorType names, as the state machine's ErrorEquals match them.
const (
	TypeInsufficientFunds = "InsufficientFunds"
	TypeAccountNotFound   = "AccountNotFound"
	TypeCurrencyMismatch  = "CurrencyMismatch"
	TypeAccountClosed     = "AccountClosed"
	TypeTransferFenced    = "TransferFenced"
	TypeDebitMissing      = "DebitMissing"
	TypeNothingToRefund   = "NothingToRefund"
	TypeTransferRefunded  = "TransferRefunded"
	TypeTransferCredited  = "TransferCredited"
	TypeInvalidTask       = "InvalidTask"
	TypeLedgerUnavailable = "LedgerUnavailable"
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
	{ledger.ErrFenced, TypeTransferFenced},
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

// Poster posts a ledger leg; *ledger.Ledger is one.
type Poster interface {
	Post(ctx context.Context, leg ledger.Leg) (ledger.Entry, error)
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
	}
	if kind == ledger.Credit {
		l.AccountID, l.CounterpartyAccountID = t.DestinationAccountID, t.SourceAccountID
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
	}
	return legField
}

// Worker handles the tasks of one leg kind.
type Worker struct {
	kind   ledger.Kind
	poster Poster
	log    *slog.Logger
}

// New returns the worker of a leg kind. A nil logger means slog.Default().
func New(kind ledger.Kind, poster Poster, logger *slog.Logger) (*Worker, error) {
	if !kind.Valid() {
		return nil, fmt.Errorf("worker: unknown leg kind %q", string(kind))
	}
	if poster == nil {
		return nil, errors.New("worker: nil poster")
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Worker{kind: kind, poster: poster, log: logger}, nil
}

// verb names the leg in messages, as the ledger does ("debit t-1: ...").
func (w *Worker) verb() string { return strings.ToLower(string(w.kind)) }

// Handle posts the task's leg. It returns the posted entry (the stored one
// when the leg had already committed), or a messages.InvokeResponse_Error
// value whose Type is one of the Type constants.
func (w *Worker) Handle(ctx context.Context, task Task) (ledger.Entry, error) {
	entry, err := w.poster.Post(ctx, task.leg(w.kind))
	if err != nil {
		return ledger.Entry{}, w.fail(ctx, task, err)
	}
	outcome := "committed"
	if entry.Replayed {
		outcome = "replayed"
	}
	w.log.LogAttrs(ctx, slog.LevelInfo, "leg posted",
		slog.String("transferId", task.TransferID),
		slog.String("leg", string(w.kind)),
		slog.String("outcome", outcome),
		slog.String("accountId", entry.AccountID),
		slog.Int64("amount", entry.Amount),
		slog.String("currency", entry.Currency),
		slog.Time("postedAt", entry.PostedAt),
	)
	return entry, nil
}

// Invoke implements lambda.Handler, so lambda.Start(w) runs the worker: it
// decodes the task itself, so that a payload that is not a Task (an amount
// that is not an integer, say) is an InvalidTask like any other malformed
// task, then encodes the entry.
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
	entry, err := w.Handle(ctx, task)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(entry)
	if err != nil {
		// An Entry always encodes; fail closed all the same.
		return nil, w.fail(ctx, task, fmt.Errorf("%w: encode entry: %w", ledger.ErrUnavailable, err))
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
	w.log.LogAttrs(ctx, level, "leg failed",
		slog.String("transferId", task.TransferID),
		slog.String("leg", string(w.kind)),
		slog.String("outcome", name),
		slog.String("class", class.String()),
		slog.String("error", err.Error()),
	)
	return messages.InvokeResponse_Error{Type: name, Message: message}
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
	}
	return fmt.Sprintf("The ledger refused the %s on account %s.", strings.ToLower(string(l.Kind)), l.AccountID)
}
