package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/sync/singleflight"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// reserveOwned reserves a key with ownership enforced. The owner check
// here is the early answer; the debit's, inside the transaction that
// moves the money, is the one that decides (docs/design.md, "The owner
// check"). So the reservation is the same single PutItem as without
// ownership, and the owner costs at most one read sent alongside it:
//
//   - the owner is remembered (read less than OwnerCacheAge ago) and is
//     the caller: the PutItem alone;
//   - it is remembered and is not the caller: the PutItem, then a new
//     key's record is settled FAILED Forbidden at once (refuseReserved)
//     and the answer is 403 with it; a duplicate is answered from its
//     record, whoever owns the account now (notOwner);
//   - it is not remembered: the account is read while the key is
//     reserved (one read for all the requests that need it at once). A
//     duplicate is answered from its record without waiting for the
//     read, which goes on to fill the memory. A new key waits for it:
//     if the source is not the caller's, the record just made is
//     settled FAILED Forbidden at once and the answer is 403; if the
//     read failed, the transfer starts and the debit decides.
//
// A refused new key gets the same answer and leaves the same record
// whether the owner was remembered or not, and whether the account
// exists or not: an outsider learns nothing of which accounts are used.
func (h *Handler) reserveOwned(ctx context.Context, r reservation.Reservation, source, base, instance string, pref waitPref) events.APIGatewayProxyResponse {
	owner, known := h.owners.get(source)
	var read <-chan singleflight.Result
	if !known {
		read = h.readOwner(ctx, source)
	}
	rec, created, err := h.records.Reserve(ctx, r)
	if err != nil {
		h.log.ErrorContext(ctx, "reserve failed", "transferId", r.ResourceID, "recordKey", idempotency.RecordKey(r.Scope, r.Key), "error", err)
		return problemResponse(problemFor(err), instance, nil)
	}
	if !created {
		if known && owner != r.Scope {
			return h.notOwner(ctx, rec, r, base, instance, pref)
		}
		// A duplicate does not wait for the read, which goes on to
		// fill the container's memory.
		return h.existing(ctx, rec, r.Fingerprint, base, instance, pref)
	}
	h.count(ctx, metrics.Reserved)
	if known && owner != r.Scope {
		return h.refuseReserved(ctx, rec, base, false)
	}
	if read != nil {
		var (
			owner string
			err   error
		)
		select {
		case res := <-read:
			owner, _ = res.Val.(string)
			err = res.Err
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		switch {
		case err != nil:
			// The debit checks the owner again, in the transaction that
			// moves the money: the transfer goes on, and a caller who is
			// not the owner gets 403 from its record when it settles.
			h.log.WarnContext(ctx, "read the source account's owner", "transferId", rec.ResourceID, "accountId", source, "error", err)
		case owner != r.Scope:
			return h.refuseReserved(ctx, rec, base, false)
		}
	}
	return h.waited(ctx, rec, base, false, pref, h.start(ctx, rec, base, false))
}

// ownerReadTimeout bounds a read of an account's owner, which may outlive
// the request that sent it.
const ownerReadTimeout = 3 * time.Second

// readOwner reads the owner of account and remembers it, in the
// background: the requests that find it not remembered at the same time
// share one read, and a request that does not need the answer (a
// duplicate) leaves the read to finish and fill the memory, so that the
// next request finds it there instead of sending another.
func (h *Handler) readOwner(ctx context.Context, account string) <-chan singleflight.Result {
	ctx = context.WithoutCancel(ctx)
	return h.ownerReads.DoChan(account, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, ownerReadTimeout)
		defer cancel()
		sent := time.Now()
		owner, err := h.ownerOf(ctx, account)
		if err != nil {
			return "", err
		}
		h.owners.put(account, owner, sent)
		return owner, nil
	})
}

// ownerOf is the owner of account: empty for an account that does not
// exist (or cannot, with an id the ledger refuses), which no caller owns.
func (h *Handler) ownerOf(ctx context.Context, account string) (string, error) {
	acct, err := h.accounts.Account(ctx, account)
	switch {
	case errors.Is(err, ledger.ErrAccountNotFound), errors.Is(err, ledger.ErrInvalidInput):
		return "", nil
	case err != nil:
		return "", err
	}
	return acct.Owner, nil
}

// notOwner answers a duplicate whose source account is known not to be
// the caller's, from its record rec (made when the caller owned the
// account, say), except that a record of this request still RESERVED on
// its first attempt (never started: its first attempt was answered 503
// before the record was settled, say) is settled FAILED Forbidden first.
// A record RESERVED under a later attempt was resumed: an earlier run may
// have debited the account while the caller owned it, so it is answered
// as it is (its next run is started, and completes what the debit began).
func (h *Handler) notOwner(ctx context.Context, rec reservation.Record, r reservation.Reservation, base, instance string, pref waitPref) events.APIGatewayProxyResponse {
	if rec.Status == reservation.StatusReserved && rec.Attempt == 0 && rec.Matches(r.Fingerprint) == nil {
		return h.refuseReserved(ctx, rec, base, true)
	}
	return h.existing(ctx, rec, r.Fingerprint, base, instance, pref)
}

// refuseReserved settles a record just reserved for a caller who does not
// own its source account: FAILED Forbidden, before any execution starts,
// so nothing can move money and every replay is 403. If the record has
// moved on (a duplicate started its execution meanwhile), it is answered
// as it is: its debit refuses it. If the write fails, the answer is 503
// and the record stays RESERVED: whoever starts it (a retry, the
// sweeper), its debit refuses it and it settles FAILED Forbidden.
// replayed says whether the record answers an earlier request (a retry).
func (h *Handler) refuseReserved(ctx context.Context, rec reservation.Record, base string, replayed bool) events.APIGatewayProxyResponse {
	location := base + "/transfers/" + rec.ResourceID
	t, err := transfer.FromRecord(rec)
	if err != nil {
		return problemResponse(problemFor(err), location, nil)
	}
	t.Status = transfer.StatusFailed
	t.SettledAt = time.Now().UTC().Format(reservation.TimeFormat)
	t.Failure = &transfer.Failure{Code: failureForbidden, Detail: fmt.Sprintf("The caller may not debit account %s.", t.SourceAccountID)}
	response, err := json.Marshal(t)
	if err != nil {
		return problemResponse(problemFor(err), location, nil)
	}
	h.log.InfoContext(ctx, "source account is not the caller's: reserved transfer refused", "transferId", rec.ResourceID, "recordKey", rec.Key)
	settled, _, err := h.records.FailReserved(ctx, rec.Key, rec.ResourceID, string(response))
	if err != nil {
		h.log.ErrorContext(ctx, "settle a refused transfer", "transferId", rec.ResourceID, "recordKey", rec.Key, "error", err)
		return problemResponse(problemFor(err), base+"/transfers", nil)
	}
	return h.answer(settled, base, replayed)
}

// failureForbidden is the failure code of a transfer refused because its
// caller does not own the source account: the debit's own (the worker's
// Forbidden), so both refusals read and replay alike.
const failureForbidden = "Forbidden"
