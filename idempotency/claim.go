package idempotency

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Claim is one conditional write that takes a record for a call, or
// answers with the record that holds its key, in one round trip: the step
// under DynamoDBPersistence's acquisitions, for a store whose records have
// a schema of their own (an application's reservations, say, that name
// the resource a request creates). Write sends it.
//
// Without Require it is one PutItem (Item) or UpdateItem (Update) with
// Condition and ReturnValuesOnConditionCheckFailure = ALL_OLD, so a taken
// key is answered from the failed write itself, with no read. With
// Require it is one TransactWriteItems of that write and a ConditionCheck
// per required condition: the claim and its preconditions commit
// together, or nothing does.
type Claim struct {
	// Table and Key name the record.
	Table string
	Key   map[string]types.AttributeValue
	// Item, for a PutItem, is the whole record, Key's attributes
	// included; Update, for an UpdateItem, is its update expression.
	// Exactly one of them is set.
	Item   map[string]types.AttributeValue
	Update string
	// Condition is when the record may be taken: the key is free, or its
	// record is. Names and Values serve Condition and Update.
	Condition string
	Names     map[string]string
	Values    map[string]types.AttributeValue
	// Require are conditions on other items that must hold for the claim
	// to commit, at most MaxTxItems. Each names its table and key; its
	// ReturnValuesOnConditionCheckFailure is passed on.
	Require []types.ConditionCheck
	// Free reports whether a record found after a required condition
	// failed would have let the claim through (Condition holds for it).
	// DynamoDB does not promise to evaluate every condition of a
	// transaction once one has failed, so a cancelled transaction does not
	// prove the key free: the record is read, and only a free one (or
	// none) makes the answer a *PreconditionError. Required with Require.
	Free func(item map[string]types.AttributeValue) bool
	// Own, when set, reports whether a record found holding the key is
	// this claim's own: an earlier attempt of the same write committed,
	// its answer was lost, and the SDK's retry found the key taken by it
	// (a lease id or a resource id only this claim writes tells). Such a
	// record is claimed.
	Own func(item map[string]types.AttributeValue) bool
}

// Claimed is what a Claim's Write found.
type Claimed struct {
	// OK reports that the claim holds the record: its write committed, or
	// the record found is its own (Claim.Own).
	OK bool
	// Found reports that Item is a record found holding the key, as it
	// was, and not one this write made: always when not OK, and when OK
	// for a record that is Own.
	Found bool
	// Item is the record. When OK: Claim.Item for a PutItem, the record
	// as written (ALL_NEW) for an UpdateItem, the record found for one
	// that is Own, and nil after a TransactWriteItems of an Update (which
	// returns no attributes: read it). When not OK: the record that holds
	// the key, as it was; nil when the condition failed on no record.
	Item map[string]types.AttributeValue
}

// ErrClaim reports a Claim that cannot be sent: neither or both of Item
// and Update, Require without Free, or too many conditions.
var ErrClaim = errors.New("idempotency claim refused")

// PutAPI is the part of the DynamoDB client a Claim of an Item uses
// besides PersistenceAPI.
type PutAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ PutAPI = (*dynamodb.Client)(nil)

// check refuses a claim that cannot be sent.
func (c *Claim) check() error {
	switch {
	case (c.Item == nil) == (c.Update == ""):
		return fmt.Errorf("%w: exactly one of Item and Update must be set", ErrClaim)
	case len(c.Require) > 0 && c.Free == nil:
		return fmt.Errorf("%w: Require needs Free", ErrClaim)
	case len(c.Require) > MaxTxItems:
		return fmt.Errorf("%w: %d required conditions, at most %d", ErrClaim, len(c.Require), MaxTxItems)
	}
	return nil
}

// Write sends the claim: one PutItem, UpdateItem or TransactWriteItems,
// and one strongly consistent GetItem of the record only when the answer
// did not carry it (a failed condition on a record the service did not
// return, or a transaction that a required condition cancelled). A
// PutItem needs a client that implements PutAPI, a transaction one that
// implements TransactAPI (else ErrNotTransactional); any other failure
// of the store is returned wrapped, with nothing decided. A required
// condition that failed while the key was free is a *PreconditionError,
// and nothing is written.
func (c *Claim) Write(ctx context.Context, client PersistenceAPI) (Claimed, error) {
	if err := c.check(); err != nil {
		return Claimed{}, err
	}
	if len(c.Require) > 0 {
		return c.transact(ctx, client)
	}
	var err error
	var item map[string]types.AttributeValue
	if c.Item != nil {
		put, ok := client.(PutAPI)
		if !ok {
			return Claimed{}, fmt.Errorf("claim: the client (%T) has no PutItem", client)
		}
		_, err = put.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(c.Table),
			Item:                                c.Item,
			ConditionExpression:                 aws.String(c.Condition),
			ExpressionAttributeNames:            c.Names,
			ExpressionAttributeValues:           c.Values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		item = c.Item
	} else {
		var out *dynamodb.UpdateItemOutput
		out, err = client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(c.Table),
			Key:                                 c.Key,
			ConditionExpression:                 aws.String(c.Condition),
			UpdateExpression:                    aws.String(c.Update),
			ExpressionAttributeNames:            c.Names,
			ExpressionAttributeValues:           c.Values,
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			item = out.Attributes
		}
	}
	if err == nil {
		return Claimed{OK: true, Item: item}, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Claimed{}, fmt.Errorf("claim: %w", err)
	}
	return c.found(ctx, client, ccf.Item)
}

// found answers a failed condition on the record: the record as it was
// (read when the failure did not carry it), claimed when it is Own.
func (c *Claim) found(ctx context.Context, client PersistenceAPI, item map[string]types.AttributeValue) (Claimed, error) {
	if len(item) == 0 {
		var err error
		if item, err = c.read(ctx, client); err != nil {
			return Claimed{}, err
		}
	}
	return Claimed{OK: item != nil && c.Own != nil && c.Own(item), Found: item != nil, Item: item}, nil
}

// read is a strongly consistent read of the record: nil when there is
// none.
func (c *Claim) read(ctx context.Context, client PersistenceAPI) (map[string]types.AttributeValue, error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.Table), Key: c.Key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("claim: read the record: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// transact is Write's TransactWriteItems: the record's write at index 0,
// the required conditions after it, their cancellation reasons read by
// index.
func (c *Claim) transact(ctx context.Context, client PersistenceAPI) (Claimed, error) {
	tx, ok := client.(TransactAPI)
	if !ok {
		return Claimed{}, fmt.Errorf("claim: the client (%T) has no TransactWriteItems: %w", client, ErrNotTransactional)
	}
	items := make([]types.TransactWriteItem, 0, 1+len(c.Require))
	if c.Item != nil {
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(c.Table),
			Item:                                c.Item,
			ConditionExpression:                 aws.String(c.Condition),
			ExpressionAttributeNames:            c.Names,
			ExpressionAttributeValues:           c.Values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	} else {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                           aws.String(c.Table),
			Key:                                 c.Key,
			ConditionExpression:                 aws.String(c.Condition),
			UpdateExpression:                    aws.String(c.Update),
			ExpressionAttributeNames:            c.Names,
			ExpressionAttributeValues:           c.Values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	for i := range c.Require {
		check := c.Require[i]
		items = append(items, types.TransactWriteItem{ConditionCheck: &check})
	}
	_, err := tx.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return Claimed{OK: true, Item: c.Item}, nil
	}
	reasons, rerr := cancellationReasons(err, len(items))
	if rerr != nil {
		return Claimed{}, fmt.Errorf("claim: %w", rerr)
	}
	// The key is taken: the record answers, whatever the required
	// conditions say.
	if reasonCode(reasons[0]) == codeConditionalCheckFailed {
		return c.found(ctx, client, reasons[0].Item)
	}
	// TransactionConflict, throttling, validation: nothing is decided.
	failed := -1
	for i, reason := range reasons {
		switch code := reasonCode(reason); code {
		case codeNone:
		case codeConditionalCheckFailed:
			if failed < 0 {
				failed = i
			}
		default:
			return Claimed{}, fmt.Errorf("claim: transaction item %d: %s: %w", i, code, err)
		}
	}
	if failed < 1 {
		return Claimed{}, fmt.Errorf("claim: transaction cancelled without a failed condition: %w", err)
	}
	// "None" on the record does not prove the key free: a strongly
	// consistent read settles it before refusing a request that the
	// record may answer. Refusals only, so the other paths keep their
	// single call.
	item, rerr := c.read(ctx, client)
	if rerr != nil {
		return Claimed{}, rerr
	}
	if item != nil && !c.Free(item) {
		return c.found(ctx, client, item)
	}
	return Claimed{}, &PreconditionError{Index: failed - 1, Item: reasons[failed].Item}
}
