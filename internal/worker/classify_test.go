package worker_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/transfer"
	"github.com/exactlyonce/transfers/internal/worker"
)

// TestOneClassification: the failures the workers name are classified by
// transfer.ClassifyFailure as the ledger classifies them, and the
// workflow catches exactly the business refusals of a credit: a refused
// credit is refunded, anything else is an infrastructure fault that
// delays the transfer.
func TestOneClassification(t *testing.T) {
	errs := []error{
		ledger.ErrInsufficientFunds, ledger.ErrAccountNotFound, ledger.ErrCurrencyMismatch, ledger.ErrAccountClosed,
		ledger.ErrBalanceLimit, ledger.ErrForbidden, ledger.ErrDestinationUnavailable, ledger.ErrFenced, ledger.ErrVoided, ledger.ErrDebitMissing,
		ledger.ErrNothingToRefund, ledger.ErrAlreadyRefunded, ledger.ErrAlreadyCredited, ledger.ErrInvalidInput,
		ledger.ErrUnavailable, errors.New("anything else"),
	}
	for _, err := range errs {
		t.Run(err.Error(), func(t *testing.T) {
			name := worker.ErrorType(err)
			business := transfer.ClassifyFailure(name) == transfer.Business
			if business != ledger.IsBusiness(err) {
				t.Errorf("%s (%s): business %t for the domain, %t for the ledger", name, err, business, ledger.IsBusiness(err))
			}
			if transfer.IsFinal(name) && !business {
				t.Errorf("%s is final but no business refusal: only the reaper stores TimedOut and Aborted", name)
			}
		})
	}

	raw, err := os.ReadFile("../../statemachine/transfer.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		States map[string]struct {
			Catch []struct{ ErrorEquals []string }
		}
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	var caught []string
	for _, c := range def.States["Credit"].Catch {
		caught = append(caught, c.ErrorEquals...)
	}
	slices.Sort(caught)
	// A credit's refusals: the destination's rules, or one answer for all
	// of them on another caller's account (the owner is checked on the
	// debit, funds only on the source).
	want := []string{transfer.CodeAccountClosed, transfer.CodeAccountNotFound, transfer.CodeBalanceLimit, transfer.CodeCurrencyMismatch,
		transfer.CodeDestinationUnavailable}
	if !slices.Equal(caught, want) {
		t.Errorf("the Credit state catches %v, want the credit's business refusals %v", caught, want)
	}
	for _, c := range caught {
		if transfer.ClassifyFailure(c) != transfer.Business {
			t.Errorf("the Credit state catches %s, which is no business refusal", c)
		}
	}
}
