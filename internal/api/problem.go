package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Problem is an RFC 9457 problem document. Code is stable and meant for
// programs; Title and Detail are for people.
type Problem struct {
	Type     string                `json:"type"`
	Title    string                `json:"title"`
	Status   int                   `json:"status"`
	Detail   string                `json:"detail,omitempty"`
	Instance string                `json:"instance,omitempty"`
	Code     string                `json:"code"`
	Errors   []transfer.FieldError `json:"errors,omitempty"`
	Transfer *transfer.Transfer    `json:"transfer,omitempty"`
}

// Problem codes.
const (
	CodeKeyMissing      = "idempotency_key_missing"
	CodeKeyMalformed    = "idempotency_key_malformed"
	CodeKeyReused       = "idempotency_key_reused"
	CodeInvalidRequest  = "invalid_request"
	CodeBodyTooLarge    = "body_too_large"
	CodeNotFound        = "not_found"
	CodeUnauthenticated = "caller_unknown"
	CodeUnavailable     = "service_unavailable"
	CodeInternal        = "internal_error"
	// CodeForbidden refuses a transfer from an account that is not the
	// caller's (or does not exist: one answer for both).
	CodeForbidden = "forbidden"
	// CodeUnsupportedMediaType refuses a body that is not application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeInvalidLimit refuses a list's limit that is not 1-100.
	CodeInvalidLimit = "invalid_limit"
	// CodeInvalidCursor refuses a list's cursor that the list did not
	// give: altered, made up, another caller's or another list's.
	CodeInvalidCursor = "invalid_cursor"
)

// Errors of the edge itself.
var (
	errNoCaller = errors.New("the request carries no authenticated caller")
	errNotFound = errors.New("not found")
	// errMediaType reports a body sent as another media type than JSON.
	errMediaType = errors.New("the body is not application/json")
)

// problemFor maps an error to its problem document: the one place where
// domain errors become HTTP statuses. Anything unrecognised is an
// infrastructure failure and fails closed with 503.
func problemFor(err error) Problem {
	var verr *transfer.ValidationError
	switch {
	case errors.Is(err, idempotency.ErrKeyMissing):
		return newProblem(http.StatusBadRequest, CodeKeyMissing, "Idempotency-Key header is required",
			"Send an Idempotency-Key header of 1-255 printable ASCII characters, unique per transfer.")
	case errors.Is(err, idempotency.ErrKeyMalformed):
		return newProblem(http.StatusBadRequest, CodeKeyMalformed, "Idempotency-Key header is malformed",
			"The Idempotency-Key must be 1-255 printable ASCII characters and sent once.")
	case errors.Is(err, idempotency.ErrKeyReused):
		return newProblem(http.StatusUnprocessableEntity, CodeKeyReused, "Idempotency-Key was used for a different request",
			"This key already belongs to a transfer with a different body. Use a new key for a new transfer.")
	case errors.Is(err, errMediaType):
		return newProblem(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Unsupported media type",
			"Send the body as application/json; nothing was stored.")
	case errors.Is(err, transfer.ErrBodyTooLarge):
		return newProblem(http.StatusBadRequest, CodeBodyTooLarge, "Request body is too large",
			"A transfer request must be at most 16 KiB.")
	case errors.As(err, &verr):
		p := newProblem(http.StatusBadRequest, CodeInvalidRequest, "The transfer request is invalid",
			"See errors for each invalid field; nothing was stored.")
		p.Errors = verr.Fields
		return p
	case errors.Is(err, errNotFound), errors.Is(err, idempotency.ErrNotFound),
		errors.Is(err, ledger.ErrAccountNotFound), errors.Is(err, ledger.ErrInvalidInput):
		// An id that cannot exist (too long, control characters) is as
		// absent as one that does not.
		return newProblem(http.StatusNotFound, CodeNotFound, "Not found", "")
	case errors.Is(err, errLimit):
		return newProblem(http.StatusBadRequest, CodeInvalidLimit, "Invalid page size",
			"limit must be a whole number from 1 to 100, sent once.")
	case errors.Is(err, errCursor):
		return newProblem(http.StatusBadRequest, CodeInvalidCursor, "Invalid cursor",
			"Send the nextCursor of a page of this list, as it was given, or no cursor for the first page.")
	case errors.Is(err, errNoCaller):
		return newProblem(http.StatusForbidden, CodeUnauthenticated, "Caller not identified",
			"Requests must be authenticated; the caller scopes every Idempotency-Key.")
	case errors.Is(err, transfer.ErrCorruptRecord):
		return newProblem(http.StatusInternalServerError, CodeInternal, "Stored transfer is unreadable", "")
	}
	return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "Service temporarily unavailable",
		"Nothing was lost: retry with the same Idempotency-Key after the Retry-After delay.")
}

// failureProblem is the problem of a transfer the workflow rejected: 422,
// or 403 forbidden when the debit found the source account not the
// caller's (the workflow's own owner check, behind the edge's).
func failureProblem(t transfer.Transfer) Problem {
	code, title := "transfer_failed", "The transfer failed"
	detail := ""
	status := http.StatusUnprocessableEntity
	if t.Failure != nil {
		code, title = failureCode(t.Failure.Code)
		detail = t.Failure.Detail
		if t.Failure.Reversed {
			detail = strings.TrimSpace(detail + " The debited amount was refunded to the source account.")
		}
		if code == CodeForbidden {
			status = http.StatusForbidden
		}
	}
	p := newProblem(status, code, title, detail)
	p.Transfer = &t
	return p
}

func failureCode(name string) (code, title string) {
	switch name {
	case "InsufficientFunds":
		return "insufficient_funds", "Insufficient funds in the source account"
	case "AccountNotFound":
		return "account_not_found", "An account of the transfer does not exist"
	case "CurrencyMismatch":
		return "currency_mismatch", "The currency differs from an account's currency"
	case "AccountClosed":
		return "account_closed", "An account of the transfer is closed"
	case "Forbidden":
		return CodeForbidden, "Not allowed to debit the source account"
	case "DestinationUnavailable":
		return "destination_unavailable", "The destination account cannot receive the transfer"
	}
	return "transfer_failed", "The transfer failed"
}

func newProblem(status int, code, title, detail string) Problem {
	return Problem{Type: "/problems/" + code, Title: title, Status: status, Detail: detail, Code: code}
}

// retryAfterSeconds is the Retry-After of a 503.
const retryAfterSeconds = "1"

func problemResponse(p Problem, instance string, extra map[string]string) events.APIGatewayProxyResponse {
	p.Instance = instance
	body, _ := json.Marshal(p) // a Problem always marshals
	headers := map[string]string{"Content-Type": "application/problem+json"}
	if p.Status == http.StatusServiceUnavailable {
		headers["Retry-After"] = retryAfterSeconds
	}
	for k, v := range extra {
		headers[k] = v
	}
	return events.APIGatewayProxyResponse{StatusCode: p.Status, Headers: headers, Body: string(body)}
}
