package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Default attribute names of a DynamoDBPersistence (DefaultAttributes):
// the partition key, the status, the expiry (the table's Time to Live
// attribute) and the payload's fingerprint.
const (
	AttrKey         = "pk"
	AttrStatus      = "status"
	AttrExpiresAt   = "expiresAt"
	AttrFingerprint = "fingerprint"
)

// Attribute names of an Entry record besides those Attributes names: the
// lease's id and counter and a failure's text, always under these names.
// AttrLeaseUntil and AttrOutput are the default names of
// Attributes.InProgressExpiry and Attributes.Data (DefaultAttributes).
const (
	AttrLeaseID    = "leaseId"
	AttrLeaseCount = "leaseCount"
	// AttrLeaseUntil is epoch milliseconds.
	AttrLeaseUntil = "leaseUntil"
	AttrOutput     = "output"
	AttrFailure    = "failure"
)

// PersistenceAPI is the part of the DynamoDB client DynamoDBPersistence
// uses for Persistence's methods.
type PersistenceAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// TransactAPI is the part of the DynamoDB client that SettleWith, Commit,
// AcquireRequiring and TakeOverRequiring use besides PersistenceAPI: a
// client passed to NewDynamoDBPersistence that lacks it serves every
// other method, and those fail.
type TransactAPI interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var (
	_ PersistenceAPI = (*dynamodb.Client)(nil)
	_ TransactAPI    = (*dynamodb.Client)(nil)
)

// Attributes names the table's keys and the attributes of a
// DynamoDBPersistence's records (WithAttributes). Every field but SortKey
// and PartitionValue is required; Validate says what is refused.
type Attributes struct {
	// PartitionKey is the table's partition key, a string: it holds the
	// record key (RecordKey), or PartitionValue when there is a SortKey.
	PartitionKey string
	// SortKey, when set, is the table's sort key, a string: it holds the
	// record key, and PartitionKey holds PartitionValue in every record
	// (Powertools' sort_key_attr).
	SortKey string
	// PartitionValue is the partition key of every record when SortKey is
	// set (Powertools' static_pk_value): when empty, "idempotency#"
	// followed by $AWS_LAMBDA_FUNCTION_NAME as it is at construction, as
	// Powertools does. It is refused without a SortKey.
	PartitionValue string
	// Status holds the EntryStatus.
	Status string
	// Expiry holds ExpiresAt, in epoch seconds: the table's Time to Live
	// attribute.
	Expiry string
	// InProgressExpiry holds LeaseUntil, when the lease expires, in epoch
	// milliseconds.
	InProgressExpiry string
	// Data holds a COMPLETED call's output, a binary value.
	Data string
	// Validation holds the payload's Fingerprint.
	Validation string
}

// DefaultAttributes are the names DynamoDBPersistence uses without
// WithAttributes: the partition key "pk" (as TableInput's), no sort key,
// "status", "expiresAt", "leaseUntil", "output" and "fingerprint".
func DefaultAttributes() Attributes {
	return Attributes{
		PartitionKey:     AttrKey,
		Status:           AttrStatus,
		Expiry:           AttrExpiresAt,
		InProgressExpiry: AttrLeaseUntil,
		Data:             AttrOutput,
		Validation:       AttrFingerprint,
	}
}

// PowertoolsAttributes are the attribute names of Powertools for AWS
// Lambda's DynamoDBPersistenceLayer, with its defaults: the partition key
// "id", "status", "expiration", "in_progress_expiration", "data" and
// "validation". Set SortKey (and PartitionValue) for a table with a sort
// key, as its sort_key_attr (and static_pk_value).
//
// A table made for Powertools then serves as it is, its Time to Live on
// "expiration" included, and the units agree: "expiration" in epoch
// seconds, "in_progress_expiration" in epoch milliseconds. The records do
// not: a Powertools function and Do cannot answer each other's calls. The
// key differs (RecordKey, a hex SHA-256 of the scope and the key, where
// Powertools stores "<function>#<hash of the payload>"), so neither ever
// reads a record of the other, and a record without the format attribute
// is refused with a *FormatError anyway. The states differ (IN_PROGRESS
// and RELEASED and FAILED against Powertools' INPROGRESS and COMPLETED
// only), "data" is binary where Powertools stores a string, "validation"
// holds the SHA-256 Fingerprint where Powertools stores a hash of the part
// of the event it validates, and the records carry attributes Powertools
// has not: AttrFormat, AttrLeaseID, AttrLeaseCount and AttrFailure. A
// released key keeps its record (RELEASED) where Powertools deletes it.
func PowertoolsAttributes() Attributes {
	return Attributes{
		PartitionKey:     "id",
		Status:           "status",
		Expiry:           "expiration",
		InProgressExpiry: "in_progress_expiration",
		Data:             "data",
		Validation:       "validation",
	}
}

// ErrAttributes reports attribute names that DynamoDBPersistence refuses.
// The error is an *AttributeError naming the field.
var ErrAttributes = errors.New("idempotency attribute name refused")

// AttributeError refuses one field of Attributes. It matches
// ErrAttributes with errors.Is.
type AttributeError struct {
	// Field is the field of Attributes: "PartitionKey", "Status"...
	Field string
	// Name is its value.
	Name string
	// Reason says why it is refused.
	Reason string
}

func (e *AttributeError) Error() string {
	return fmt.Sprintf("%v: Attributes.%s %q %s", ErrAttributes, e.Field, e.Name, e.Reason)
}

// Unwrap makes the error match ErrAttributes.
func (e *AttributeError) Unwrap() error { return ErrAttributes }

// maxNameLength is DynamoDB's limit on the name of a key attribute,
// applied to every name.
const maxNameLength = 255

// maxPartitionValue is DynamoDB's limit on a partition key value, in
// bytes.
const maxPartitionValue = 2048

// fixedAttributes are the attributes of a record that Attributes does not
// name, and what each holds.
var fixedAttributes = map[string]string{
	AttrFormat:     "the record's format",
	AttrLeaseID:    "the lease id",
	AttrLeaseCount: "the lease counter",
	AttrFailure:    "a failure's text",
}

// TableInput is the table a DynamoDBPersistence with the names a needs,
// named name, as one CreateTable call creates it (on-demand capacity):
// the partition key a.PartitionKey, a string, and the sort key a.SortKey,
// a string, when there is one; nothing else. Turn on Time to Live with
// a.TimeToLiveInput.
func (a Attributes) TableInput(name string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, k := range []struct {
		name string
		typ  types.KeyType
	}{{a.PartitionKey, types.KeyTypeHash}, {a.SortKey, types.KeyTypeRange}} {
		if k.name == "" {
			continue
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(k.name), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.name), KeyType: k.typ})
	}
	return in
}

// TimeToLiveInput enables Time to Live on the table name with the
// attribute a.Expiry, which a settled or released record carries (epoch
// seconds), so that DynamoDB deletes expired records.
func (a Attributes) TimeToLiveInput(name string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(a.Expiry), Enabled: aws.Bool(true)},
	}
}

// Validate reports the first field of a refused, with an *AttributeError
// (ErrAttributes): a required name that is empty; a name longer than 255
// bytes, not UTF-8, or holding a bracket (an expression would read "[n]"
// as a list index); a name also given to another field, or that is one of
// the attributes with a fixed name (AttrFormat, AttrLeaseID,
// AttrLeaseCount, AttrFailure); a PartitionValue without a SortKey, or
// longer than 2048 bytes.
func (a Attributes) Validate() error {
	fields := []struct {
		field, name string
		optional    bool
	}{
		{"PartitionKey", a.PartitionKey, false},
		{"SortKey", a.SortKey, true},
		{"Status", a.Status, false},
		{"Expiry", a.Expiry, false},
		{"InProgressExpiry", a.InProgressExpiry, false},
		{"Data", a.Data, false},
		{"Validation", a.Validation, false},
	}
	seen := map[string]string{}
	for _, f := range fields {
		refuse := func(reason string) error { return &AttributeError{Field: f.field, Name: f.name, Reason: reason} }
		switch {
		case f.name == "" && f.optional:
			continue
		case f.name == "":
			return refuse("is empty")
		case len(f.name) > maxNameLength:
			return refuse(fmt.Sprintf("is longer than %d bytes", maxNameLength))
		case !utf8.ValidString(f.name):
			return refuse("is not UTF-8")
		case strings.ContainsAny(f.name, "[]"):
			return refuse("holds a bracket, which an expression reads as a list index")
		}
		if what, ok := fixedAttributes[f.name]; ok {
			return refuse("is the attribute of " + what)
		}
		if other, ok := seen[f.name]; ok {
			return refuse("is also Attributes." + other)
		}
		seen[f.name] = f.field
	}
	switch {
	case a.PartitionValue != "" && a.SortKey == "":
		return &AttributeError{Field: "PartitionValue", Name: a.PartitionValue, Reason: "is set without a SortKey"}
	case len(a.PartitionValue) > maxPartitionValue:
		return &AttributeError{Field: "PartitionValue", Name: a.PartitionValue, Reason: fmt.Sprintf("is longer than %d bytes", maxPartitionValue)}
	}
	return nil
}

// DynamoDBOption configures a DynamoDBPersistence.
type DynamoDBOption func(*DynamoDBPersistence)

// WithAttributes names the table's keys and the records' attributes:
// start from DefaultAttributes or PowertoolsAttributes.
func WithAttributes(a Attributes) DynamoDBOption {
	return func(p *DynamoDBPersistence) { p.attrs = a }
}

// DynamoDBPersistence is the Persistence of Do over one DynamoDB table.
// By default (DefaultAttributes) its partition key is AttrKey ("pk", a
// string), as Attributes.TableInput makes it; a table that holds other
// records too serves, as long as none of them is under an Entry's table
// key (a record of another format there is refused with a *FormatError).
// WithAttributes names the keys, a sort key included, and the
// attributes. Every method of Persistence is one
// UpdateItem or GetItem; SettleWith and Commit are one TransactWriteItems;
// AcquireRequiring and TakeOverRequiring one TransactWriteItems, then one
// GetItem when it commits or its cancellation must be read.
type DynamoDBPersistence struct {
	client PersistenceAPI
	table  string
	attrs  Attributes
	// err is why the options were refused: every call fails with it.
	err error
}

var (
	_ Persistence              = (*DynamoDBPersistence)(nil)
	_ TransactionalPersistence = (*DynamoDBPersistence)(nil)
	_ Taker                    = (*DynamoDBPersistence)(nil)
	_ Preconditioner           = (*DynamoDBPersistence)(nil)
)

// NewDynamoDBPersistence returns the Persistence over table with opts.
// Options that Attributes.Validate refuses are kept as the store's Err:
// New refuses a Config with that store, and every call of the store fails
// with that *AttributeError before anything is sent.
func NewDynamoDBPersistence(client PersistenceAPI, table string, opts ...DynamoDBOption) *DynamoDBPersistence {
	p := &DynamoDBPersistence{client: client, table: table, attrs: DefaultAttributes()}
	for _, o := range opts {
		o(p)
	}
	if err := p.attrs.Validate(); err != nil {
		p.err = fmt.Errorf("idempotency: DynamoDB store: %w", err)
		return p
	}
	if p.attrs.SortKey != "" && p.attrs.PartitionValue == "" {
		p.attrs.PartitionValue = "idempotency#" + os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	return p
}

// Err is why NewDynamoDBPersistence refused its options (an
// *AttributeError), nil when it did not.
func (p *DynamoDBPersistence) Err() error { return p.err }

// Attributes are the names p uses, PartitionValue filled in when there is
// a SortKey.
func (p *DynamoDBPersistence) Attributes() Attributes { return p.attrs }

// name is an expression name of a configured attribute: dots are part of
// the name, not a path.
func name(n string) expression.NameBuilder { return expression.NameNoDotSplit(n) }

// decode reads an item, refusing one of another format by name.
func (p *DynamoDBPersistence) decode(item map[string]types.AttributeValue) (Entry, error) {
	format := ""
	if f, ok := item[AttrFormat].(*types.AttributeValueMemberS); ok {
		format = f.Value
	}
	if format != EntryFormat {
		return Entry{}, &FormatError{Format: format}
	}
	a := p.attrs
	keyAttr := a.PartitionKey
	if a.SortKey != "" {
		keyAttr = a.SortKey
	}
	var e Entry
	var leaseUntil, expiresAt int64
	for _, f := range []struct {
		name string
		dst  any
	}{
		{keyAttr, &e.RecordKey},
		{a.Status, &e.Status},
		{a.Validation, &e.Fingerprint},
		{AttrLeaseID, &e.LeaseID},
		{AttrLeaseCount, &e.LeaseCount},
		{a.InProgressExpiry, &leaseUntil},
		{a.Expiry, &expiresAt},
		{a.Data, &e.Output},
		{AttrFailure, &e.Failure},
	} {
		av, ok := item[f.name]
		if !ok {
			continue
		}
		if err := attributevalue.Unmarshal(av, f.dst); err != nil {
			return Entry{}, fmt.Errorf("decode %s: %w", f.name, err)
		}
	}
	if leaseUntil != 0 {
		e.LeaseUntil = time.UnixMilli(leaseUntil).UTC()
	}
	if expiresAt != 0 {
		e.ExpiresAt = time.Unix(expiresAt, 0).UTC()
	}
	return e, nil
}

// NewLeaseID returns a random lease id: 16 bytes, hex.
func NewLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// key is the table key of the record recordKey.
func (p *DynamoDBPersistence) key(recordKey string) map[string]types.AttributeValue {
	if p.attrs.SortKey == "" {
		return map[string]types.AttributeValue{p.attrs.PartitionKey: &types.AttributeValueMemberS{Value: recordKey}}
	}
	return map[string]types.AttributeValue{
		p.attrs.PartitionKey: &types.AttributeValueMemberS{Value: p.attrs.PartitionValue},
		p.attrs.SortKey:      &types.AttributeValueMemberS{Value: recordKey},
	}
}

// Acquire is one conditional UpdateItem: it writes a fresh lease when the
// record is missing or Free (the same rule as a condition expression),
// incrementing the lease counter; when the condition fails, the record is
// returned from the same call (ReturnValuesOnConditionCheckFailure =
// ALL_OLD).
func (p *DynamoDBPersistence) Acquire(ctx context.Context, in AcquireInput) (Entry, bool, error) {
	a, err := p.acquisition("acquire", in, nil)
	if err != nil {
		return Entry{}, false, err
	}
	return p.take(ctx, a, nil)
}

// TakeOver takes the record from the lease held, whatever its expiry,
// when the record is still IN_PROGRESS for in.Fingerprint under exactly
// that lease: one conditional UpdateItem, as Acquire's (Taker).
func (p *DynamoDBPersistence) TakeOver(ctx context.Context, in AcquireInput, held Lease) (Entry, bool, error) {
	a, err := p.acquisition("take over", in, &held)
	if err != nil {
		return Entry{}, false, err
	}
	return p.take(ctx, a, nil)
}

// AcquireRequiring is Acquire's UpdateItem, with the same condition and
// update, made one TransactWriteItems with the conditions of require
// (Preconditioner), as a Claim with Require makes it: the record's Update
// at index 0 (ReturnValuesOnConditionCheckFailure = ALL_OLD), then a
// ConditionCheck per condition, in order. The client must implement
// TransactAPI, else it fails with ErrNotTransactional; more than
// MaxTxItems conditions fail with ErrTxTooLarge; either way before
// anything is sent. Without conditions it is Acquire.
//
// A transaction returns no attributes, so one that commits is followed
// by a strongly consistent GetItem of the record as written: the new
// lease's counter is the previous one's plus one, which only the record
// tells. (Should another call have taken the record over in between, it
// is returned as it is, with acquired = false.) When DynamoDB cancels it,
// the reasons say why:
//
//   - the record's condition failed (ConditionalCheckFailed at index 0):
//     the record as it was, from the cancellation (read with a GetItem
//     when the service returned none), with acquired = false, whatever
//     the conditions say;
//   - the record's condition did not fail and a required one did:
//     DynamoDB does not promise to evaluate every condition once one
//     failed, so the record is read (a strongly consistent GetItem): one
//     that exists and is not Free is returned with acquired = false;
//     otherwise a *PreconditionError names the first condition that
//     failed, and nothing is written;
//   - any other reason (TransactionConflict, throttling, a validation
//     error): an error that wraps the SDK's, and nothing is decided.
//
// A record found under this acquisition's own lease is acquired, as
// Acquire's is: an earlier attempt of the same transaction committed and
// its answer was lost. (The SDK gives the call a ClientRequestToken, so
// that DynamoDB answers its own retry of a transaction that committed
// with success.)
func (p *DynamoDBPersistence) AcquireRequiring(ctx context.Context, in AcquireInput, require []types.ConditionCheck) (Entry, bool, error) {
	a, err := p.acquisition("acquire", in, nil)
	if err != nil {
		return Entry{}, false, err
	}
	return p.take(ctx, a, require)
}

// TakeOverRequiring is TakeOver's UpdateItem made one TransactWriteItems
// with the conditions of require, as AcquireRequiring makes Acquire's
// (Preconditioner). When the record's condition did not fail and a
// required one did, the record is read: one that is no longer IN_PROGRESS
// for in.Fingerprint under exactly held is returned with acquired =
// false; otherwise (it still is, or there is none) a *PreconditionError
// names the first condition that failed. When the record's condition
// failed on no record, it fails with ErrNotFound.
func (p *DynamoDBPersistence) TakeOverRequiring(ctx context.Context, in AcquireInput, held Lease, require []types.ConditionCheck) (Entry, bool, error) {
	a, err := p.acquisition("take over", in, &held)
	if err != nil {
		return Entry{}, false, err
	}
	return p.take(ctx, a, require)
}

// acquisition is one write that gives the record of (in.Scope, in.Key) a
// fresh lease: Acquire's, when the record is missing or Free, or, with
// held, TakeOver's, when it is still IN_PROGRESS for in.Fingerprint under
// exactly held.
type acquisition struct {
	// op names the write in errors: "acquire", "take over".
	op      string
	in      AcquireInput
	held    *Lease
	rk      string
	leaseID string
	// expr is the write's condition and update.
	expr expression.Expression
}

// acquisition builds the write that takes in's record, from held when
// it is not nil.
func (p *DynamoDBPersistence) acquisition(op string, in AcquireInput, held *Lease) (acquisition, error) {
	if p.err != nil {
		return acquisition{}, p.err
	}
	if err := ValidateKey(in.Key); err != nil {
		return acquisition{}, err
	}
	a := acquisition{op: op, in: in, held: held, rk: RecordKey(in.Scope, in.Key), leaseID: NewLeaseID()}
	attrs := p.attrs
	status, fp, format := name(attrs.Status), name(attrs.Validation), expression.Name(AttrFormat)
	until, expires := name(attrs.InProgressExpiry), name(attrs.Expiry)
	var cond expression.ConditionBuilder
	if held == nil {
		cond = expression.AttributeNotExists(name(attrs.PartitionKey)).Or(
			format.Equal(expression.Value(EntryFormat)).And(expression.Or(
				status.Equal(expression.Value(EntryReleased)),
				status.Equal(expression.Value(EntryInProgress)).And(fp.Equal(expression.Value(in.Fingerprint)), until.LessThanEqual(expression.Value(in.Now.UnixMilli()))),
				status.In(expression.Value(EntryCompleted), expression.Value(EntryFailed)).And(expires.LessThanEqual(expression.Value(in.Now.Unix()))),
			)))
	} else {
		cond = expression.And(p.FenceCondition(*held), fp.Equal(expression.Value(in.Fingerprint)))
	}
	count := expression.Name(AttrLeaseCount)
	update := expression.Set(format, expression.Value(EntryFormat)).
		Set(status, expression.Value(EntryInProgress)).
		Set(fp, expression.Value(in.Fingerprint)).
		Set(expression.Name(AttrLeaseID), expression.Value(a.leaseID)).
		Set(count, expression.Plus(expression.IfNotExists(count, expression.Value(0)), expression.Value(1))).
		Set(until, expression.Value(in.LeaseUntil.UnixMilli())).
		Set(expires, expression.Value(in.ExpiresAt.Unix())).
		Remove(name(attrs.Data)).
		Remove(expression.Name(AttrFailure))
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(update).Build()
	if err != nil {
		return acquisition{}, fmt.Errorf("%s %s: %w", op, a.rk, err)
	}
	a.expr = expr
	return a, nil
}

// owns reports whether e, a record a found or read after its write,
// carries a's own lease. Found, it tells that an earlier attempt of the
// same write committed and its answer was lost, and the SDK's retry found
// the record taken, by a.
func (a *acquisition) owns(e Entry) bool { return e.LeaseID == a.leaseID }

// could reports whether a's condition holds on e: a write of a that
// found the record as e is was refused by a required condition alone.
func (a *acquisition) could(e Entry) bool {
	if a.held == nil {
		return e.Free(a.in.Fingerprint, a.in.Now)
	}
	return e.Status == EntryInProgress && e.Fingerprint == a.in.Fingerprint &&
		e.LeaseID == a.held.ID && e.LeaseCount == a.held.Count
}

// take sends a's write, with the conditions of require, as a Claim: one
// UpdateItem, or one TransactWriteItems when there are conditions
// (AcquireRequiring says how that one is answered). The record comes back
// as written with acquired = true, or as it was with acquired = false
// unless it carries a's own lease; a take-over of a record that is gone
// fails with ErrNotFound.
func (p *DynamoDBPersistence) take(ctx context.Context, a acquisition, require []types.ConditionCheck) (Entry, bool, error) {
	if len(require) > MaxTxItems {
		return Entry{}, false, fmt.Errorf("%s %s: %d required conditions: %w (at most %d)", a.op, a.rk, len(require), ErrTxTooLarge, MaxTxItems)
	}
	c := Claim{
		Table:     p.table,
		Key:       p.key(a.rk),
		Update:    aws.ToString(a.expr.Update()),
		Condition: aws.ToString(a.expr.Condition()),
		Names:     a.expr.Names(),
		Values:    a.expr.Values(),
		Require:   require,
		Free: func(item map[string]types.AttributeValue) bool {
			e, err := p.decode(item)
			return err == nil && a.could(e)
		},
		// Only this write puts its lease id in the record: no decoding
		// needed to tell.
		Own: func(item map[string]types.AttributeValue) bool {
			id, ok := item[AttrLeaseID].(*types.AttributeValueMemberS)
			return ok && id.Value == a.leaseID
		},
	}
	got, err := c.Write(ctx, p.client)
	switch {
	case err != nil:
		return Entry{}, false, fmt.Errorf("%s %s: %w", a.op, a.rk, err)
	case !got.OK && !got.Found:
		// The condition failed on no record: the one a take-over was to
		// take is gone.
		return Entry{}, false, fmt.Errorf("%s %s: %w", a.op, a.rk, ErrNotFound)
	case got.Item == nil:
		// A transaction returns no attributes: the new lease's counter,
		// the previous one's plus one, is only in the record.
		e, err := p.Get(ctx, a.in.Scope, a.in.Key)
		if err != nil {
			return Entry{}, false, fmt.Errorf("%s %s: read the record: %w", a.op, a.rk, err)
		}
		return e, a.owns(e), nil
	}
	e, err := p.decode(got.Item)
	if err != nil {
		return Entry{}, false, fmt.Errorf("%s %s: %w", a.op, a.rk, err)
	}
	return e, got.OK, nil
}

// FenceCondition is the condition that lease still holds its record: the
// record is IN_PROGRESS under the lease's id and count. Settle, Release
// and SettleWith write under it; a write of the caller's that adds it
// (Fence) commits only while the lease holds.
func (p *DynamoDBPersistence) FenceCondition(lease Lease) expression.ConditionBuilder {
	return expression.And(
		expression.Name(AttrFormat).Equal(expression.Value(EntryFormat)),
		name(p.attrs.Status).Equal(expression.Value(EntryInProgress)),
		expression.Name(AttrLeaseID).Equal(expression.Value(lease.ID)),
		expression.Name(AttrLeaseCount).Equal(expression.Value(lease.Count)),
	)
}

// Fence is a ConditionCheck of FenceCondition on lease's record, to add to
// a TransactWriteItems of one's own: the transaction commits only while
// the lease holds the record. Once the record was taken over, settled or
// released, DynamoDB cancels it (a *types.TransactionCanceledException
// whose reason at the fence's index is ConditionalCheckFailed) and writes
// none of it. The record may not be written by another item of the same
// transaction.
func (p *DynamoDBPersistence) Fence(lease Lease) (types.TransactWriteItem, error) {
	if p.err != nil {
		return types.TransactWriteItem{}, p.err
	}
	expr, err := expression.NewBuilder().WithCondition(p.FenceCondition(lease)).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("fence %s: %w", lease.RecordKey, err)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(p.table),
		Key:                       p.key(lease.RecordKey),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// settlement is the update that stores o.
func (p *DynamoDBPersistence) settlement(lease Lease, o Outcome) (expression.UpdateBuilder, error) {
	update := expression.Set(name(p.attrs.Status), expression.Value(o.Status))
	if o.ExpiresAt.Unix() > 0 {
		update = update.Set(name(p.attrs.Expiry), expression.Value(o.ExpiresAt.Unix()))
	} else {
		// No expiry: the record is kept, and its key never freed, as
		// Entry.Free says of a settled record without one.
		update = update.Remove(name(p.attrs.Expiry))
	}
	switch o.Status {
	case EntryCompleted:
		update = update.Set(name(p.attrs.Data), expression.Value(&types.AttributeValueMemberB{Value: nonNil(o.Output)}))
	case EntryFailed:
		update = update.Set(expression.Name(AttrFailure), expression.Value(o.Failure))
	default:
		return update, fmt.Errorf("settle %s: status %q is not COMPLETED or FAILED", lease.RecordKey, o.Status)
	}
	return update, nil
}

// Settle is one UpdateItem conditioned on the lease.
func (p *DynamoDBPersistence) Settle(ctx context.Context, lease Lease, o Outcome) error {
	update, err := p.settlement(lease, o)
	if err != nil {
		return err
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
	update := expression.Set(name(p.attrs.Status), expression.Value(EntryReleased))
	return p.fencedUpdate(ctx, "release", lease, update)
}

// fencedUpdate writes update under lease's fence: ErrFenced when the
// lease no longer holds the record. A settle or release whose answer was
// lost and which the SDK retried is answered ErrFenced too: a store cannot
// tell it from a second write by the same lease.
func (p *DynamoDBPersistence) fencedUpdate(ctx context.Context, op string, lease Lease, update expression.UpdateBuilder) error {
	if p.err != nil {
		return p.err
	}
	expr, err := expression.NewBuilder().WithCondition(p.FenceCondition(lease)).WithUpdate(update).Build()
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, lease.RecordKey, err)
	}
	_, err = p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       p.key(lease.RecordKey),
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
	if p.err != nil {
		return Entry{}, p.err
	}
	rk := RecordKey(scope, key)
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(p.table),
		Key:            p.key(rk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Entry{}, fmt.Errorf("get %s: %w", rk, err)
	}
	if len(out.Item) == 0 {
		return Entry{}, ErrNotFound
	}
	e, err := p.decode(out.Item)
	if err != nil {
		return Entry{}, fmt.Errorf("get %s: %w", rk, err)
	}
	return e, nil
}
