package reaper

import (
	"encoding/json"
	"fmt"

	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// storedTransfer is the final response as the workflow stores it
// (statemachine/transfer.asl.json, states BuildCompletedTransfer and
// BuildFailedTransfer): the transfer.Transfer fields, with reference
// always present and failure.reversed always present on a failure. The
// orchestrator reads it back with transfer.FromRecord.
type storedTransfer struct {
	TransferID           string         `json:"transferId"`
	Status               string         `json:"status"`
	SourceAccountID      string         `json:"sourceAccountId"`
	DestinationAccountID string         `json:"destinationAccountId"`
	Amount               int64          `json:"amount"`
	Currency             string         `json:"currency"`
	Reference            string         `json:"reference"`
	CreatedAt            string         `json:"createdAt"`
	SettledAt            string         `json:"settledAt"`
	Failure              *storedFailure `json:"failure,omitempty"`
}

type storedFailure struct {
	Code     string `json:"code"`
	Detail   string `json:"detail"`
	Reversed bool   `json:"reversed"`
}

// settledResponse is the terminal status and stored response of a
// transfer settled with outcome (OutcomeCompleted, OutcomeFailed or
// OutcomeReversed) at settledAt.
func settledResponse(rec reservation.Record, req transfer.Request, outcome Outcome, why cause, settledAt string) (reservation.Status, string, error) {
	t := storedTransfer{
		TransferID:           rec.ResourceID,
		Status:               transfer.StatusCompleted,
		SourceAccountID:      req.SourceAccountID,
		DestinationAccountID: req.DestinationAccountID,
		Amount:               req.Amount,
		Currency:             req.Currency,
		Reference:            req.Reference,
		CreatedAt:            rec.CreatedAt,
		SettledAt:            settledAt,
	}
	final := reservation.StatusCompleted
	switch outcome {
	case OutcomeCompleted:
	case OutcomeFailed:
		final, t.Status = reservation.StatusFailed, transfer.StatusFailed
		t.Failure = &storedFailure{Code: why.code, Detail: why.why + "; no money moved."}
	case OutcomeReversed:
		final, t.Status = reservation.StatusFailed, transfer.StatusFailed
		// Reversed tells the client the debit was refunded; the API
		// says so in its own words, as for the workflow's refunds.
		t.Failure = &storedFailure{Code: why.code, Detail: why.why + ".", Reversed: true}
	default:
		return "", "", fmt.Errorf("no stored response for outcome %q", outcome)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", "", fmt.Errorf("encode response: %w", err)
	}
	return final, string(b), nil
}
