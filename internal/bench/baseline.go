package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/uuid"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// conventional is the idempotent transfer endpoint as the widely
// published pattern builds it, the baseline the benchmark compares the
// project with. A new key costs three calls: a conditional PutItem that
// marks the key in progress, StartExecution, and an UpdateItem writing
// the execution's ARN back. A duplicate costs two: the PutItem, which
// fails, then a GetItem of the record to answer from. With ownership it
// first reads the source account (one GetItem more, new or duplicate)
// and refuses a caller who does not own it, as an endpoint that checks
// authorization before idempotency does.
//
// It parses, validates and fingerprints the request with the project's
// own code and stores records of the same shape and size, so the
// difference measured is the pattern's round trips, not the work around
// them.
type conventional struct {
	db        *dynamodb.Client
	exec      *sfn.Client
	accounts  *ledger.Ledger
	table     string
	machine   string
	maxAmount int64
	ownership bool
}

func (c *conventional) Handle(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	key := req.Headers["Idempotency-Key"]
	if err := idempotency.ValidateKey(key); err != nil {
		return answer(http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	tr, limits, err := transfer.Parse([]byte(req.Body), c.maxAmount)
	if err == nil && limits != nil {
		err = limits
	}
	if err != nil {
		return answer(http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	canonical := tr.Canonical()
	scope := "iam:" + req.RequestContext.Identity.UserArn
	if c.ownership {
		acct, err := c.accounts.Account(ctx, tr.SourceAccountID)
		switch {
		case errors.Is(err, ledger.ErrAccountNotFound):
			return answer(http.StatusForbidden, map[string]string{"error": "forbidden"})
		case err != nil:
			return events.APIGatewayProxyResponse{}, err
		case acct.Owner != scope:
			return answer(http.StatusForbidden, map[string]string{"error": "forbidden"})
		}
	}
	rec := reservation.Record{
		Key:              idempotency.RecordKey(scope, key),
		Scope:            scope,
		Status:           reservation.StatusInProgress,
		Fingerprint:      idempotency.Fingerprint(canonical),
		ResourceID:       uuid.NewString(),
		Request:          string(canonical),
		CreatedAt:        time.Now().UTC().Format(reservation.TimeFormat),
		RetentionSeconds: 24 * 3600,
	}
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	for k, v := range ledger.RecordAttributes(tr.SourceAccountID, tr.DestinationAccountID, tr.Amount, tr.Currency) {
		item[k] = v
	}
	_, err = c.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(c.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{
			"#k": reservation.AttrKey,
		},
	})
	var taken *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &taken):
		return c.existing(ctx, rec)
	case err != nil:
		return events.APIGatewayProxyResponse{}, err
	}
	input, err := transfer.NewWorkflowInput(rec)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	out, err := c.exec.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(c.machine),
		Name:            aws.String(rec.ResourceID),
		Input:           aws.String(string(input)),
	})
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	update, err := expression.NewBuilder().WithUpdate(
		expression.Set(expression.Name("executionArn"), expression.Value(aws.ToString(out.ExecutionArn)))).Build()
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if _, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.table),
		Key:                       reservation.KeyOf(rec.Key),
		UpdateExpression:          update.Update(),
		ExpressionAttributeNames:  update.Names(),
		ExpressionAttributeValues: update.Values(),
	}); err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	t, err := transfer.FromRecord(rec)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	return answer(http.StatusAccepted, t)
}

// existing answers a taken key from its record: a strongly consistent
// GetItem, then the stored response, the pending transfer, or 422 when
// the request differs.
func (c *conventional) existing(ctx context.Context, rec reservation.Record) (events.APIGatewayProxyResponse, error) {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(c.table),
		Key:            reservation.KeyOf(rec.Key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	var stored reservation.Record
	if err := attributevalue.UnmarshalMap(out.Item, &stored); err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if stored.Fingerprint != rec.Fingerprint {
		return answer(http.StatusUnprocessableEntity, map[string]string{"error": "key reused"})
	}
	t, err := transfer.FromRecord(stored)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	status := http.StatusAccepted
	if t.Status == transfer.StatusCompleted {
		status = http.StatusOK
	}
	return answer(status, t)
}

func answer(status int, body any) (events.APIGatewayProxyResponse, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("render answer: %w", err)
	}
	return events.APIGatewayProxyResponse{StatusCode: status, Body: string(b),
		Headers: map[string]string{"Content-Type": "application/json"}}, nil
}
