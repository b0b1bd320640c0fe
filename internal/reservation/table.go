package reservation

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// byScopeAttributes are the attributes besides the keys that the ByScope
// index projects: what ListByScope's records carry. A record listed from
// the index has its table key, scope, creation time and these; its other
// fields are empty.
var byScopeAttributes = []string{AttrStatus, AttrResourceID, "request", AttrResponse}

// TableInput is the table a Store needs, named name, as one CreateTable
// call creates it (on demand capacity):
//
//   - the partition key AttrKey ("pk", a string), the record key
//     (RecordKey); no sort key;
//   - the index IndexByResourceID ("ByResourceId"): hash key
//     AttrResourceID, all attributes projected (FindByResourceID reads
//     the scope and the table key from it);
//   - the index IndexByScope ("ByScope"): hash key AttrScope, range key
//     AttrCreatedAt, the keys and the attributes status, resourceId,
//     request and response projected (ListByScope's records carry
//     those).
//
// The Store queries no other index. The Pending index (IndexPending),
// which AttrPending and AttrSweepAt feed, serves a sweep of unsettled
// records outside the Store, and is left out.
//
// Time to Live is set apart (CreateTable has no parameter for it): see
// TimeToLiveInput. A table with more indexes or wider projections serves
// the Store as well; a deployment's template may declare one.
func TableInput(name string) *dynamodb.CreateTableInput {
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(n string, t types.KeyType) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(n), KeyType: t}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			str(AttrKey), str(AttrResourceID), str(AttrScope), str(AttrCreatedAt),
		},
		KeySchema: []types.KeySchemaElement{key(AttrKey, types.KeyTypeHash)},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName:  aws.String(IndexByResourceID),
				KeySchema:  []types.KeySchemaElement{key(AttrResourceID, types.KeyTypeHash)},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			},
			{
				IndexName: aws.String(IndexByScope),
				KeySchema: []types.KeySchemaElement{key(AttrScope, types.KeyTypeHash), key(AttrCreatedAt, types.KeyTypeRange)},
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: append([]string(nil), byScopeAttributes...),
				},
			},
		},
	}
}

// TimeToLiveInput enables Time to Live on the table name with
// AttrExpiresAt ("expiresAt"), which only a settled record carries, so
// that DynamoDB deletes records some time after their retention ends.
// The Store never relies on the deletion: it judges expiry from the
// stored value.
func TimeToLiveInput(name string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(AttrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}
}
