package ledger

import (
	"errors"
	"fmt"
)

// Class says how the workflow treats a failed leg.
type Class int

const (
	// ClassTransient: the ledger could not be reached or the transaction
	// lost a race (throttling, TransactionConflict, network, an unexpected
	// service answer). Nothing is known to have changed; retry the leg.
	// Errors the package does not know are transient, so callers fail
	// closed.
	ClassTransient Class = iota
	// ClassBusiness: a business rule rejected the leg (insufficient funds,
	// unknown or closed account, currency mismatch). The leg wrote nothing
	// and retrying it gives the same answer; the transfer fails (after a
	// refund when the debit already committed).
	ClassBusiness
	// ClassTerminal: the leg may not run at all: its idempotency record
	// fences it, the transfer's other ledger entries exclude it, or the
	// leg is malformed. The leg wrote nothing; do not retry it. Whoever
	// settles the transfer decides from the ledger entries (TransferEntries),
	// not from this error.
	ClassTerminal
)

func (c Class) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassBusiness:
		return "business"
	case ClassTerminal:
		return "terminal"
	default:
		return fmt.Sprintf("Class(%d)", int(c))
	}
}

// Error is a domain error of the ledger. The package's sentinels are
// *Error values; match them with errors.Is and read the class with
// ClassOf.
type Error struct {
	msg   string
	class Class
}

func (e *Error) Error() string { return e.msg }

// Class is the error's class.
func (e *Error) Class() Class { return e.class }

// Business rule failures (ClassBusiness).
var (
	ErrInsufficientFunds = &Error{"insufficient funds", ClassBusiness}
	ErrAccountNotFound   = &Error{"account not found", ClassBusiness}
	ErrCurrencyMismatch  = &Error{"currency mismatch", ClassBusiness}
	ErrAccountClosed     = &Error{"account closed", ClassBusiness}
	// ErrBalanceLimit: a CREDIT or REFUND would take the balance past the
	// largest amount the ledger represents (math.MaxInt64 minor units).
	ErrBalanceLimit = &Error{"balance limit exceeded", ClassBusiness}
	// ErrForbidden: a DEBIT that carries an owner (Leg.Owner) of an
	// account that is not that owner's, or that does not exist: the two
	// are one answer, so a caller learns nothing of others' accounts.
	ErrForbidden = &Error{"account not owned by the transfer's caller", ClassBusiness}
	// ErrDestinationUnavailable: a CREDIT that carries the transfer's
	// caller (Leg.Caller) was refused by a business rule on an account
	// that is not the caller's or does not exist. Which rule is not the
	// caller's to learn: the error matches none of the other sentinels
	// (its message names the rule, for the logs).
	ErrDestinationUnavailable = &Error{"destination unavailable", ClassBusiness}
)

// Terminal failures (ClassTerminal).
var (
	// ErrFenced: the idempotency record is missing, belongs to another
	// transfer, holds another payload than the leg's (accounts, amount,
	// currency; for a leg with an Owner, the caller scope), or is in a
	// status that does not allow this leg (DEBIT and CREDIT need
	// IN_PROGRESS; REFUND needs IN_PROGRESS or RECONCILING).
	ErrFenced = &Error{"transfer fenced", ClassTerminal}
	// ErrDebitMissing: a CREDIT whose transfer has no matching DEBIT entry
	// (same transfer, source, destination, amount and currency).
	ErrDebitMissing = &Error{"no matching debit", ClassTerminal}
	// ErrNothingToRefund: a REFUND whose transfer has no matching DEBIT
	// entry.
	ErrNothingToRefund = &Error{"nothing to refund", ClassTerminal}
	// ErrAlreadyRefunded: a CREDIT whose transfer's debit was refunded.
	ErrAlreadyRefunded = &Error{"transfer already refunded", ClassTerminal}
	// ErrAlreadyCredited: a REFUND whose transfer was credited to the
	// destination: the transfer completed and there is nothing to reverse.
	ErrAlreadyCredited = &Error{"transfer already credited", ClassTerminal}
	// ErrVoided: the leg's slot holds a void marker: an attempt of the leg
	// was rejected and the rejection made final (Ledger.Void), so no
	// attempt of it may commit. The error is a *VoidedError carrying the
	// rejection.
	ErrVoided = &Error{"leg voided after a rejection", ClassTerminal}
	// ErrInvalidInput: the request is malformed; nothing was sent to
	// DynamoDB. The error is an *InvalidInputError naming the field.
	ErrInvalidInput = &Error{"invalid input", ClassTerminal}
)

// ErrUnavailable wraps infrastructure failures (ClassTransient) after the
// SDK's own retries: throttling, TransactionConflict, network errors,
// unexpected service answers. The SDK error stays in the chain for
// errors.As.
var ErrUnavailable = &Error{"ledger unavailable", ClassTransient}

// InvalidInputError reports a malformed request. It matches
// ErrInvalidInput with errors.Is.
type InvalidInputError struct {
	// Field is the Go name of the offending field (for example "Amount",
	// "Currency", "AccountID").
	Field   string
	Problem string
}

func (e *InvalidInputError) Error() string {
	return "invalid input: " + e.Field + ": " + e.Problem
}

// Unwrap makes the error match ErrInvalidInput.
func (e *InvalidInputError) Unwrap() error { return ErrInvalidInput }

// VoidedError reports a leg whose rejection was made final (Ledger.Void).
// It matches ErrVoided with errors.Is.
type VoidedError struct {
	// Reason and Detail are the rejection's, as Void stored them.
	Reason string
	Detail string
}

func (e *VoidedError) Error() string {
	return "leg voided after a rejection: " + e.Reason
}

// Unwrap makes the error match ErrVoided.
func (e *VoidedError) Unwrap() error { return ErrVoided }

// ClassOf returns the class of err: the class of the first *Error in its
// chain, ClassTransient when there is none.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.class
	}
	return ClassTransient
}

// IsBusiness reports whether err is a business rule failure: the leg wrote
// nothing and the transfer fails.
func IsBusiness(err error) bool { return err != nil && ClassOf(err) == ClassBusiness }

// unavailable wraps an infrastructure error so that it matches
// ErrUnavailable and still exposes the SDK error to errors.As.
func unavailable(err error) error {
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

func invalid(field, problem string) error {
	return &InvalidInputError{Field: field, Problem: problem}
}
