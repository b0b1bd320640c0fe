package transfer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/exactlyonce/transfers/internal/reservation"
)

// Public statuses of a transfer.
const (
	StatusPending   = "PENDING"
	StatusCompleted = "COMPLETED"
	StatusFailed    = "FAILED"
)

// Transfer is the transfer resource the API returns.
type Transfer struct {
	TransferID           string   `json:"transferId"`
	Status               string   `json:"status"`
	SourceAccountID      string   `json:"sourceAccountId"`
	DestinationAccountID string   `json:"destinationAccountId"`
	Amount               int64    `json:"amount"`
	Currency             string   `json:"currency"`
	Reference            string   `json:"reference,omitempty"`
	CreatedAt            string   `json:"createdAt"`
	SettledAt            string   `json:"settledAt,omitempty"`
	Failure              *Failure `json:"failure,omitempty"`
}

// Failure says why a transfer failed. Code is the error name the workflow
// caught (InsufficientFunds, AccountNotFound, ...). Reversed is true when
// a committed debit was refunded.
type Failure struct {
	Code     string `json:"code"`
	Detail   string `json:"detail,omitempty"`
	Reversed bool   `json:"reversed,omitempty"`
}

// WorkflowInput is the input of a transfer's execution. It is built only
// from the stored record, so every start of one transfer sends
// byte-identical input.
type WorkflowInput struct {
	RecordKey  string          `json:"recordKey"`
	TransferID string          `json:"transferId"`
	CreatedAt  string          `json:"createdAt"`
	Request    json.RawMessage `json:"request"`
	// RetentionSeconds is how long the record is kept once settled; the
	// leg workers turn it into the record's expiry (the workflow has no
	// clock to compute one).
	RetentionSeconds int64 `json:"retentionSeconds"`
	// Scope is the caller scope of the record: the debit requires the
	// source account to be this caller's (worker.Task.Scope), and the
	// record's scope to be this one.
	Scope string `json:"scope"`
	// Attempt is the record's attempt: every step of the execution is
	// fenced to it (see idempotency.Record.Attempt).
	Attempt int64 `json:"attempt"`
}

// ExecutionName is the name of the execution of a transfer's attempt: the
// transfer id for the first, then the id and the attempt ("<id>_2"). Step
// Functions keeps a closed execution's name for 90 days, so a resumed
// transfer needs a name of its own.
func ExecutionName(transferID string, attempt int64) string {
	if attempt == 0 {
		return transferID
	}
	return transferID + "_" + strconv.FormatInt(attempt, 10)
}

// TransferIDOf is the transfer id in an execution name (ExecutionName's
// inverse).
func TransferIDOf(executionName string) string {
	id, _, _ := strings.Cut(executionName, "_")
	return id
}

// NewWorkflowInput builds the execution input of rec.
func NewWorkflowInput(rec reservation.Record) ([]byte, error) {
	if !json.Valid([]byte(rec.Request)) {
		return nil, fmt.Errorf("workflow input %s: stored request is not JSON", rec.ResourceID)
	}
	return json.Marshal(WorkflowInput{
		RecordKey:  rec.Key,
		TransferID: rec.ResourceID,
		CreatedAt:  rec.CreatedAt,
		Request:    json.RawMessage(rec.Request),
		// Records stored before RetentionSeconds existed get the
		// default.
		RetentionSeconds: int64(rec.Retention() / time.Second),
		Scope:            rec.Scope,
		Attempt:          rec.Attempt,
	})
}

// ErrCorruptRecord reports a stored record the API cannot read back.
var ErrCorruptRecord = errors.New("stored transfer record is unreadable")

// FromRecord renders the transfer of rec: the stored final response when
// the record is terminal, else the pending transfer from the stored
// request.
func FromRecord(rec reservation.Record) (Transfer, error) {
	if rec.Status.Terminal() && rec.Response != "" {
		if t, ok := decodeTransfer(rec.Response); ok {
			return t, nil
		}
		var t Transfer
		if err := json.Unmarshal([]byte(rec.Response), &t); err != nil {
			return Transfer{}, fmt.Errorf("%w: %s response: %v", ErrCorruptRecord, rec.ResourceID, err)
		}
		return t, nil
	}
	req, ok := decodeRequest(rec.Request)
	if !ok {
		if err := json.Unmarshal([]byte(rec.Request), &req); err != nil {
			return Transfer{}, fmt.Errorf("%w: %s request: %v", ErrCorruptRecord, rec.ResourceID, err)
		}
	}
	status := StatusPending
	switch rec.Status {
	case reservation.StatusCompleted:
		status = StatusCompleted
	case reservation.StatusFailed:
		status = StatusFailed
	}
	return Transfer{
		TransferID:           rec.ResourceID,
		Status:               status,
		SourceAccountID:      req.SourceAccountID,
		DestinationAccountID: req.DestinationAccountID,
		Amount:               req.Amount,
		Currency:             req.Currency,
		Reference:            req.Reference,
		CreatedAt:            rec.CreatedAt,
	}, nil
}
