package idempotency

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrPreconditionFailed reports that a condition an acquisition required
// did not hold: nothing was stored. The error is a *PreconditionError
// naming the condition.
var ErrPreconditionFailed = errors.New("a condition of the acquisition failed")

// PreconditionError reports which of an acquisition's required conditions
// failed. It matches ErrPreconditionFailed with errors.Is.
type PreconditionError struct {
	// Index is the failed condition's position in the list of required
	// conditions.
	Index int
	// Item is the checked item as it was, when the condition asked for it
	// (ReturnValuesOnConditionCheckFailure = ALL_OLD) and it exists.
	Item map[string]types.AttributeValue
}

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("%v: condition %d", ErrPreconditionFailed, e.Index)
}

// Unwrap makes the error match ErrPreconditionFailed.
func (e *PreconditionError) Unwrap() error { return ErrPreconditionFailed }

// Cancellation reason codes of TransactWriteItems.
const (
	codeNone                   = "None"
	codeConditionalCheckFailed = "ConditionalCheckFailed"
)

// reasonCode is a cancellation reason's code, "None" when it has none.
func reasonCode(r types.CancellationReason) string {
	if c := aws.ToString(r.Code); c != "" {
		return c
	}
	return codeNone
}

// cancellationReasons are the reasons DynamoDB gave, one per item in
// order, for cancelling a TransactWriteItems of n items that failed with
// err; an error wrapping err when err is no cancellation, or its reasons
// are not one per item.
func cancellationReasons(err error, n int) ([]types.CancellationReason, error) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, err
	}
	if len(tce.CancellationReasons) != n {
		return nil, fmt.Errorf("%d cancellation reasons for %d items: %w", len(tce.CancellationReasons), n, err)
	}
	return tce.CancellationReasons, nil
}
