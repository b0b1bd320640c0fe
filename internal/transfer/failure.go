package transfer

// The one classification of a transfer's failures, used by the leg
// workers (what they make final), the reaper (what it resumes) and the
// chaos checker (what a FAILED transfer may carry).
//
//   - Business refusals: the ledger's rules refused the transfer. Final,
//     stored by the workflow, replayed as 422 (403 for Forbidden).
//   - Operator and window: an operator aborted the transfer (CodeAborted),
//     or it could not complete within its completion window
//     (CodeTimedOut). Final, stored by the reaper; a debit is refunded.
//   - Everything else is infrastructure: a Lambda error or timeout, a
//     DynamoDB 5xx, throttling or exhausted transaction conflicts, a lost
//     or timed-out execution, a crash. It delays a transfer and never
//     fails it while its completion window is open.

// Business refusal codes: the ledger's refusals as the workers name them
// (worker.Type*), and the failure codes of the workflow's FAILED
// transfers.
const (
	CodeInsufficientFunds = "InsufficientFunds"
	CodeAccountNotFound   = "AccountNotFound"
	CodeCurrencyMismatch  = "CurrencyMismatch"
	CodeAccountClosed     = "AccountClosed"
	CodeBalanceLimit      = "BalanceLimitExceeded"
	CodeForbidden         = "Forbidden"
	// CodeDestinationUnavailable: a credit refused on an account that is
	// not the caller's (or no account), whatever the rule: the precise
	// refusal is not the caller's to learn.
	CodeDestinationUnavailable = "DestinationUnavailable"
)

// Codes of the failures that are no business refusal but still final.
const (
	// CodeTimedOut: the transfer could not complete within its
	// completion window.
	CodeTimedOut = "TimedOut"
	// CodeAborted: an operator aborted the transfer.
	CodeAborted = "Aborted"
)

// FailureKind is the class of a failure code.
type FailureKind int

// Failure kinds; see the package's classification above.
const (
	// Infrastructure: a fault that delays the transfer; never final
	// while the completion window is open.
	Infrastructure FailureKind = iota
	// Business: a business rule refused the transfer; final.
	Business
	// Settled: an operator's abort or the completion window's end;
	// final.
	Settled
)

func (k FailureKind) String() string {
	switch k {
	case Business:
		return "business"
	case Settled:
		return "settled"
	}
	return "infrastructure"
}

// ClassifyFailure returns the kind of a failure code (an error name of a
// leg, a stored failure's code).
func ClassifyFailure(code string) FailureKind {
	switch code {
	case CodeInsufficientFunds, CodeAccountNotFound, CodeCurrencyMismatch, CodeAccountClosed, CodeBalanceLimit, CodeForbidden,
		CodeDestinationUnavailable:
		return Business
	case CodeTimedOut, CodeAborted:
		return Settled
	}
	return Infrastructure
}

// IsFinal reports whether a transfer may be stored FAILED with code: a
// business refusal, an operator's abort or the end of the completion
// window. Any other code is an infrastructure fault, which delays a
// transfer and never fails it.
func IsFinal(code string) bool { return ClassifyFailure(code) != Infrastructure }
