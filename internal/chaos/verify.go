package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// CodeKeyReused is the problem code of a key used with another body.
const CodeKeyReused = "idempotency_key_reused"

// CodeForbidden is the problem code of a transfer from an account that is
// not the caller's.
const CodeForbidden = "forbidden"

// Mismatch is an answer that disagrees with the key's record: an earlier
// answer of the run or the replay Verify made.
type Mismatch struct {
	Caller, Key string
	// TransferID is the record's transfer, when there is a record.
	TransferID string
	Message    string
	// Exchange is the answer that disagrees.
	Exchange Exchange
}

func (m Mismatch) String() string {
	return fmt.Sprintf("key %s of %s (transfer %s): %s: %s", m.Key, m.Caller, m.TransferID, m.Message, m.Exchange)
}

// Verification is what Verify found.
type Verification struct {
	Report   Report
	Snapshot *Snapshot
	// Mismatches between answers and records, in key order.
	Mismatches []Mismatch
	// Replays is the number of keys replayed.
	Replays int
}

// OK reports whether no invariant is broken and every answer agrees.
func (v Verification) OK() bool { return v.Report.OK() && len(v.Mismatches) == 0 }

// Verify checks the invariants (Check), then, for every key the journal
// shows, checks its answers against its record: answers to its own request
// are 202, or agree with the record's outcome (200 COMPLETED, 422 with the
// stored failure's code) and name its transfer; answers to another body
// are 422 idempotency_key_reused; a key with no record got no answer but
// 403 forbidden (a debit of an account that is not the caller's, refused
// before anything was stored), 503 or a failed exchange, which is itself a mismatch (a 503'd
// request must be retried until it is answered). Every key that has a record is
// posted again with its own request, and the replay must agree with the
// record and say Idempotent-Replayed: true. Run it after Quiesce.
func (h *Harness) Verify(ctx context.Context) (Verification, error) {
	rep, snap, err := h.Check(ctx)
	if err != nil {
		return Verification{}, err
	}
	v := Verification{Report: rep, Snapshot: snap}
	type callerKey struct{ caller, key string }
	groups := map[callerKey][]Exchange{}
	var order []callerKey
	for _, e := range h.Client.Journal.Exchanges() {
		if e.Method != http.MethodPost {
			continue
		}
		ck := callerKey{e.Caller, e.Key}
		if _, ok := groups[ck]; !ok {
			order = append(order, ck)
		}
		groups[ck] = append(groups[ck], e)
	}
	slices.SortFunc(order, func(a, b callerKey) int {
		if a.caller != b.caller {
			if a.caller < b.caller {
				return -1
			}
			return 1
		}
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	for _, ck := range order {
		exchanges := groups[ck]
		rec, ok := snap.Records[RecordKey(ck.caller, ck.key)]
		mismatch := func(e Exchange, format string, args ...any) {
			v.Mismatches = append(v.Mismatches, Mismatch{Caller: ck.caller, Key: ck.key, TransferID: rec.ResourceID, Message: fmt.Sprintf(format, args...), Exchange: e})
		}
		if !ok {
			for _, e := range exchanges {
				forbidden := e.Status == http.StatusForbidden && e.Code == CodeForbidden
				if e.Status != http.StatusServiceUnavailable && e.Status != 0 && e.Status != http.StatusBadRequest && !forbidden {
					mismatch(e, "answered %d %s, but the key has no record", e.Status, e.Code)
				}
			}
			if last := exchanges[len(exchanges)-1]; last.Status == http.StatusServiceUnavailable || last.Status == 0 {
				mismatch(last, "the key was never accepted: its last answer is %d", last.Status)
			}
			continue
		}
		want, err := expectedAnswer(rec)
		if err != nil {
			mismatch(Exchange{}, "%v", err)
			continue
		}
		var own *Exchange
		for _, e := range exchanges {
			same, err := sameRequest(e.Body, rec.Request)
			if err != nil {
				mismatch(e, "%v", err)
				continue
			}
			switch {
			case e.Status == http.StatusServiceUnavailable && e.RetryAfter != "", e.Status == 0:
				// No answer: the outcome is unknown to the client.
			case !same:
				if e.Status != http.StatusUnprocessableEntity || e.Code != CodeKeyReused {
					mismatch(e, "another body under the key answered %d %s, want 422 %s", e.Status, e.Code, CodeKeyReused)
				}
			default:
				own = &e
				if e.TransferID != rec.ResourceID {
					mismatch(e, "answer names transfer %q, the record %q", e.TransferID, rec.ResourceID)
				}
				if e.Status != http.StatusAccepted && (e.Status != want.status || e.Code != want.code) {
					mismatch(e, "answered %d %s, the record says %d %s", e.Status, e.Code, want.status, want.code)
				}
			}
		}
		if own == nil {
			// Only another body got an answer: replay the stored request.
			own = &Exchange{Body: rec.Request}
		}
		v.Replays++
		r := h.Client.PostTransfer(ctx, ck.caller, ck.key, []byte(own.Body))
		switch {
		case r.Status != want.status || r.Code != want.code:
			mismatch(r, "replay answered %d %s, the record says %d %s", r.Status, r.Code, want.status, want.code)
		case r.TransferID != rec.ResourceID || r.TransferStatus != want.transferStatus:
			mismatch(r, "replay shows transfer %q %s, the record %q %s", r.TransferID, r.TransferStatus, rec.ResourceID, want.transferStatus)
		case !r.Replayed:
			mismatch(r, "replay lacks Idempotent-Replayed: true")
		}
	}
	return v, nil
}

// expected is the answer a replay of a record gets.
type expected struct {
	status         int
	code           string
	transferStatus string
}

func expectedAnswer(rec reservation.Record) (expected, error) {
	if !rec.Status.Terminal() {
		return expected{status: http.StatusAccepted, transferStatus: transfer.StatusPending}, nil
	}
	var t transfer.Transfer
	if err := json.Unmarshal([]byte(rec.Response), &t); err != nil {
		return expected{}, fmt.Errorf("record %s: stored response: %w", rec.Key, err)
	}
	if rec.Status == reservation.StatusCompleted {
		return expected{status: http.StatusOK, transferStatus: transfer.StatusCompleted}, nil
	}
	code := "transfer_failed"
	if t.Failure != nil {
		code = failureCode(t.Failure.Code)
	}
	status := http.StatusUnprocessableEntity
	if code == CodeForbidden {
		status = http.StatusForbidden
	}
	return expected{status: status, code: code, transferStatus: transfer.StatusFailed}, nil
}

// failureCode is the problem code the API documents for a failure's code.
func failureCode(name string) string {
	switch name {
	case "InsufficientFunds":
		return "insufficient_funds"
	case "AccountNotFound":
		return "account_not_found"
	case "CurrencyMismatch":
		return "currency_mismatch"
	case "AccountClosed":
		return "account_closed"
	case "DestinationUnavailable":
		return "destination_unavailable"
	case "Forbidden":
		return CodeForbidden
	}
	return "transfer_failed"
}

// sameRequest reports whether a posted body is the stored canonical
// request.
func sameRequest(body, stored string) (bool, error) {
	var a, b transfer.Request
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return false, fmt.Errorf("posted body %q: %w", body, err)
	}
	if err := json.Unmarshal([]byte(stored), &b); err != nil {
		return false, fmt.Errorf("stored request %q: %w", stored, err)
	}
	return a == b, nil
}
