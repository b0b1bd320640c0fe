package xray

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// tableNames returns the DynamoDB tables a call's input names: one name,
// or, for a call across several tables (a transaction, a batch), their
// sorted list. Other inputs name none.
func tableNames(params any) (string, []string) {
	var names []string
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.PutItemInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.DeleteItemInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.QueryInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.ScanInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.DescribeTableInput:
		return aws.ToString(in.TableName), nil
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				names = append(names, aws.ToString(it.Put.TableName))
			case it.Update != nil:
				names = append(names, aws.ToString(it.Update.TableName))
			case it.Delete != nil:
				names = append(names, aws.ToString(it.Delete.TableName))
			case it.ConditionCheck != nil:
				names = append(names, aws.ToString(it.ConditionCheck.TableName))
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range in.TransactItems {
			if it.Get != nil {
				names = append(names, aws.ToString(it.Get.TableName))
			}
		}
	case *dynamodb.BatchGetItemInput:
		for name := range in.RequestItems {
			names = append(names, name)
		}
	case *dynamodb.BatchWriteItemInput:
		for name := range in.RequestItems {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 1 {
		return names[0], nil
	}
	return "", names
}
