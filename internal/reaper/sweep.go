package reaper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
)

// pendingOrder is the order in which the sweep reads the Pending index:
// transfers a reaper already fenced first (their money may be held by a
// debit), then those that started, then those that never did.
var pendingOrder = []idempotency.Status{
	idempotency.StatusReconciling,
	idempotency.StatusInProgress,
	idempotency.StatusReserved,
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
	// Outcomes counts the decisions on the records settled without error.
	Outcomes map[Outcome]int
	// Errors is the number of records whose settling failed.
	Errors int
	// Remaining is the number of stuck records left for later sweeps:
	// beyond the limit, or not reached before the deadline. The index is
	// eventually consistent, so it is an estimate; with RemainingAtLeast
	// it is a lower bound (counting stopped early).
	Remaining        int
	RemainingAtLeast bool
}

// pendingRef is a record found in the Pending index.
type pendingRef struct {
	Key        string `dynamodbav:"pk"`
	ResourceID string `dynamodbav:"resourceId"`
	Pending    string `dynamodbav:"pending"`
	CreatedAt  string `dynamodbav:"createdAt"`
}

// Sweep settles records created more than Config.StuckAfter ago that are
// still RESERVED, IN_PROGRESS or RECONCILING, oldest first within each
// status, at most Config.SweepLimit of them. A transfer that cannot be
// settled does not stop the sweep: the errors are joined and returned at
// the end, so the schedule's retry (or the next run) tries again.
func (r *Reaper) Sweep(ctx context.Context) (SweepResult, error) {
	res := SweepResult{Outcomes: map[Outcome]int{}}
	cutoff := r.cfg.Now().Add(-r.cfg.StuckAfter).UTC().Format(idempotency.TimeFormat)

	refs, rest, err := r.findStuck(ctx, cutoff)
	if err != nil {
		return res, fmt.Errorf("sweep: %w", err)
	}
	res.Found = len(refs)

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
			continue
		}
		res.Outcomes[outcome]++
	}

	if rest != nil {
		n, complete, err := r.countStuck(ctx, cutoff, *rest)
		if err != nil {
			errs = append(errs, fmt.Errorf("count remaining: %w", err))
		}
		res.Remaining += n
		res.RemainingAtLeast = !complete
	}

	attrs := []any{"found", res.Found, "errors", res.Errors, "remaining", res.Remaining,
		"remainingAtLeast", res.RemainingAtLeast, "stuckBefore", cutoff}
	for o, n := range res.Outcomes {
		attrs = append(attrs, string(o), n)
	}
	r.log.InfoContext(ctx, "sweep finished", attrs...)
	if len(errs) > 0 {
		return res, fmt.Errorf("sweep: %d of %d transfers not settled: %w", res.Errors, res.Found, errors.Join(errs...))
	}
	return res, nil
}

// position is where a read of the Pending index stopped: the status
// partition (index into pendingOrder) and the key to continue from (nil:
// the partition's start).
type position struct {
	partition int
	start     map[string]types.AttributeValue
}

// findStuck reads up to SweepLimit stuck records. rest is where the read
// stopped when the limit was reached with records possibly left; nil when
// every stuck record was read.
func (r *Reaper) findStuck(ctx context.Context, cutoff string) (refs []pendingRef, rest *position, err error) {
	limit := r.cfg.SweepLimit
	for p := range pendingOrder {
		var start map[string]types.AttributeValue
		for {
			if len(refs) == limit {
				return refs, &position{partition: p, start: start}, nil
			}
			in, err := r.pendingQuery(pendingOrder[p], cutoff, start)
			if err != nil {
				return nil, nil, err
			}
			in.Limit = aws.Int32(int32(min(limit-len(refs), maxPageSize)))
			out, err := r.db.Query(ctx, in)
			if err != nil {
				return nil, nil, fmt.Errorf("query %s records: %w", pendingOrder[p], err)
			}
			for _, item := range out.Items {
				var ref pendingRef
				if err := attributevalue.UnmarshalMap(item, &ref); err != nil {
					return nil, nil, fmt.Errorf("decode %s record: %w", pendingOrder[p], err)
				}
				refs = append(refs, ref)
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			start = out.LastEvaluatedKey
		}
	}
	return refs, nil, nil
}

// countStuck counts the stuck records from pos on, reading at most
// maxCountPages pages; complete is false when it stopped early.
func (r *Reaper) countStuck(ctx context.Context, cutoff string, pos position) (n int, complete bool, err error) {
	pages := 0
	start := pos.start
	for p := pos.partition; p < len(pendingOrder); p++ {
		for {
			if pages == maxCountPages {
				return n, false, nil
			}
			in, err := r.pendingQuery(pendingOrder[p], cutoff, start)
			if err != nil {
				return n, false, err
			}
			in.Select = types.SelectCount
			out, err := r.db.Query(ctx, in)
			if err != nil {
				return n, false, fmt.Errorf("count %s records: %w", pendingOrder[p], err)
			}
			pages++
			n += int(out.Count)
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			start = out.LastEvaluatedKey
		}
		start = nil
	}
	return n, true, nil
}

// pendingQuery queries the Pending index for records of status created
// before cutoff, oldest first, from start.
func (r *Reaper) pendingQuery(status idempotency.Status, cutoff string, start map[string]types.AttributeValue) (*dynamodb.QueryInput, error) {
	keyCond := expression.Key(idempotency.AttrPending).Equal(expression.Value(string(status))).
		And(expression.Key(idempotency.AttrCreatedAt).LessThan(expression.Value(cutoff)))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, fmt.Errorf("build %s query: %w", status, err)
	}
	return &dynamodb.QueryInput{
		TableName:                 aws.String(r.cfg.IdempotencyTable),
		IndexName:                 aws.String(idempotency.IndexPending),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ExclusiveStartKey:         start,
		ScanIndexForward:          aws.Bool(true),
	}, nil
}
