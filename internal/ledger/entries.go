package ledger

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// EntryPosition is where a page of an account's entries ends: the last
// entry's Sequence (the BySequence sort key) and table sort key. The next
// page starts after it.
type EntryPosition struct {
	Sequence int64
	SK       string
}

// EntriesPage returns up to limit (1..MaxRecentEntries) of the account's
// entries, newest first, after position after (nil: from the newest),
// and the position of the last one returned when more follow (nil
// otherwise). It reads the BySequence index with strong consistency.
// Entries are ordered by Sequence, which the transaction that posts an
// entry assigns: an entry that commits while a client pages lands above
// every entry committed before it, so pages never repeat or skip one,
// and a client that follows the account from the head until the first
// entry it has seen misses none, however slow a leg's commit.
func (l *Ledger) EntriesPage(ctx context.Context, accountID string, limit int, after *EntryPosition) ([]Entry, *EntryPosition, error) {
	if err := checkID("AccountID", accountID, maxIDBytes); err != nil {
		return nil, nil, fmt.Errorf("entries of %s: %w", accountID, err)
	}
	if limit < 1 || limit > MaxRecentEntries {
		return nil, nil, fmt.Errorf("entries of %s: %w", accountID,
			invalid("Limit", fmt.Sprintf("must be between 1 and %d", MaxRecentEntries)))
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrPK).Equal(expression.Value(accountPK(accountID)))).
		Build()
	if err != nil {
		return nil, nil, fmt.Errorf("entries of %s: build key condition: %w", accountID, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.ledger),
		IndexName:                 aws.String(indexBySeq),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			attrPK:       &types.AttributeValueMemberS{Value: accountPK(accountID)},
			attrSK:       &types.AttributeValueMemberS{Value: after.SK},
			attrSequence: &types.AttributeValueMemberN{Value: strconv.FormatInt(after.Sequence, 10)},
		}
	}
	// One more than the page, to know whether another page follows.
	var (
		entries   []Entry
		positions []EntryPosition
	)
	for {
		in.Limit = aws.Int32(int32(limit + 1 - len(entries)))
		out, err := l.api.Query(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("entries of %s: %w", accountID, unavailable(err))
		}
		for _, item := range out.Items {
			e, err := decodeEntry(item)
			if err != nil {
				return nil, nil, fmt.Errorf("entries of %s: %w", accountID, err)
			}
			entries = append(entries, e)
			positions = append(positions, EntryPosition{Sequence: e.Sequence, SK: stringAttr(item, attrSK)})
		}
		if len(entries) > limit {
			return entries[:limit], &positions[limit-1], nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return entries, nil, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
