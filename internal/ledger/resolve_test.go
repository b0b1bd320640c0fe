package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestResolveCancellation feeds the interpretation of a cancelled debit
// reasons DynamoDB may send but DynamoDB Local does not (a failed condition
// without the entry's, reasons without items, conflicts, throttling); the
// reads it makes go to DynamoDB Local.
func TestResolveCancellation(t *testing.T) {
	env := ledgertest.New(t)
	committed := transferFixture(t, env)
	stored := env.Post(t, committed, ledger.Debit)
	fresh := transferFixture(t, env)

	reason := func(code string) types.CancellationReason {
		return types.CancellationReason{Code: aws.String(code)}
	}
	cancelled := func(codes ...string) error {
		tce := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled")}
		for _, c := range codes {
			tce.CancellationReasons = append(tce.CancellationReasons, reason(c))
		}
		return tce
	}
	const (
		none = "None"
		ccf  = "ConditionalCheckFailed"
	)
	cases := []struct {
		name string
		tr   ledgertest.Transfer
		err  error
		// want is nil for success with the stored entry.
		want     error
		contains string
	}{
		{"fence failed, entry not reported but present", committed, cancelled(ccf, none, none), nil, ""},
		{"funds failed, entry not reported but present", committed, cancelled(none, none, ccf), nil, ""},
		{"entry failed without item", committed, cancelled(none, ccf, none), nil, ""},
		{"entry failed, conflict elsewhere", committed, cancelled(none, ccf, "TransactionConflict"), nil, ""},
		{"entry failed without item and absent", fresh, cancelled(none, ccf, none), ledger.ErrUnavailable, "not found"},
		{"transaction conflict", fresh, cancelled(none, none, "TransactionConflict"), ledger.ErrUnavailable, "TransactionConflict"},
		{"throttling", fresh, cancelled("ThrottlingError", none, none), ledger.ErrUnavailable, "ThrottlingError"},
		{"conflict beats a failed condition", fresh, cancelled(ccf, none, "TransactionConflict"), ledger.ErrUnavailable, "TransactionConflict"},
		{"null codes", fresh, &types.TransactionCanceledException{CancellationReasons: make([]types.CancellationReason, 3)}, ledger.ErrUnavailable, "without a failed condition"},
		{"too few reasons", fresh, cancelled(ccf), ledger.ErrUnavailable, "1 cancellation reasons for 3"},
		{"account failed without item", fresh, cancelled(none, none, ccf), ledger.ErrAccountNotFound, ""},
		{"fence failed without item", fresh, cancelled(ccf, none, none), ledger.ErrFenced, "not found"},
		{"other service error", fresh, &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}, ledger.ErrUnavailable, "slow down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := env.Snapshot(t)
			e, err := env.Ledger.Resolve(context.Background(), tc.tr.Leg(ledger.Debit), tc.err)
			if tc.want == nil {
				if err != nil || !sameEntry(e, stored) || !e.Replayed {
					t.Fatalf("Resolve = %+v, %v; want the stored %+v, replayed", e, err, stored)
				}
			} else {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.contains) {
					t.Fatalf("Resolve = %+v, %v; want %v containing %q", e, err, tc.want, tc.contains)
				}
				// Transient errors keep the SDK error for errors.As.
				var tce *types.TransactionCanceledException
				var pte *types.ProvisionedThroughputExceededException
				if tc.contains != "not found" && errors.Is(tc.want, ledger.ErrUnavailable) &&
					!errors.As(err, &tce) && !errors.As(err, &pte) {
					t.Errorf("Resolve = %v does not wrap the SDK error", err)
				}
			}
			if d := before.Diff(env.Snapshot(t)); d != "" {
				t.Errorf("Resolve wrote:\n%s", d)
			}
		})
	}
}

// TestLocalCancellationReasons pins the DynamoDB Local behaviour Post's
// interpretation relies on: one reason per item, every failed condition
// reported, and the ALL_OLD item in the reason of a failed Put and of a
// failed Update (none when the item does not exist).
func TestLocalCancellationReasons(t *testing.T) {
	env := ledgertest.New(t)
	tr := transferFixture(t, env)
	env.Post(t, tr, ledger.Debit)
	env.SetRecord(t, tr.RecordKey, reservation.StatusCompleted, tr.ID)
	ghost := ledgertest.ID("ghost")
	item := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk},
			"sk": &types.AttributeValueMemberS{Value: sk},
		}
	}
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	_, err := env.Client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{
				TableName:                           aws.String(env.IdempotencyTable),
				Key:                                 map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: tr.RecordKey}},
				ConditionExpression:                 aws.String("#s = :p"),
				ExpressionAttributeNames:            map[string]string{"#s": "status"},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "IN_PROGRESS"}},
				ReturnValuesOnConditionCheckFailure: allOld,
			}},
			{Put: &types.Put{
				TableName:                           aws.String(env.LedgerTable),
				Item:                                item("ACCOUNT#"+tr.Source, "LEG#"+tr.ID+"#DEBIT"),
				ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: allOld,
			}},
			{Update: &types.Update{
				TableName:                           aws.String(env.LedgerTable),
				Key:                                 item("ACCOUNT#"+tr.Source, "ACCOUNT"),
				UpdateExpression:                    aws.String("ADD version :one"),
				ConditionExpression:                 aws.String("balance >= :big"),
				ExpressionAttributeValues:           map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":big": &types.AttributeValueMemberN{Value: "1000000"}},
				ReturnValuesOnConditionCheckFailure: allOld,
			}},
			{Update: &types.Update{
				TableName:                           aws.String(env.LedgerTable),
				Key:                                 item("ACCOUNT#"+ghost, "ACCOUNT"),
				UpdateExpression:                    aws.String("ADD version :one"),
				ConditionExpression:                 aws.String("attribute_exists(pk)"),
				ExpressionAttributeValues:           map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
				ReturnValuesOnConditionCheckFailure: allOld,
			}},
		},
	})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("TransactWriteItems = %v, want TransactionCanceledException", err)
	}
	if len(tce.CancellationReasons) != 4 {
		t.Fatalf("%d reasons, want 4", len(tce.CancellationReasons))
	}
	for i, wantItem := range []bool{true, true, true, false} {
		r := tce.CancellationReasons[i]
		if aws.ToString(r.Code) != "ConditionalCheckFailed" {
			t.Errorf("reason %d code = %q, want ConditionalCheckFailed", i, aws.ToString(r.Code))
		}
		if got := len(r.Item) > 0; got != wantItem {
			t.Errorf("reason %d has item %v, want %v", i, r.Item, wantItem)
		}
	}
	if s, ok := tce.CancellationReasons[1].Item["leg"].(*types.AttributeValueMemberS); !ok || s.Value != "DEBIT" {
		t.Errorf("Put reason item = %v, want the stored DEBIT entry", tce.CancellationReasons[1].Item)
	}
	if n, ok := tce.CancellationReasons[2].Item["balance"].(*types.AttributeValueMemberN); !ok || n.Value != "700" {
		t.Errorf("Update reason item = %v, want the account with balance 700", tce.CancellationReasons[2].Item)
	}
}
