package idempotency_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// The store conformance suite, against the memory store and against
// DynamoDB Local.

func TestPersistenceSuiteMemory(t *testing.T) {
	idemtest.RunPersistenceSuite(t, func(*testing.T) idemtest.SuiteStore {
		return idemtest.SuiteStore{Store: idemtest.NewMemoryStore()}
	})
}

func TestPersistenceSuiteDynamoDB(t *testing.T) {
	idemtest.RunPersistenceSuite(t, func(t *testing.T) idemtest.SuiteStore {
		client := idemtest.Client(t)
		table := idemtest.Table(t, client)
		return idemtest.SuiteStore{
			Store: idempotency.NewDynamoDBPersistence(client, table),
			PutForeign: func(ctx context.Context, scope, key, format string) error {
				item := map[string]types.AttributeValue{
					idempotency.AttrKey:    &types.AttributeValueMemberS{Value: idempotency.RecordKey(scope, key)},
					idempotency.AttrStatus: &types.AttributeValueMemberS{Value: string(idempotency.EntryReleased)},
				}
				if format != "" {
					item[idempotency.AttrFormat] = &types.AttributeValueMemberS{Value: format}
				}
				_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
				return err
			},
		}
	})
}
