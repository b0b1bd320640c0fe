package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of an Entry record besides AttrKey, AttrFormat,
// AttrStatus, AttrFingerprint and AttrExpiresAt (the Time to Live
// attribute), which it shares with a Store's records.
const (
	AttrLeaseID    = "leaseId"
	AttrLeaseCount = "leaseCount"
	// AttrLeaseUntil is epoch milliseconds.
	AttrLeaseUntil = "leaseUntil"
	AttrOutput     = "output"
	AttrFailure    = "failure"
)

// PersistenceAPI is the part of the DynamoDB client DynamoDBPersistence
// uses.
type PersistenceAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ PersistenceAPI = (*dynamodb.Client)(nil)

// DynamoDBPersistence is the Persistence of Do over one DynamoDB table
// whose partition key is AttrKey ("pk", a string): a table of
// TableInput's schema serves, and may hold a Store's records too. Its
// records carry no scope and no creation time, so they are in none of the
// table's indexes. Every operation is one UpdateItem or GetItem.
type DynamoDBPersistence struct {
	client PersistenceAPI
	table  string
}

var _ Persistence = (*DynamoDBPersistence)(nil)

// NewDynamoDBPersistence returns the Persistence over table.
func NewDynamoDBPersistence(client PersistenceAPI, table string) *DynamoDBPersistence {
	return &DynamoDBPersistence{client: client, table: table}
}

// entryItem is an Entry as the table holds it.
type entryItem struct {
	Key         string `dynamodbav:"pk"`
	Format      string `dynamodbav:"format"`
	Status      string `dynamodbav:"status"`
	Fingerprint string `dynamodbav:"fingerprint"`
	LeaseID     string `dynamodbav:"leaseId"`
	LeaseCount  int64  `dynamodbav:"leaseCount"`
	LeaseUntil  int64  `dynamodbav:"leaseUntil"`
	ExpiresAt   int64  `dynamodbav:"expiresAt,omitempty"`
	Output      []byte `dynamodbav:"output,omitempty"`
	Failure     string `dynamodbav:"failure,omitempty"`
}

// decodeEntry reads an item, refusing one of another format by name.
func decodeEntry(item map[string]types.AttributeValue) (Entry, error) {
	format := ""
	if f, ok := item[AttrFormat].(*types.AttributeValueMemberS); ok {
		format = f.Value
	}
	if format != EntryFormat {
		return Entry{}, &FormatError{Format: format}
	}
	var it entryItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return Entry{}, fmt.Errorf("decode: %w", err)
	}
	e := Entry{
		RecordKey:   it.Key,
		Status:      EntryStatus(it.Status),
		Fingerprint: it.Fingerprint,
		LeaseID:     it.LeaseID,
		LeaseCount:  it.LeaseCount,
		Output:      it.Output,
		Failure:     it.Failure,
	}
	if it.LeaseUntil != 0 {
		e.LeaseUntil = time.UnixMilli(it.LeaseUntil).UTC()
	}
	if it.ExpiresAt != 0 {
		e.ExpiresAt = time.Unix(it.ExpiresAt, 0).UTC()
	}
	return e, nil
}

// NewLeaseID returns a random lease id: 16 bytes, hex.
func NewLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func keyOf(recordKey string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrKey: &types.AttributeValueMemberS{Value: recordKey}}
}

// Acquire is one conditional UpdateItem: it writes a fresh lease when the
// record is missing or Free (the same rule as a condition expression),
// incrementing the lease counter; when the condition fails, the record is
// returned from the same call (ReturnValuesOnConditionCheckFailure =
// ALL_OLD).
func (p *DynamoDBPersistence) Acquire(ctx context.Context, in AcquireInput) (Entry, bool, error) {
	if err := ValidateKey(in.Key); err != nil {
		return Entry{}, false, err
	}
	rk := RecordKey(in.Scope, in.Key)
	status, fp, format := expression.Name(AttrStatus), expression.Name(AttrFingerprint), expression.Name(AttrFormat)
	until, expires := expression.Name(AttrLeaseUntil), expression.Name(AttrExpiresAt)
	free := expression.AttributeNotExists(expression.Name(AttrKey)).Or(
		format.Equal(expression.Value(EntryFormat)).And(expression.Or(
			status.Equal(expression.Value(EntryReleased)),
			status.Equal(expression.Value(EntryInProgress)).And(fp.Equal(expression.Value(in.Fingerprint)), until.LessThanEqual(expression.Value(in.Now.UnixMilli()))),
			status.In(expression.Value(EntryCompleted), expression.Value(EntryFailed)).And(expires.LessThanEqual(expression.Value(in.Now.Unix()))),
		)))
	count := expression.Name(AttrLeaseCount)
	update := expression.Set(format, expression.Value(EntryFormat)).
		Set(status, expression.Value(EntryInProgress)).
		Set(fp, expression.Value(in.Fingerprint)).
		Set(expression.Name(AttrLeaseID), expression.Value(NewLeaseID())).
		Set(count, expression.Plus(expression.IfNotExists(count, expression.Value(0)), expression.Value(1))).
		Set(until, expression.Value(in.LeaseUntil.UnixMilli())).
		Set(expires, expression.Value(in.ExpiresAt.Unix())).
		Remove(expression.Name(AttrOutput)).
		Remove(expression.Name(AttrFailure))
	expr, err := expression.NewBuilder().WithCondition(free).WithUpdate(update).Build()
	if err != nil {
		return Entry{}, false, fmt.Errorf("acquire %s: %w", rk, err)
	}
	item, acquired, err := updateReturning(ctx, p.client, p.table, rk, expr)
	if err != nil {
		return Entry{}, false, fmt.Errorf("acquire %s: %w", rk, err)
	}
	if len(item) == 0 {
		if acquired {
			return Entry{}, false, fmt.Errorf("acquire %s: the service returned no attributes", rk)
		}
		// The condition failed on a record the service did not return:
		// read it rather than guess.
		e, gerr := p.Get(ctx, in.Scope, in.Key)
		if gerr != nil {
			return Entry{}, false, fmt.Errorf("acquire %s: read existing: %w", rk, gerr)
		}
		return e, false, nil
	}
	e, err := decodeEntry(item)
	if err != nil {
		return Entry{}, false, fmt.Errorf("acquire %s: %w", rk, err)
	}
	return e, acquired, nil
}

// fenced is the condition that the record is IN_PROGRESS under lease.
func fenced(lease Lease) expression.ConditionBuilder {
	return expression.And(
		expression.Name(AttrFormat).Equal(expression.Value(EntryFormat)),
		expression.Name(AttrStatus).Equal(expression.Value(EntryInProgress)),
		expression.Name(AttrLeaseID).Equal(expression.Value(lease.ID)),
		expression.Name(AttrLeaseCount).Equal(expression.Value(lease.Count)),
	)
}

// Settle is one UpdateItem conditioned on the lease.
func (p *DynamoDBPersistence) Settle(ctx context.Context, lease Lease, o Outcome) error {
	update := expression.Set(expression.Name(AttrStatus), expression.Value(o.Status)).
		Set(expression.Name(AttrExpiresAt), expression.Value(o.ExpiresAt.Unix()))
	switch o.Status {
	case EntryCompleted:
		update = update.Set(expression.Name(AttrOutput), expression.Value(&types.AttributeValueMemberB{Value: nonNil(o.Output)}))
	case EntryFailed:
		update = update.Set(expression.Name(AttrFailure), expression.Value(o.Failure))
	default:
		return fmt.Errorf("settle %s: status %q is not COMPLETED or FAILED", lease.RecordKey, o.Status)
	}
	return p.fencedUpdate(ctx, "settle", lease, update)
}

// nonNil keeps an empty output a (non-null) binary attribute: DynamoDB
// accepts an empty binary value, not a missing one.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Release is one UpdateItem conditioned on the lease. The record stays,
// with its lease counter.
func (p *DynamoDBPersistence) Release(ctx context.Context, lease Lease) error {
	update := expression.Set(expression.Name(AttrStatus), expression.Value(EntryReleased))
	return p.fencedUpdate(ctx, "release", lease, update)
}

func (p *DynamoDBPersistence) fencedUpdate(ctx context.Context, op string, lease Lease, update expression.UpdateBuilder) error {
	expr, err := expression.NewBuilder().WithCondition(fenced(lease)).WithUpdate(update).Build()
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, lease.RecordKey, err)
	}
	_, err = p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       keyOf(lease.RecordKey),
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return fmt.Errorf("%s %s (lease %d): %w", op, lease.RecordKey, lease.Count, ErrFenced)
	default:
		return fmt.Errorf("%s %s: %w", op, lease.RecordKey, err)
	}
}

// Get reads the record with a strongly consistent GetItem.
func (p *DynamoDBPersistence) Get(ctx context.Context, scope, key string) (Entry, error) {
	rk := RecordKey(scope, key)
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(p.table),
		Key:            keyOf(rk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Entry{}, fmt.Errorf("get %s: %w", rk, err)
	}
	if len(out.Item) == 0 {
		return Entry{}, ErrNotFound
	}
	e, err := decodeEntry(out.Item)
	if err != nil {
		return Entry{}, fmt.Errorf("get %s: %w", rk, err)
	}
	return e, nil
}
