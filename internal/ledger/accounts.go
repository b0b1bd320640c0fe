package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxRecentEntries is the largest limit RecentEntries accepts.
const MaxRecentEntries = 1000

// OpenAccount creates an OPEN account of owner, a caller scope as the API
// computes it (see internal/api), with the given opening balance (minor
// units, not negative). Only the owner may debit the account or read it
// when the API enforces ownership. An existing account is left untouched
// (its owner too) and reported with created = false.
func (l *Ledger) OpenAccount(ctx context.Context, accountID, owner, currency string, openingBalance int64) (created bool, err error) {
	if err := checkID("AccountID", accountID, maxIDBytes); err != nil {
		return false, fmt.Errorf("open account %s: %w", accountID, err)
	}
	if err := checkID("Owner", owner, maxRecordKeyBytes); err != nil {
		return false, fmt.Errorf("open account %s: %w", accountID, err)
	}
	if err := checkCurrency("Currency", currency); err != nil {
		return false, fmt.Errorf("open account %s: %w", accountID, err)
	}
	if openingBalance < 0 {
		return false, fmt.Errorf("open account %s: %w", accountID, invalid("OpeningBalance", "must not be negative"))
	}
	item, err := attributevalue.MarshalMap(accountItem{
		PK:        accountPK(accountID),
		SK:        accountSK,
		AccountID: accountID,
		Owner:     owner,
		Currency:  currency,
		Balance:   openingBalance,
		Ceiling:   openingBalance,
		Status:    string(AccountOpen),
		CreatedAt: l.now().UTC().Format(createdAtLayout),
		Version:   0,
	})
	if err != nil {
		return false, fmt.Errorf("open account %s: marshal: %w", accountID, err)
	}
	expr, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(attrPK))).Build()
	if err != nil {
		return false, fmt.Errorf("open account %s: build condition: %w", accountID, err)
	}
	_, err = l.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(l.ledger),
		Item:                     item,
		ConditionExpression:      expr.Condition(),
		ExpressionAttributeNames: expr.Names(),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("open account %s: %w", accountID, unavailable(err))
	}
	return true, nil
}

// Attributes of a transfer's idempotency record that fence its legs to its
// payload (see RecordAttributes).
const (
	RecordAttrSource      = "sourceAccountId"
	RecordAttrDestination = "destinationAccountId"
	RecordAttrAmount      = "amount"
	RecordAttrCurrency    = "currency"
)

// RecordAttributes are the attributes a transfer's idempotency record must
// carry beside its own, stored when its key is reserved: every leg's fence
// requires them to equal the leg's accounts, amount and currency, so a leg
// invoked with a valid transfer id but another payload commits nothing
// (ErrFenced). A record without them fences every leg.
func RecordAttributes(source, destination string, amount int64, currency string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		RecordAttrSource:      &types.AttributeValueMemberS{Value: source},
		RecordAttrDestination: &types.AttributeValueMemberS{Value: destination},
		RecordAttrAmount:      &types.AttributeValueMemberN{Value: strconv.FormatInt(amount, 10)},
		RecordAttrCurrency:    &types.AttributeValueMemberS{Value: currency},
	}
}

// CloseAccount marks the account CLOSED: it takes no more postings, its
// balance and entries stay readable. Closing a closed account is a no-op.
func (l *Ledger) CloseAccount(ctx context.Context, accountID string) error {
	if err := checkID("AccountID", accountID, maxIDBytes); err != nil {
		return fmt.Errorf("close account %s: %w", accountID, err)
	}
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name(attrPK))).
		WithUpdate(expression.Set(expression.Name(attrStatus), expression.Value(string(AccountClosed)))).
		Build()
	if err != nil {
		return fmt.Errorf("close account %s: build update: %w", accountID, err)
	}
	_, err = l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.ledger),
		Key:                       key(accountPK(accountID), accountSK),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("close account %s: %w", accountID, ErrAccountNotFound)
	case err != nil:
		return fmt.Errorf("close account %s: %w", accountID, unavailable(err))
	}
	return nil
}

// Account reads an account with a strongly consistent read.
func (l *Ledger) Account(ctx context.Context, accountID string) (Account, error) {
	if err := checkID("AccountID", accountID, maxIDBytes); err != nil {
		return Account{}, fmt.Errorf("account %s: %w", accountID, err)
	}
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.ledger),
		Key:            key(accountPK(accountID), accountSK),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Account{}, fmt.Errorf("account %s: %w", accountID, unavailable(err))
	}
	if len(out.Item) == 0 {
		return Account{}, fmt.Errorf("account %s: %w", accountID, ErrAccountNotFound)
	}
	a, err := decodeAccount(out.Item)
	if err != nil {
		return Account{}, fmt.Errorf("account %s: %w", accountID, err)
	}
	return a, nil
}

// RecentEntries returns up to limit (1..MaxRecentEntries) of the account's
// entries, newest first, read with strong consistency from the ByPostedAt
// index: the first page of EntriesPage. An unknown account has no entries.
func (l *Ledger) RecentEntries(ctx context.Context, accountID string, limit int) ([]Entry, error) {
	entries, _, err := l.EntriesPage(ctx, accountID, limit, nil)
	return entries, err
}

// Rejection reads the business rejection a void marker holds in a
// transfer's DEBIT slot on source (Void): nil when the slot holds none (it
// is empty, or the debit committed). The read is strongly consistent.
func (l *Ledger) Rejection(ctx context.Context, transferID, source string) (*VoidedError, error) {
	for _, c := range []struct{ field, v string }{{"TransferID", transferID}, {"Source", source}} {
		if err := checkID(c.field, c.v, maxIDBytes); err != nil {
			return nil, fmt.Errorf("rejection of transfer %s: %w", transferID, err)
		}
	}
	_, _, err := l.getEntry(ctx, accountPK(source), entrySK(transferID, Debit))
	var voided *VoidedError
	switch {
	case errors.As(err, &voided):
		return voided, nil
	case err != nil:
		return nil, fmt.Errorf("rejection of transfer %s: %w", transferID, err)
	}
	return nil, nil
}

// TransferEntries reads the DEBIT, CREDIT and REFUND entries of a transfer
// (DEBIT and REFUND on the source, CREDIT on the destination) in one
// TransactGetItems: a strongly consistent, serializable snapshot, so no leg
// can commit between the reads. Entries that do not exist are absent from
// the map, and so is a leg whose slot holds a void marker (Void): it moved
// no money. A conflicting write in flight makes the read fail with
// ErrUnavailable; retry.
func (l *Ledger) TransferEntries(ctx context.Context, transferID, source, destination string) (map[Kind]Entry, error) {
	for _, c := range []struct{ field, v string }{
		{"TransferID", transferID}, {"Source", source}, {"Destination", destination},
	} {
		if err := checkID(c.field, c.v, maxIDBytes); err != nil {
			return nil, fmt.Errorf("entries of transfer %s: %w", transferID, err)
		}
	}
	keys := []struct {
		kind    Kind
		account string
	}{{Debit, source}, {Credit, destination}, {Refund, source}}
	gets := make([]types.TransactGetItem, len(keys))
	for i, k := range keys {
		gets[i] = types.TransactGetItem{Get: &types.Get{
			TableName: aws.String(l.ledger),
			Key:       key(accountPK(k.account), entrySK(transferID, k.kind)),
		}}
	}
	out, err := l.api.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
	if err != nil {
		return nil, fmt.Errorf("entries of transfer %s: %w", transferID, unavailable(err))
	}
	if len(out.Responses) != len(keys) {
		return nil, fmt.Errorf("entries of transfer %s: %w", transferID,
			unavailable(fmt.Errorf("%d responses for %d reads", len(out.Responses), len(keys))))
	}
	entries := make(map[Kind]Entry, len(keys))
	for i, r := range out.Responses {
		if len(r.Item) == 0 {
			continue
		}
		e, err := decodeEntry(r.Item)
		var voided *VoidedError
		switch {
		case errors.As(err, &voided):
			// A void marker moved no money: the leg did not happen.
			continue
		case err != nil:
			return nil, fmt.Errorf("entries of transfer %s: %w", transferID, err)
		}
		entries[keys[i].kind] = e
	}
	return entries, nil
}
