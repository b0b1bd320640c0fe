package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// claimOf is a claim of the record pk = key in table, holding owner,
// whose condition is "no record, or one marked free".
func claimOf(table, key, owner string) idempotency.Claim {
	return idempotency.Claim{
		Table:     table,
		Key:       map[string]types.AttributeValue{"pk": str(key)},
		Item:      map[string]types.AttributeValue{"pk": str(key), "owner": str(owner), "state": str("held")},
		Condition: "attribute_not_exists(pk) OR #state = :free",
		Names:     map[string]string{"#state": "state"},
		Values:    map[string]types.AttributeValue{":free": str("free")},
		Free: func(item map[string]types.AttributeValue) bool {
			s, _ := item["state"].(*types.AttributeValueMemberS)
			return s != nil && s.Value == "free"
		},
	}
}

func put(t *testing.T, client *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func owner(item map[string]types.AttributeValue) string {
	if s, ok := item["owner"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// TestClaimWrite: each way a claim ends, what it answers, and the calls
// it costs.
func TestClaimWrite(t *testing.T) {
	grant := func(table string, ok bool) types.ConditionCheck {
		cond := "attribute_exists(pk)"
		if !ok {
			cond = "attribute_not_exists(pk)"
		}
		return types.ConditionCheck{
			TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": str("grant")},
			ConditionExpression:                 aws.String(cond),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
	}
	cases := []struct {
		name string
		// existing is the record before the claim, if any.
		existing map[string]types.AttributeValue
		edit     func(c *idempotency.Claim, table string)
		wantOK   bool
		// wantFound is the owner of the record found, "" for none.
		wantFound string
		wantErr   error
		wantCalls int64
		// stored is the owner the table holds afterwards, "" for none.
		stored string
	}{
		{name: "put, free key", wantOK: true, wantCalls: 1, stored: "me"},
		{name: "put, taken key", existing: map[string]types.AttributeValue{"pk": str("k"), "owner": str("other"), "state": str("held")},
			wantFound: "other", wantCalls: 1, stored: "other"},
		{name: "put, free record", existing: map[string]types.AttributeValue{"pk": str("k"), "owner": str("other"), "state": str("free")},
			wantOK: true, wantCalls: 1, stored: "me"},
		{name: "put, own record", existing: map[string]types.AttributeValue{"pk": str("k"), "owner": str("me"), "state": str("held")},
			edit: func(c *idempotency.Claim, _ string) {
				c.Own = func(item map[string]types.AttributeValue) bool { return owner(item) == "me" }
			},
			wantOK: true, wantFound: "me", wantCalls: 1, stored: "me"},
		{name: "update, free key", edit: func(c *idempotency.Claim, _ string) {
			c.Item, c.Update = nil, "SET #owner = :me, #state = :held"
			c.Names["#owner"] = "owner"
			c.Values[":me"], c.Values[":held"] = str("me"), str("held")
		}, wantOK: true, wantCalls: 1, stored: "me"},
		{name: "update on no record fails", edit: func(c *idempotency.Claim, _ string) {
			c.Item, c.Update, c.Condition = nil, "SET #state = :free", "#state = :free"
		}, wantCalls: 2},
		{name: "required condition holds", edit: func(c *idempotency.Claim, table string) {
			c.Require = []types.ConditionCheck{grant(table, true)}
		}, existing: map[string]types.AttributeValue{"pk": str("grant")}, wantOK: true, wantCalls: 1, stored: "me"},
		{name: "required condition fails on a free key", edit: func(c *idempotency.Claim, table string) {
			c.Require = []types.ConditionCheck{grant(table, true), grant(table, false)}
		}, existing: map[string]types.AttributeValue{"pk": str("grant")}, wantErr: idempotency.ErrPreconditionFailed, wantCalls: 2},
		{name: "required condition fails on a taken key", edit: func(c *idempotency.Claim, table string) {
			c.Require = []types.ConditionCheck{grant(table, false)}
		}, existing: map[string]types.AttributeValue{"pk": str("k"), "owner": str("other"), "state": str("held")},
			wantFound: "other", wantCalls: 1, stored: "other"},
		{name: "neither item nor update", edit: func(c *idempotency.Claim, _ string) { c.Item = nil }, wantErr: idempotency.ErrClaim},
		{name: "both item and update", edit: func(c *idempotency.Claim, _ string) { c.Update = "SET a = :free" }, wantErr: idempotency.ErrClaim},
		{name: "require without free", edit: func(c *idempotency.Claim, table string) {
			c.Require, c.Free = []types.ConditionCheck{grant(table, true)}, nil
		}, wantErr: idempotency.ErrClaim},
		{name: "too many conditions", edit: func(c *idempotency.Claim, table string) {
			c.Require = make([]types.ConditionCheck, idempotency.MaxTxItems+1)
		}, wantErr: idempotency.ErrClaim},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, calls := counted(t)
			table := idemtest.Table(t, client)
			if tc.existing != nil {
				put(t, client, table, tc.existing)
			}
			c := claimOf(table, "k", "me")
			if tc.edit != nil {
				tc.edit(&c, table)
			}
			calls.Store(0)
			got, err := c.Write(t.Context(), client)
			if !errors.Is(err, tc.wantErr) || got.OK != tc.wantOK || got.Found != (tc.wantFound != "") || owner(got.Item) != tc.wantFound && got.Found {
				t.Errorf("Write = %+v, %v; want OK %v, found %q, error %v", got, err, tc.wantOK, tc.wantFound, tc.wantErr)
			}
			if got.OK && !got.Found && c.Item == nil && owner(got.Item) != "me" {
				t.Errorf("an UpdateItem's claim answered %v, want the record as written", got.Item)
			}
			if n := calls.Load(); n != tc.wantCalls {
				t.Errorf("%d calls, want %d", n, tc.wantCalls)
			}
			out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: c.Key, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if owner(out.Item) != tc.stored {
				t.Errorf("the table holds %v, want owner %q", out.Item, tc.stored)
			}
		})
	}
}

// TestClaimPreconditionError names the first condition that failed and
// the item it checked.
func TestClaimPreconditionError(t *testing.T) {
	client := idemtest.Client(t)
	table := idemtest.Table(t, client)
	put(t, client, table, map[string]types.AttributeValue{"pk": str("grant"), "holder": str("alice")})
	c := claimOf(table, "k", "mallory")
	c.Require = []types.ConditionCheck{
		{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": str("grant")}, ConditionExpression: aws.String("attribute_exists(pk)")},
		{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": str("grant")},
			ConditionExpression:                 aws.String("holder = :me"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":me": str("mallory")},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld},
	}
	_, err := c.Write(t.Context(), client)
	var perr *idempotency.PreconditionError
	if !errors.As(err, &perr) || perr.Index != 1 {
		t.Fatalf("Write = %v, want a *PreconditionError for condition 1", err)
	}
	if h, ok := perr.Item["holder"].(*types.AttributeValueMemberS); !ok || h.Value != "alice" {
		t.Errorf("the error's item = %v, want the grant as it was", perr.Item)
	}
}

// TestClaimAnswerLost: a PutItem that committed and whose answer was lost
// is found, by the SDK's retry, holding the key: Own makes it the claim's.
func TestClaimAnswerLost(t *testing.T) {
	for _, own := range []bool{false, true} {
		client, attempts := idemtest.LoseFirstReply(t, "PutItem")
		c := claimOf(idemtest.Table(t, client), "k", "me")
		if own {
			c.Own = func(item map[string]types.AttributeValue) bool { return owner(item) == "me" }
		}
		got, err := c.Write(t.Context(), client)
		if err != nil || attempts.Load() != 2 || got.OK != own || !got.Found || owner(got.Item) != "me" {
			t.Errorf("own %v: Write = %+v, %v after %d attempts; want found, OK %v", own, got, err, attempts.Load(), own)
		}
	}
}

// updateOnly is a client with PersistenceAPI only: no PutItem, no
// TransactWriteItems.
type updateOnly struct{ idempotency.PersistenceAPI }

// TestClaimClient: a claim refuses, before any call, a client without the
// method it needs, and wraps the store's own failures.
func TestClaimClient(t *testing.T) {
	client := idemtest.Client(t)
	table := idemtest.Table(t, client)
	c := claimOf(table, "k", "me")
	if _, err := c.Write(t.Context(), updateOnly{client}); err == nil {
		t.Error("a PutItem claim with a client that has no PutItem succeeded")
	}
	c.Require = []types.ConditionCheck{{TableName: aws.String(table), Key: c.Key, ConditionExpression: aws.String("attribute_not_exists(pk)")}}
	if _, err := c.Write(t.Context(), updateOnly{client}); !errors.Is(err, idempotency.ErrNotTransactional) {
		t.Errorf("a transaction with a client that has no TransactWriteItems = %v, want ErrNotTransactional", err)
	}
	c = claimOf("no-such-table", "k", "me")
	var notFound *types.ResourceNotFoundException
	if _, err := c.Write(context.Background(), client); !errors.As(err, &notFound) {
		t.Errorf("a claim on no table = %v, want the SDK's error wrapped", err)
	}
}
