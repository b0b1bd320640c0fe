package reservation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/exactlyonce/transfers/idempotency"
)

// DefaultRetention is how long a key is kept when no retention is set:
// the library's.
const DefaultRetention = idempotency.DefaultRetention

// The library's errors: a key presented again with another request, and
// no record.
var (
	ErrKeyReused = idempotency.ErrKeyReused
	ErrNotFound  = idempotency.ErrNotFound
)

// ErrPreconditionFailed reports that a condition a reservation required
// (Reservation.Require) did not hold: nothing was reserved. The error is
// the library's *idempotency.PreconditionError naming the condition.
var ErrPreconditionFailed = idempotency.ErrPreconditionFailed

// API is the part of the DynamoDB client the store uses.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store keeps idempotency records in one DynamoDB table.
type Store struct {
	client    API
	table     string
	retention time.Duration
	now       func() time.Time
	// free is Reserve's condition, built once.
	free reserveCondition
}

// reserveCondition is the condition of a reservation: the key is free, or
// its record is settled and expired. It is built once; of its values only
// the expiry bound (now) changes from call to call.
type reserveCondition struct {
	expr   expression.Expression
	nowKey string
	err    error
}

// expiryMarker stands for the expiry bound while the condition is built:
// no clock reads it.
const expiryMarker = "-1"

func newReserveCondition() reserveCondition {
	free := expression.AttributeNotExists(expression.Name(AttrKey))
	reusable := expression.Name(AttrStatus).In(expression.Value(StatusCompleted), expression.Value(StatusFailed)).
		And(expression.Name(AttrExpiresAt).LessThanEqual(expression.Value(&types.AttributeValueMemberN{Value: expiryMarker})))
	expr, err := expression.NewBuilder().WithCondition(free.Or(reusable)).Build()
	if err != nil {
		return reserveCondition{err: err}
	}
	for k, v := range expr.Values() {
		if n, ok := v.(*types.AttributeValueMemberN); ok && n.Value == expiryMarker {
			return reserveCondition{expr: expr, nowKey: k}
		}
	}
	return reserveCondition{err: errors.New("reserve condition: the expiry bound is missing from the built values")}
}

// values are the condition's values with now as the expiry bound: a new
// map per call, as concurrent calls share the condition.
func (c reserveCondition) values(now time.Time) map[string]types.AttributeValue {
	v := maps.Clone(c.expr.Values())
	v[c.nowKey] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)}
	return v
}

// Option configures a Store.
type Option func(*Store)

// WithRetention sets how long a key is kept after its record is settled.
// It is stored in each record (RetentionSeconds) when the key is reserved.
func WithRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// NewStore returns a store over table.
func NewStore(client API, table string, opts ...Option) *Store {
	s := &Store{client: client, table: table, retention: DefaultRetention, now: time.Now, free: newReserveCondition()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Reservation asks for a key.
type Reservation struct {
	Scope       string
	Key         string
	Fingerprint string
	ResourceID  string
	Request     []byte
	// Attributes are stored as further top-level attributes of the
	// record, for whoever conditions on it later (the operation's own
	// steps, say). Their names must differ from the record's own.
	Attributes map[string]types.AttributeValue
	// Require are conditions on other items that must hold for a new
	// record to be stored, checked in the same write (see Reserve). Each
	// names its table and key; its ReturnValuesOnConditionCheckFailure is
	// passed on.
	Require []types.ConditionCheck
}

// Reserve takes the key with one conditional write, the library's
// idempotency.Claim of the whole record. When the key is free,
// or its record is terminal and past its expiry (a record that is not
// terminal has none), it stores a RESERVED record
// and returns it with created = true. Otherwise it returns the existing
// record, read from the failed write itself (ALL_OLD), with created = false;
// the caller compares fingerprints (see Record.Matches). A record that holds
// this reservation's own ResourceID and fingerprint is its own, written by
// an earlier attempt of the same PutItem whose answer was lost before the
// SDK retried it: created = true.
//
// Without Require the write is one PutItem. More than
// idempotency.MaxTxItems conditions are refused (idempotency.ErrClaim)
// before any call. With Require it is one
// TransactWriteItems: the record's Put, with the same condition, and a
// ConditionCheck per required condition (two write units instead of one
// for the record, plus the checks). A key that is taken is answered with
// its existing record whatever the required conditions say: the record
// already answers the request. Only when the key could be taken and a
// required condition failed is the answer a *idempotency.PreconditionError
// (ErrPreconditionFailed), and nothing is stored.
func (s *Store) Reserve(ctx context.Context, r Reservation) (rec Record, created bool, err error) {
	if err := idempotency.ValidateKey(r.Key); err != nil {
		return Record{}, false, err
	}
	now := s.now().UTC()
	rec = Record{
		Key:         idempotency.RecordKey(r.Scope, r.Key),
		Scope:       r.Scope,
		Status:      StatusReserved,
		Fingerprint: r.Fingerprint,
		ResourceID:  r.ResourceID,
		Request:     string(r.Request),
		CreatedAt:   now.Format(TimeFormat),
		// No ExpiresAt: it is the TTL attribute, set only at settlement.
		RetentionSeconds: int64(s.retention / time.Second),
		Pending:          string(StatusReserved),
	}
	rec.SweepAt = rec.CreatedAt
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return Record{}, false, fmt.Errorf("reserve %s: %w", rec.Key, err)
	}
	for name, v := range r.Attributes {
		if _, taken := item[name]; taken || isRecordAttribute(name) {
			return Record{}, false, fmt.Errorf("reserve %s: attribute %q is the record's own", rec.Key, name)
		}
		item[name] = v
	}
	if s.free.err != nil {
		return Record{}, false, fmt.Errorf("reserve %s: %w", rec.Key, s.free.err)
	}
	claim := idempotency.Claim{
		Table:     s.table,
		Key:       map[string]types.AttributeValue{AttrKey: item[AttrKey]},
		Item:      item,
		Condition: *s.free.expr.Condition(),
		Names:     s.free.expr.Names(),
		Values:    s.free.values(now),
		Require:   r.Require,
	}
	if len(r.Require) > 0 {
		claim.Free = func(item map[string]types.AttributeValue) bool {
			var existing Record
			return attributevalue.UnmarshalMap(item, &existing) == nil && existing.Reusable(now)
		}
	}
	if resourceID, fingerprint := r.ResourceID, r.Fingerprint; resourceID != "" {
		// The record holds this reservation's own resource: an earlier
		// attempt of the same write committed and its answer was lost,
		// and the SDK's retry found the key taken, by this call.
		claim.Own = func(item map[string]types.AttributeValue) bool {
			return stringAttr(item, AttrResourceID) == resourceID && stringAttr(item, AttrFingerprint) == fingerprint
		}
	}
	got, err := claim.Write(ctx, s.client)
	switch {
	case err != nil:
		return Record{}, false, fmt.Errorf("reserve %s: %w", rec.Key, err)
	case !got.Found:
		if !got.OK {
			return Record{}, false, fmt.Errorf("reserve %s: the condition failed on no record", rec.Key)
		}
		return rec, true, nil
	}
	var existing Record
	if err := attributevalue.UnmarshalMap(got.Item, &existing); err != nil {
		return Record{}, false, fmt.Errorf("reserve %s: decode existing: %w", rec.Key, err)
	}
	return existing, got.OK, nil
}

// KeyOf is the table key of the record recordKey (Record.Key).
func KeyOf(recordKey string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrKey: &types.AttributeValueMemberS{Value: recordKey}}
}

// stringAttr is item's string attribute name, "" when it has none.
func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// FailReserved settles a record that is still RESERVED as FAILED with
// response (the final answer, stored as a settled operation's is), at
// once: the operation was refused before it started. One conditional
// UpdateItem, an idempotency.Claim: the record must still be RESERVED
// for resourceID on its first attempt (0), so a record that an operation
// already took (IN_PROGRESS, or settled), or that was resumed (RESERVED
// under a later attempt, whose earlier runs may have done part of the
// work), is left as it is. The record gets its expiry (now plus its retention) and
// leaves the Pending index.
//
// It returns the record as it is afterwards: the settled record with
// settled = true, or, when the condition failed, the record as it was
// (ALL_OLD) with settled = false; idempotency.ErrNotFound when there is none.
func (s *Store) FailReserved(ctx context.Context, recordKey, resourceID, response string) (rec Record, settled bool, err error) {
	now := s.now().UTC()
	cond := expression.Name(AttrStatus).Equal(expression.Value(StatusReserved)).
		And(expression.Name(AttrResourceID).Equal(expression.Value(resourceID))).
		And(AttemptIs(0))
	retention := expression.Name("retentionSeconds")
	update := expression.Set(expression.Name(AttrStatus), expression.Value(StatusFailed)).
		Set(expression.Name(AttrResponse), expression.Value(response)).
		Set(expression.Name("updatedAt"), expression.Value(now.Format(TimeFormat))).
		Set(expression.Name(AttrExpiresAt), expression.Plus(expression.IfNotExists(retention, expression.Value(int64(DefaultRetention/time.Second))), expression.Value(now.Unix()))).
		Remove(expression.Name(AttrPending))
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(update).Build()
	if err != nil {
		return Record{}, false, fmt.Errorf("fail %s: %w", recordKey, err)
	}
	claim := idempotency.Claim{
		Table:     s.table,
		Key:       KeyOf(recordKey),
		Update:    aws.ToString(expr.Update()),
		Condition: aws.ToString(expr.Condition()),
		Names:     expr.Names(),
		Values:    expr.Values(),
	}
	got, err := claim.Write(ctx, s.client)
	switch {
	case err != nil:
		return Record{}, false, fmt.Errorf("fail %s: %w", recordKey, err)
	case got.Item == nil:
		return Record{}, false, fmt.Errorf("fail %s: %w", recordKey, ErrNotFound)
	}
	if err := attributevalue.UnmarshalMap(got.Item, &rec); err != nil {
		return Record{}, false, fmt.Errorf("fail %s: decode: %w", recordKey, err)
	}
	return rec, got.OK, nil
}

// isRecordAttribute reports whether name is an attribute a record may
// carry, set or not.
func isRecordAttribute(name string) bool {
	switch name {
	case AttrKey, AttrScope, AttrStatus, AttrFingerprint, AttrResourceID, "request", AttrCreatedAt,
		AttrExpiresAt, "retentionSeconds", AttrPending, AttrResponse, "executionArn", "updatedAt",
		AttrAttempt, AttrSweepAt, "settleCode", "settleDetail":
		return true
	}
	return false
}

// Matches reports whether fingerprint is the record's: idempotency.ErrKeyReused if not.
func (r Record) Matches(fingerprint string) error {
	if r.Fingerprint != fingerprint {
		return ErrKeyReused
	}
	return nil
}

// Get reads the record of (scope, key) with a strongly consistent read.
func (s *Store) Get(ctx context.Context, scope, key string) (Record, error) {
	return s.GetByRecordKey(ctx, idempotency.RecordKey(scope, key))
}

// GetByRecordKey reads a record by its table key, strongly consistent.
func (s *Store) GetByRecordKey(ctx context.Context, recordKey string) (Record, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            KeyOf(recordKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, fmt.Errorf("get %s: %w", recordKey, err)
	}
	if len(out.Item) == 0 {
		return Record{}, ErrNotFound
	}
	var rec Record
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return Record{}, fmt.Errorf("get %s: decode: %w", recordKey, err)
	}
	return rec, nil
}

// FindByResourceID returns the record that created resourceID within scope.
// A record of another scope is reported as idempotency.ErrNotFound: callers never learn
// of each other's resources. The ByResourceId index is eventually
// consistent, so the record is then read again from the table with a
// strongly consistent read.
func (s *Store) FindByResourceID(ctx context.Context, scope, resourceID string) (Record, error) {
	keyCond := expression.Key(AttrResourceID).Equal(expression.Value(resourceID))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return Record{}, fmt.Errorf("find %s: %w", resourceID, err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexByResourceID),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return Record{}, fmt.Errorf("find %s: %w", resourceID, err)
	}
	for _, item := range out.Items {
		var rec Record
		if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
			return Record{}, fmt.Errorf("find %s: decode: %w", resourceID, err)
		}
		if rec.Scope != scope {
			continue
		}
		fresh, err := s.GetByRecordKey(ctx, rec.Key)
		if err != nil {
			return Record{}, fmt.Errorf("find %s: %w", resourceID, err)
		}
		if fresh.ResourceID != resourceID {
			// The key was reused for a newer operation since.
			return Record{}, ErrNotFound
		}
		return fresh, nil
	}
	return Record{}, ErrNotFound
}
