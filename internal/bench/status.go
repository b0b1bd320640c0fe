package bench

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/reservation"
)

// setStatus moves a record to status, storing response when it is not "".
func setStatus(ctx context.Context, db *dynamodb.Client, table, recordKey string, status reservation.Status, response string) error {
	update := expression.Set(expression.Name(reservation.AttrStatus), expression.Value(status))
	if response != "" {
		update = update.Set(expression.Name(reservation.AttrResponse), expression.Value(response)).
			Remove(expression.Name(reservation.AttrPending))
	}
	expr, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return err
	}
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       reservation.KeyOf(recordKey),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return fmt.Errorf("set status of %s: %w", recordKey, err)
	}
	return nil
}
