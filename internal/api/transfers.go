package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// maxTransferIDLength is the longest transfer id: a Step Functions
// execution name.
const maxTransferIDLength = 80

// HeaderReplayed marks a response answered from an earlier request's record.
const HeaderReplayed = "Idempotent-Replayed"

// postTransfer accepts a transfer: one conditional write and one
// StartExecution for a new key, one conditional write for a duplicate.
//
// The write is one PutItem that stores the record with the transfer's
// payload as attributes (ledger.RecordAttributes), which fence every leg
// to this transfer. With ownership enforced the source account's owner is
// checked early (reserveOwned): from the container's memory of it, or by
// a read sent alongside the write; the debit checks it again, and that
// check decides.
func (h *Handler) postTransfer(ctx context.Context, scope string, req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	instance := req.Path
	key, conflicting := header(req, "Idempotency-Key")
	if conflicting {
		return problemResponse(problemFor(idempotency.ErrKeyMalformed), instance, nil)
	}
	if err := idempotency.ValidateKey(key); err != nil {
		return problemResponse(problemFor(err), instance, nil)
	}
	if !jsonBody(req) {
		return problemResponse(problemFor(errMediaType), instance, nil)
	}
	raw, err := body(req)
	if err != nil {
		return problemResponse(problemFor(&transfer.ValidationError{Fields: []transfer.FieldError{{Code: "malformed_body", Detail: "the body is not valid base64"}}}), instance, nil)
	}
	tr, limits, err := transfer.Parse(raw, h.cfg.MaxAmount)
	if err != nil {
		return problemResponse(problemFor(err), instance, nil)
	}
	wait, waiting := preferredWait(req)
	canonical := tr.Canonical()
	fingerprint := idempotency.Fingerprint(canonical)
	if limits != nil {
		return h.overLimits(ctx, scope, key, fingerprint, basePath(req), instance, limits)
	}

	id := h.newID()
	reservation := reservation.Reservation{
		Scope: scope, Key: key, Fingerprint: fingerprint, ResourceID: id, Request: canonical,
		Attributes: ledger.RecordAttributes(tr.SourceAccountID, tr.DestinationAccountID, tr.Amount, tr.Currency),
	}
	pref := waitPref{d: wait, on: waiting}
	if h.cfg.EnforceOwnership {
		return h.reserveOwned(ctx, reservation, tr.SourceAccountID, basePath(req), instance, pref)
	}
	rec, created, err := h.records.Reserve(ctx, reservation)
	if err != nil {
		h.log.ErrorContext(ctx, "reserve failed", "transferId", id, "recordKey", idempotency.RecordKey(scope, key), "error", err)
		return problemResponse(problemFor(err), instance, nil)
	}
	if created {
		h.count(ctx, metrics.Reserved)
		return h.waited(ctx, rec, basePath(req), false, pref, h.start(ctx, rec, basePath(req), false))
	}
	return h.existing(ctx, rec, fingerprint, basePath(req), instance, pref)
}

// existing answers a request whose key already has a record: 422 if the
// record holds another request, else the record's answer.
func (h *Handler) existing(ctx context.Context, rec reservation.Record, fingerprint, base, instance string, pref waitPref) events.APIGatewayProxyResponse {
	if err := rec.Matches(fingerprint); err != nil {
		h.log.InfoContext(ctx, "idempotency key reused with another request", "transferId", rec.ResourceID, "recordKey", rec.Key)
		h.count(ctx, metrics.KeyReused)
		return problemResponse(problemFor(err), instance, nil)
	}
	return h.waited(ctx, rec, base, true, pref, h.replay(ctx, rec, base))
}

// overLimits answers a request that is valid but over today's limits.
// Limits apply to new keys only: if the key already holds this request
// (accepted before an operator lowered a limit), the replay gets its
// stored answer. That costs one strongly consistent GetItem, on this path
// only; nothing is written.
func (h *Handler) overLimits(ctx context.Context, scope, key, fingerprint, base, instance string, lerr error) events.APIGatewayProxyResponse {
	recordKey := idempotency.RecordKey(scope, key)
	rec, err := h.records.GetByRecordKey(ctx, recordKey)
	switch {
	case errors.Is(err, idempotency.ErrNotFound):
	case err != nil:
		h.log.ErrorContext(ctx, "read record of a request over the limits", "recordKey", recordKey, "error", err)
		return problemResponse(problemFor(err), instance, nil)
	case rec.Matches(fingerprint) == nil && !rec.Reusable(time.Now()):
		return h.replay(ctx, rec, base)
	}
	return problemResponse(problemFor(lerr), instance, nil)
}

// replay answers a duplicate from the record its reservation returned.
func (h *Handler) replay(ctx context.Context, rec reservation.Record, base string) events.APIGatewayProxyResponse {
	h.count(ctx, metrics.Replayed)
	if rec.Status == reservation.StatusReserved {
		// The first request may have died between its two calls: starting
		// again with the stored name and input is safe.
		h.count(ctx, metrics.StartRetried)
		return h.start(ctx, rec, base, true)
	}
	return h.answer(rec, base, true)
}

// count publishes one event of an orchestrator metric: a log line, no
// remote call.
func (h *Handler) count(ctx context.Context, name string) {
	metrics.Incr(ctx, h.log, name, metrics.Service(metrics.ServiceOrchestrator))
}

// start starts (or finds running) the execution of rec's transfer.
func (h *Handler) start(ctx context.Context, rec reservation.Record, base string, replayed bool) events.APIGatewayProxyResponse {
	input, err := transfer.NewWorkflowInput(rec)
	if err != nil {
		return problemResponse(problemFor(fmt.Errorf("%w: %v", transfer.ErrCorruptRecord, err)), base+"/transfers", nil)
	}
	_, err = h.executions.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.cfg.StateMachineArn),
		Name:            aws.String(transfer.ExecutionName(rec.ResourceID, rec.Attempt)),
		Input:           aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	switch {
	case err == nil:
	case errors.As(err, &exists):
		// The execution has closed: its outcome is in the record.
		fresh, gerr := h.records.GetByRecordKey(ctx, rec.Key)
		if gerr != nil {
			h.log.ErrorContext(ctx, "read record after closed execution", "transferId", rec.ResourceID, "recordKey", rec.Key, "error", gerr)
			return problemResponse(problemFor(gerr), base+"/transfers", nil)
		}
		return h.answer(fresh, base, true)
	default:
		// The record stays RESERVED: the client's retry or the sweeper
		// starts the execution.
		h.log.ErrorContext(ctx, "start execution failed", "transferId", rec.ResourceID, "recordKey", rec.Key, "error", err)
		return problemResponse(problemFor(err), base+"/transfers", nil)
	}
	return h.answer(rec, base, replayed)
}

// answer renders a transfer by its record's state: 202 while pending, 200
// when completed, 422 with the stored problem when failed.
func (h *Handler) answer(rec reservation.Record, base string, replayed bool) events.APIGatewayProxyResponse {
	t, err := transfer.FromRecord(rec)
	if err != nil {
		return problemResponse(problemFor(err), base+"/transfers/"+rec.ResourceID, nil)
	}
	t = present(t)
	location := base + "/transfers/" + rec.ResourceID
	headers := map[string]string{"Location": location}
	if replayed {
		headers[HeaderReplayed] = "true"
	}
	switch t.Status {
	case transfer.StatusCompleted:
		return jsonResponse(http.StatusOK, t, headers)
	case transfer.StatusFailed:
		return problemResponse(failureProblem(t), location, headers)
	}
	return jsonResponse(http.StatusAccepted, t, headers)
}

func (h *Handler) getTransfer(ctx context.Context, scope string, req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	id := req.PathParameters["transferId"]
	if len(id) == 0 || len(id) > maxTransferIDLength {
		// Transfer ids are execution names: at most 80 characters.
		return problemResponse(problemFor(errNotFound), req.Path, nil)
	}
	rec, err := h.records.FindByResourceID(ctx, scope, id)
	if err != nil {
		if !errors.Is(err, idempotency.ErrNotFound) {
			h.log.ErrorContext(ctx, "find transfer failed", "transferId", id, "error", err)
		}
		return problemResponse(problemFor(err), req.Path, nil)
	}
	t, err := transfer.FromRecord(rec)
	if err != nil {
		return problemResponse(problemFor(err), req.Path, nil)
	}
	return jsonResponse(http.StatusOK, present(t), nil)
}
