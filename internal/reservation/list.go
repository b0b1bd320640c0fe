package reservation

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// IndexByScope is the index of a scope's records by creation time: hash
// key AttrScope, range key AttrCreatedAt (fixed-width RFC 3339, so its
// lexical order is time order).
const IndexByScope = "ByScope"

// Position is where a page of a scope's records ends: the last record's
// creation time and table key. The next page starts after it.
type Position struct {
	CreatedAt string
	Key       string
}

// ListByScope returns up to limit records of scope, newest first, after
// position after (nil: from the newest), and the position of the last
// one returned when more follow (nil otherwise). It reads the ByScope
// index, which is eventually consistent: a record reserved a moment ago
// may not be listed yet. Records keep their place (createdAt does not
// change), and newer records come before the first page, so paging never
// repeats or skips a record that was listed when the pages passed its
// place.
func (s *Store) ListByScope(ctx context.Context, scope string, limit int, after *Position) ([]Record, *Position, error) {
	if limit < 1 {
		return nil, nil, fmt.Errorf("list %s: limit %d", scope, limit)
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(AttrScope).Equal(expression.Value(scope))).
		Build()
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", scope, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexByScope),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
	}
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			AttrScope:     &types.AttributeValueMemberS{Value: scope},
			AttrCreatedAt: &types.AttributeValueMemberS{Value: after.CreatedAt},
			AttrKey:       &types.AttributeValueMemberS{Value: after.Key},
		}
	}
	// One more than the page, to know whether another page follows.
	var recs []Record
	for {
		in.Limit = aws.Int32(int32(limit + 1 - len(recs)))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", scope, err)
		}
		for _, item := range out.Items {
			var rec Record
			if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
				return nil, nil, fmt.Errorf("list %s: decode: %w", scope, err)
			}
			recs = append(recs, rec)
		}
		if len(recs) > limit {
			last := recs[limit-1]
			return recs[:limit], &Position{CreatedAt: last.CreatedAt, Key: last.Key}, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return recs, nil, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
