package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// VoidResult is what Void found or did.
type VoidResult struct {
	// Committed is set when an attempt of the leg committed before the
	// marker could be put: the leg stands, and the rejection is void
	// instead.
	Committed *Entry
	// Reason and Detail are the rejection the marker records: this one,
	// or the first one when the leg was voided before.
	Reason string
	Detail string
	// Replayed is set when the slot was void before: an earlier attempt's
	// rejection, which this call did not write.
	Replayed bool
}

// Void makes a business rejection of a DEBIT final. Step Functions may give
// up on an attempt of a leg (a Lambda service error, a timeout) while that
// attempt is still running, and start another; if the later attempt is
// rejected (insufficient funds, say), the earlier one may still commit
// once the account changes, after the workflow has stored the transfer as
// FAILED. Void closes that window: with one TransactWriteItems it puts a
// void marker in the leg's entry slot, fenced on the idempotency record
// like any leg, so that every later attempt finds the slot taken and
// commits nothing (Post then returns a *VoidedError).
//
// If an attempt committed first, the marker is not put and the committed
// entry is returned in Committed: the debit happened and the transfer goes
// on. If the slot is already void, the stored rejection is returned. A
// record that no longer allows the leg is reported as ErrFenced, as by
// Post.
func (l *Ledger) Void(ctx context.Context, leg Leg, reason, detail string) (VoidResult, error) {
	res, err := l.void(ctx, leg, reason, detail)
	if err != nil {
		return VoidResult{}, fmt.Errorf("void %s %s: %w", leg.Kind.verb(), leg.TransferID, err)
	}
	return res, nil
}

func (l *Ledger) void(ctx context.Context, leg Leg, reason, detail string) (VoidResult, error) {
	if err := leg.Validate(); err != nil {
		return VoidResult{}, err
	}
	if leg.Kind != Debit {
		// Only a rejected debit ends a transfer without a reversal; a
		// credit and its refund already exclude each other.
		return VoidResult{}, invalid("Kind", "only a DEBIT can be voided")
	}
	if reason == "" {
		return VoidResult{}, invalid("Reason", "must not be empty")
	}
	marker := newEntryItem(leg, l.now(), 0)
	marker.Amount, marker.Seq, marker.PostedAt = 0, 0, ""
	marker.Voided, marker.Reason, marker.Detail = true, reason, detail
	fence, err := l.fenceCheck(leg)
	if err != nil {
		return VoidResult{}, err
	}
	put, err := l.entryPut(marker)
	if err != nil {
		return VoidResult{}, err
	}
	items := []types.TransactWriteItem{idxFence: fence, idxEntry: put}
	_, err = l.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return VoidResult{Reason: reason, Detail: detail}, nil
	}
	reasons, rerr := cancellationReasons(err, len(items))
	if rerr != nil {
		return VoidResult{}, rerr
	}
	// The slot is taken: by an attempt of the leg that committed first,
	// or by an earlier void. As for Post, that decides whatever else the
	// reasons say.
	if reasonCode(reasons[idxEntry]) == codeConditionalCheckFailed {
		e, serr := l.stored(ctx, marker.PK, marker.SK, reasons[idxEntry].Item)
		var voided *VoidedError
		switch {
		case errors.As(serr, &voided):
			return VoidResult{Reason: voided.Reason, Detail: voided.Detail, Replayed: true}, nil
		case serr != nil:
			return VoidResult{}, serr
		}
		return VoidResult{Committed: &e}, nil
	}
	if uerr := undecided(reasons, err); uerr != nil {
		return VoidResult{}, uerr
	}
	if reasonCode(reasons[idxFence]) == codeConditionalCheckFailed {
		return VoidResult{}, fenceError(leg, reasons[idxFence].Item)
	}
	return VoidResult{}, unavailable(fmt.Errorf("transaction cancelled without a failed condition: %w", err))
}
