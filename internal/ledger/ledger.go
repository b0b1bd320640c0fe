// Package ledger keeps account balances and the ledger entries of transfer
// legs in LedgerTable, and posts each leg exactly once.
//
// A leg (DEBIT, CREDIT or REFUND) is one TransactWriteItems that checks the
// transfer's idempotency record (the fence), puts the leg's entry if it does
// not exist yet, numbered with the account's next version, and moves the
// account balance and version. A retried leg whose entry
// exists reports the stored entry and moves nothing, so the leg workers can
// be retried freely.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client the ledger uses.
type API interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Config names the tables the ledger works on.
type Config struct {
	// LedgerTable holds accounts and ledger entries.
	LedgerTable string
	// IdempotencyTable holds the idempotency records that fence the legs.
	IdempotencyTable string
	// Now is the clock that stamps postedAt and createdAt; nil means
	// time.Now.
	Now func() time.Time
}

// Ledger posts transfer legs and reads accounts and entries.
type Ledger struct {
	api         API
	ledger      string
	idempotency string
	now         func() time.Time
}

// New returns a ledger on the given tables.
func New(api API, cfg Config) (*Ledger, error) {
	if api == nil {
		return nil, errors.New("ledger: nil DynamoDB client")
	}
	if cfg.LedgerTable == "" || cfg.IdempotencyTable == "" {
		return nil, errors.New("ledger: LedgerTable and IdempotencyTable are required")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Ledger{api: api, ledger: cfg.LedgerTable, idempotency: cfg.IdempotencyTable, now: now}, nil
}

// key is the primary key of a LedgerTable item.
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberS{Value: sk},
	}
}

// getEntry reads one entry with a strongly consistent read.
func (l *Ledger) getEntry(ctx context.Context, pk, sk string) (Entry, bool, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.ledger),
		Key:            key(pk, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Entry{}, false, unavailable(err)
	}
	if len(out.Item) == 0 {
		return Entry{}, false, nil
	}
	e, err := decodeEntry(out.Item)
	if err != nil {
		return Entry{}, false, err
	}
	return e, true, nil
}

// decodeEntry turns a stored entry item into an Entry. A void marker is
// reported as a *VoidedError. A malformed item is reported as
// ErrUnavailable: nothing a caller can fix, and retrying fails closed.
func decodeEntry(item map[string]types.AttributeValue) (Entry, error) {
	var it entryItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return Entry{}, unavailable(fmt.Errorf("decode entry: %w", err))
	}
	if it.Voided {
		return Entry{}, &VoidedError{Reason: it.Reason, Detail: it.Detail}
	}
	e, err := it.entry()
	if err != nil {
		return Entry{}, unavailable(err)
	}
	return e, nil
}

func decodeAccount(item map[string]types.AttributeValue) (Account, error) {
	var it accountItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return Account{}, unavailable(fmt.Errorf("decode account: %w", err))
	}
	a, err := it.account()
	if err != nil {
		return Account{}, unavailable(err)
	}
	return a, nil
}
