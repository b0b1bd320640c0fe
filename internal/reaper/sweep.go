package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// pendingOrder is the order in which the sweep reads the Pending index:
// transfers a reaper already fenced first (their money may be held by a
// debit), then those that started, then those that never did.
var pendingOrder = []reservation.Status{
	reservation.StatusReconciling,
	reservation.StatusInProgress,
	reservation.StatusReserved,
}

// deadlineMargin is the time a sweep leaves before the invocation's
// deadline: it settles no further transfer after that, so it can report
// what remains instead of being cut off.
const deadlineMargin = 5 * time.Second

// maxPageSize bounds the records one Query of the Pending index returns.
const maxPageSize = 1000

// maxCountPages bounds the pages read to count the records a sweep leaves
// behind.
const maxCountPages = 10

// SweepResult summarises a sweep.
type SweepResult struct {
	// Found is the number of stuck records taken from the index (at most
	// Config.SweepLimit).
	Found int
	// Reconciling is the number of those records that were RECONCILING: a
	// reaper fenced them and did not finish settling them.
	Reconciling int
	// Outcomes counts the decisions on the records settled without error.
	Outcomes map[Outcome]int
	// Errors is the number of records whose settling failed. Each was
	// deferred: its next sweep waits StuckAfter doubled per failure.
	Errors int
	// NeedsAttention counts the records that failed this sweep and have
	// now failed Config.AttentionAfter sweeps or more; they carry
	// needsAttention = true for an operator.
	NeedsAttention int
	// Remaining is the number of stuck records left for later sweeps:
	// beyond the limit, or not reached before the deadline. The index is
	// eventually consistent, so it is an estimate; with RemainingAtLeast
	// it is a lower bound (counting stopped early).
	Remaining        int
	RemainingAtLeast bool
}

// pendingRef is a record found in the Pending index.
type pendingRef struct {
	Key           string `dynamodbav:"pk"`
	ResourceID    string `dynamodbav:"resourceId"`
	Pending       string `dynamodbav:"pending"`
	SweepAt       string `dynamodbav:"sweepAt"`
	SweepAttempts int    `dynamodbav:"sweepAttempts"`
}

// Attributes the sweep keeps on a record it failed to settle.
const (
	attrSweepAttempts  = "sweepAttempts"
	attrLastSweepError = "lastSweepError"
	attrNeedsAttention = "needsAttention"
)

// maxErrorBytes bounds the error text stored on a record.
const maxErrorBytes = 1000

// Sweep settles records that are still RESERVED, IN_PROGRESS or
// RECONCILING Config.StuckAfter after their sweepAt (their creation, or
// their last resume), oldest first within each status, at most
// Config.SweepLimit of them, each status with its own share. A transfer
// that cannot be settled does not stop the sweep: it is deferred (its
// sweepAt moves forward, with exponential backoff, so no sweep reads it
// before it is due), flagged for an operator once it has failed
// Config.AttentionAfter times, and the errors are joined and returned at
// the end.
func (r *Reaper) Sweep(ctx context.Context) (SweepResult, error) {
	res := SweepResult{Outcomes: map[Outcome]int{}}
	now := r.cfg.Now().UTC()
	cutoff := now.Add(-r.cfg.StuckAfter).Format(reservation.TimeFormat)

	refs, rest, err := r.findStuck(ctx, cutoff)
	if err != nil {
		return res, fmt.Errorf("sweep: %w", err)
	}
	res.Found = len(refs)
	for _, ref := range refs {
		if ref.Pending == string(reservation.StatusReconciling) {
			res.Reconciling++
		}
	}

	var errs []error
	for i, ref := range refs {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < deadlineMargin {
			res.Remaining += len(refs) - i
			r.log.WarnContext(ctx, "sweep stopped before the invocation deadline", "unsettled", len(refs)-i)
			break
		}
		outcome, err := r.Settle(ctx, ref.Key, ref.ResourceID)
		if err != nil {
			res.Errors++
			errs = append(errs, err)
			attention, derr := r.deferRecord(ctx, ref, now, err)
			if derr != nil {
				errs = append(errs, derr)
			}
			if attention {
				res.NeedsAttention++
			}
			continue
		}
		res.Outcomes[outcome]++
	}

	for _, pos := range rest {
		n, complete, err := r.countStuck(ctx, cutoff, pos)
		if err != nil {
			errs = append(errs, fmt.Errorf("count remaining: %w", err))
		}
		res.Remaining += n
		res.RemainingAtLeast = res.RemainingAtLeast || !complete
	}

	attrs := []any{"found", res.Found, "reconciling", res.Reconciling, "errors", res.Errors, "needsAttention", res.NeedsAttention,
		"remaining", res.Remaining, "remainingAtLeast", res.RemainingAtLeast, "stuckBefore", cutoff}
	for o, n := range res.Outcomes {
		attrs = append(attrs, string(o), n)
	}
	r.log.InfoContext(ctx, "sweep finished", attrs...)
	settledCount := 0
	for _, n := range res.Outcomes {
		settledCount += n
	}
	metrics.Emit(ctx, r.log, "sweep metrics", []slog.Attr{metrics.Service(metrics.ServiceReaper)},
		metrics.Metric{Name: "SweepFound", Value: float64(res.Found)},
		metrics.Metric{Name: metrics.Reconciling, Value: float64(res.Reconciling)},
		metrics.Metric{Name: metrics.Swept, Value: float64(settledCount)},
		metrics.Metric{Name: "SweepFailed", Value: float64(res.Errors)},
		metrics.Metric{Name: "NeedsAttention", Value: float64(res.NeedsAttention)},
		metrics.Metric{Name: "SweepRemaining", Value: float64(res.Remaining)},
	)
	if len(errs) > 0 {
		return res, fmt.Errorf("sweep: %d of %d transfers not settled: %w", res.Errors, res.Found, errors.Join(errs...))
	}
	return res, nil
}

// deferRecord records a failed sweep of ref on its record: one more
// attempt, the time before which no sweep takes it again (StuckAfter
// doubled per failure, at most MaxBackoff: its sweepAt moves to that time
// less StuckAfter, so the index's order is the order in which records
// fall due), the error, and needsAttention once it has failed
// AttentionAfter times. A record that left the Pending
// index meanwhile (settled by someone else) is left alone. attention
// reports a record now flagged.
func (r *Reaper) deferRecord(ctx context.Context, ref pendingRef, now time.Time, cause error) (attention bool, err error) {
	attempts := ref.SweepAttempts + 1
	backoff := r.cfg.StuckAfter
	for i := 1; i < attempts && backoff < r.cfg.MaxBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, r.cfg.MaxBackoff)
	msg := cause.Error()
	if len(msg) > maxErrorBytes {
		msg = msg[:maxErrorBytes]
	}
	attention = attempts >= r.cfg.AttentionAfter
	cond := expression.Name(reservation.AttrResourceID).Equal(expression.Value(ref.ResourceID)).
		And(expression.AttributeExists(expression.Name(reservation.AttrPending)))
	update := expression.Set(expression.Name(attrSweepAttempts), expression.Value(attempts)).
		Set(expression.Name(reservation.AttrSweepAt), expression.Value(now.Add(backoff-r.cfg.StuckAfter).Format(reservation.TimeFormat))).
		Set(expression.Name(attrLastSweepError), expression.Value(msg))
	if attention {
		update = update.Set(expression.Name(attrNeedsAttention), expression.Value(true))
	}
	ok, err := r.update(ctx, ref.Key, cond, update, "defer the record")
	if err != nil || !ok {
		return false, err
	}
	level := slog.LevelWarn
	if attention {
		level = slog.LevelError
	}
	r.log.Log(ctx, level, "transfer deferred to a later sweep", "transferId", ref.ResourceID, "recordKey", ref.Key,
		"sweepAttempts", attempts, "nextSweepIn", backoff.String(), "needsAttention", attention)
	return attention, nil
}

// position is where a read of the Pending index stopped: the status
// partition (index into pendingOrder) and the key to continue from (nil:
// the partition's start).
type position struct {
	partition int
	start     map[string]types.AttributeValue
}

// findStuck reads up to SweepLimit stuck records. Deferred records are
// not due (their sweepAt is later), so they are never read.
// Each status first gets an equal share of what the statuses before it
// left (rounded up), so records of one status cannot starve another; what
// the shares leave unused goes to the statuses with records left, in
// order. rest are the places where a read stopped with records possibly
// left.
func (r *Reaper) findStuck(ctx context.Context, cutoff string) (refs []pendingRef, rest []position, err error) {
	limit := r.cfg.SweepLimit
	var open []position
	for p := range pendingOrder {
		left := len(pendingOrder) - p
		share := (limit - len(refs) + left - 1) / left
		got, next, err := r.readStuck(ctx, position{partition: p}, share, cutoff)
		if err != nil {
			return nil, nil, err
		}
		refs = append(refs, got...)
		if next != nil {
			open = append(open, *next)
		}
	}
	for _, pos := range open {
		if len(refs) == limit {
			rest = append(rest, pos)
			continue
		}
		got, next, err := r.readStuck(ctx, pos, limit-len(refs), cutoff)
		if err != nil {
			return nil, nil, err
		}
		refs = append(refs, got...)
		if next != nil {
			rest = append(rest, *next)
		}
	}
	return refs, rest, nil
}

// readStuck reads up to want stuck records of pos's status from pos on.
// next is where it stopped with records possibly left; nil when the status
// has none left.
func (r *Reaper) readStuck(ctx context.Context, pos position, want int, cutoff string) (refs []pendingRef, next *position, err error) {
	start := pos.start
	for len(refs) < want {
		in, err := r.pendingQuery(pendingOrder[pos.partition], cutoff, start)
		if err != nil {
			return nil, nil, err
		}
		in.Limit = aws.Int32(int32(min(want-len(refs), maxPageSize)))
		out, err := r.db.Query(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("query %s records: %w", pendingOrder[pos.partition], err)
		}
		for _, item := range out.Items {
			var ref pendingRef
			if err := attributevalue.UnmarshalMap(item, &ref); err != nil {
				return nil, nil, fmt.Errorf("decode %s record: %w", pendingOrder[pos.partition], err)
			}
			refs = append(refs, ref)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return refs, nil, nil
		}
		start = out.LastEvaluatedKey
	}
	return refs, &position{partition: pos.partition, start: start}, nil
}

// countStuck counts the stuck records of pos's status from pos on, reading
// at most maxCountPages pages; complete is false when it stopped early.
func (r *Reaper) countStuck(ctx context.Context, cutoff string, pos position) (n int, complete bool, err error) {
	start := pos.start
	for pages := 0; ; pages++ {
		if pages == maxCountPages {
			return n, false, nil
		}
		in, err := r.pendingQuery(pendingOrder[pos.partition], cutoff, start)
		if err != nil {
			return n, false, err
		}
		in.Select = types.SelectCount
		out, err := r.db.Query(ctx, in)
		if err != nil {
			return n, false, fmt.Errorf("count %s records: %w", pendingOrder[pos.partition], err)
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, true, nil
		}
		start = out.LastEvaluatedKey
	}
}

// pendingQuery queries the Pending index for records of status whose
// sweepAt is before cutoff, oldest first, from start.
func (r *Reaper) pendingQuery(status reservation.Status, cutoff string, start map[string]types.AttributeValue) (*dynamodb.QueryInput, error) {
	keyCond := expression.Key(reservation.AttrPending).Equal(expression.Value(string(status))).
		And(expression.Key(reservation.AttrSweepAt).LessThan(expression.Value(cutoff)))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, fmt.Errorf("build %s query: %w", status, err)
	}
	return &dynamodb.QueryInput{
		TableName:                 aws.String(r.cfg.IdempotencyTable),
		IndexName:                 aws.String(reservation.IndexPending),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ExclusiveStartKey:         start,
		ScanIndexForward:          aws.Bool(true),
	}, nil
}
