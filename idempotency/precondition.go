package idempotency

import (
	"context"
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

// Preconditioner is a Persistence whose acquisitions can require
// conditions on other items (Operation.Require): the record is taken, and
// the conditions checked, in one write, so that the key is taken with
// every condition holding, or nothing is stored. Do finds it with a type
// assertion on Config.Store. DynamoDBPersistence implements it; a store
// of another database cannot check a DynamoDB condition in its own write.
//
// Both methods answer as Acquire and Taker's TakeOver do when the record
// is not theirs to take: the record as it is, acquired = false, whatever
// the conditions say, for the record answers the request (a replay, a key
// in progress or used with another payload). Only when the record could
// have been taken and a condition failed do they fail, with a
// *PreconditionError (ErrPreconditionFailed) naming the first condition
// that failed, having written nothing. Each condition names its table and
// key, and its ReturnValuesOnConditionCheckFailure is passed on. At most
// MaxTxItems conditions are accepted, more fail with ErrTxTooLarge
// before anything is sent; none is Acquire, or TakeOver.
type Preconditioner interface {
	// AcquireRequiring is Acquire, in one write with require.
	AcquireRequiring(ctx context.Context, in AcquireInput, require []types.ConditionCheck) (e Entry, acquired bool, err error)
	// TakeOverRequiring is Taker's TakeOver, in one write with require:
	// ErrNotFound when there is no record, unless a condition failed too
	// (a *PreconditionError). A store that cannot take over fails with
	// ErrTakeOverUnsupported.
	TakeOverRequiring(ctx context.Context, in AcquireInput, held Lease, require []types.ConditionCheck) (e Entry, acquired bool, err error)
}

// ErrPreconditionsUnsupported refuses a call whose Operation has a
// Require when the store does not implement Preconditioner.
var ErrPreconditionsUnsupported = errors.New("idempotency: Operation.Require needs a store that implements Preconditioner")

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
