// Package ledgertest runs a ledger on fresh tables of DynamoDB Local for the
// tests of the ledger and of its callers: accounts, idempotency records and
// transfers in a given state, and snapshots of both tables to prove that an
// operation wrote nothing.
package ledgertest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// Env is a ledger on its own pair of tables.
type Env struct {
	Client           *dynamodb.Client
	LedgerTable      string
	IdempotencyTable string
	Ledger           *ledger.Ledger
}

// New creates the template's tables with unique names on the DynamoDB Local
// of ddbtest (the test binary's TestMain must call ddbtest.Main) and a
// ledger on them.
func New(t testing.TB) *Env {
	t.Helper()
	client := ddbtest.Client(t)
	names := ddbtest.Tables(t, client)
	e := &Env{Client: client, LedgerTable: names["LedgerTable"], IdempotencyTable: names["IdempotencyTable"]}
	l, err := ledger.New(client, ledger.Config{LedgerTable: e.LedgerTable, IdempotencyTable: e.IdempotencyTable})
	if err != nil {
		t.Fatalf("ledger.New: %v", err)
	}
	e.Ledger = l
	return e
}

var seq atomic.Int64

// ID returns an identifier unique within the test binary.
func ID(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// Owner is the caller scope that owns the accounts OpenAccount opens and
// the transfers NewTransfer makes.
const Owner = "iam:arn:aws:iam::123456789012:user/ledgertest"

// OpenAccount opens an account of Owner and fails the test unless it was
// created.
func (e *Env) OpenAccount(t testing.TB, id, currency string, balance int64) {
	t.Helper()
	e.OpenAccountOf(t, id, Owner, currency, balance)
}

// OpenAccountOf opens an account of owner and fails the test unless it was
// created.
func (e *Env) OpenAccountOf(t testing.TB, id, owner, currency string, balance int64) {
	t.Helper()
	created, err := e.Ledger.OpenAccount(context.Background(), id, owner, currency, balance)
	if err != nil || !created {
		t.Fatalf("OpenAccount(%s, %s, %s, %d) = %v, %v; want true, nil", id, owner, currency, balance, created, err)
	}
}

// Account reads an account, failing the test on any error.
func (e *Env) Account(t testing.TB, id string) ledger.Account {
	t.Helper()
	a, err := e.Ledger.Account(context.Background(), id)
	if err != nil {
		t.Fatalf("Account(%s): %v", id, err)
	}
	return a
}

// Balance is the account's balance.
func (e *Env) Balance(t testing.TB, id string) int64 {
	t.Helper()
	return e.Account(t, id).Balance
}

// SetRecord sets the status and the transfer of the idempotency record
// key, creating the record if there is none; the rest of it (the
// transfer's payload attributes, its scope) is kept.
func (e *Env) SetRecord(t testing.TB, key string, status reservation.Status, transferID string) {
	t.Helper()
	if err := e.PutRecord(context.Background(), key, status, transferID); err != nil {
		t.Fatal(err)
	}
}

// PutRecord is SetRecord for goroutines that may not stop the test.
func (e *Env) PutRecord(ctx context.Context, key string, status reservation.Status, transferID string) error {
	if _, err := e.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(e.IdempotencyTable),
		Key:              reservation.KeyOf(key),
		UpdateExpression: aws.String("SET #status = :status, #resourceId = :id, #scope = if_not_exists(#scope, :scope), #createdAt = if_not_exists(#createdAt, :createdAt), #expiresAt = :expiresAt"),
		ExpressionAttributeNames: map[string]string{
			"#status": reservation.AttrStatus, "#resourceId": reservation.AttrResourceID, "#scope": reservation.AttrScope,
			"#createdAt": reservation.AttrCreatedAt, "#expiresAt": reservation.AttrExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":status":    &types.AttributeValueMemberS{Value: string(status)},
			":id":        &types.AttributeValueMemberS{Value: transferID},
			":scope":     &types.AttributeValueMemberS{Value: Owner},
			":createdAt": &types.AttributeValueMemberS{Value: "2026-01-01T00:00:00.000Z"},
			":expiresAt": &types.AttributeValueMemberN{Value: "1893456000"},
		},
	}); err != nil {
		return fmt.Errorf("set record %s: %w", key, err)
	}
	return nil
}

// DeleteRecord removes the idempotency record key.
func (e *Env) DeleteRecord(t testing.TB, key string) {
	t.Helper()
	if _, err := e.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(e.IdempotencyTable),
		Key:       reservation.KeyOf(key),
	}); err != nil {
		t.Fatalf("delete record %s: %v", key, err)
	}
}

// Transfer is a transfer under test.
type Transfer struct {
	ID        string
	RecordKey string
	// Scope is the caller scope its record holds: Owner.
	Scope       string
	Source      string
	Destination string
	Amount      int64
	Currency    string
}

// Leg is the transfer's leg of the given kind, posted to the source for
// DEBIT and REFUND and to the destination for CREDIT.
func (tr Transfer) Leg(k ledger.Kind) ledger.Leg {
	l := ledger.Leg{
		Kind:                  k,
		TransferID:            tr.ID,
		RecordKey:             tr.RecordKey,
		AccountID:             tr.Source,
		CounterpartyAccountID: tr.Destination,
		Amount:                tr.Amount,
		Currency:              tr.Currency,
	}
	if k == ledger.Credit {
		l.AccountID, l.CounterpartyAccountID = tr.Destination, tr.Source
	}
	return l
}

// NewTransfer returns a transfer of Owner with fresh ids whose idempotency
// record is IN_PROGRESS and carries the transfer's payload
// (ledger.RecordAttributes), as the API stores it.
func (e *Env) NewTransfer(t testing.TB, source, destination string, amount int64, currency string) Transfer {
	t.Helper()
	tr := Transfer{
		ID:          ID("tr"),
		RecordKey:   ID("key"),
		Scope:       Owner,
		Source:      source,
		Destination: destination,
		Amount:      amount,
		Currency:    currency,
	}
	item, err := attributevalue.MarshalMap(reservation.Record{
		Key:        tr.RecordKey,
		Scope:      tr.Scope,
		Status:     reservation.StatusInProgress,
		ResourceID: tr.ID,
		CreatedAt:  "2026-01-01T00:00:00.000Z",
		ExpiresAt:  1893456000,
	})
	if err != nil {
		t.Fatalf("marshal record: %v", err)
	}
	maps.Copy(item, ledger.RecordAttributes(source, destination, amount, currency))
	if _, err := e.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(e.IdempotencyTable),
		Item:      item,
	}); err != nil {
		t.Fatalf("put record %s: %v", tr.RecordKey, err)
	}
	return tr
}

// SetAttempt sets the record's current attempt, as the reaper does when it
// resumes the transfer.
func (e *Env) SetAttempt(t testing.TB, key string, attempt int64) {
	t.Helper()
	if _, err := e.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.IdempotencyTable),
		Key:                       reservation.KeyOf(key),
		UpdateExpression:          aws.String("SET #a = :a"),
		ExpressionAttributeNames:  map[string]string{"#a": reservation.AttrAttempt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: strconv.FormatInt(attempt, 10)}},
	}); err != nil {
		t.Fatalf("set the attempt of %s: %v", key, err)
	}
}

// SetPayload stores tr's accounts, amount and currency in its record, as
// if its key had been reserved for them: the fence then lets legs of that
// payload through, to the ledger's other conditions.
func (e *Env) SetPayload(t testing.TB, tr Transfer) {
	t.Helper()
	set := "SET"
	names, values := map[string]string{}, map[string]types.AttributeValue{}
	i := 0
	for name, v := range ledger.RecordAttributes(tr.Source, tr.Destination, tr.Amount, tr.Currency) {
		if i > 0 {
			set += ","
		}
		set += fmt.Sprintf(" #a%d = :v%d", i, i)
		names[fmt.Sprintf("#a%d", i)], values[fmt.Sprintf(":v%d", i)] = name, v
		i++
	}
	if _, err := e.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.IdempotencyTable),
		Key:                       reservation.KeyOf(tr.RecordKey),
		UpdateExpression:          aws.String(set),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}); err != nil {
		t.Fatalf("set the payload of %s: %v", tr.RecordKey, err)
	}
}

// Post posts the transfer's leg and fails the test on any error.
func (e *Env) Post(t testing.TB, tr Transfer, k ledger.Kind) ledger.Entry {
	t.Helper()
	entry, err := e.Ledger.Post(context.Background(), tr.Leg(k))
	if err != nil {
		t.Fatalf("Post %s of %s: %v", k, tr.ID, err)
	}
	return entry
}

// Snapshot is every item of both tables, keyed by table and primary key.
type Snapshot map[string]map[string]any

// Snapshot scans both tables.
func (e *Env) Snapshot(t testing.TB) Snapshot {
	t.Helper()
	s := Snapshot{}
	for _, table := range []string{e.LedgerTable, e.IdempotencyTable} {
		in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
		for {
			out, err := e.Client.Scan(context.Background(), in)
			if err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			for _, item := range out.Items {
				var m map[string]any
				if err := attributevalue.UnmarshalMapWithOptions(item, &m, func(o *attributevalue.DecoderOptions) {
					o.UseNumber = true
				}); err != nil {
					t.Fatalf("decode item of %s: %v", table, err)
				}
				s[fmt.Sprintf("%s|%v|%v", table, m["pk"], m["sk"])] = m
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return s
}

// Diff describes how after differs from s; empty when they are equal.
func (s Snapshot) Diff(after Snapshot) string {
	var b strings.Builder
	keys := slices.Sorted(maps.Keys(s))
	for _, k := range keys {
		a, ok := after[k]
		switch {
		case !ok:
			fmt.Fprintf(&b, "deleted %s\n", k)
		case !reflect.DeepEqual(s[k], a):
			fmt.Fprintf(&b, "changed %s: %v -> %v\n", k, s[k], a)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := s[k]; !ok {
			fmt.Fprintf(&b, "added %s: %v\n", k, after[k])
		}
	}
	return b.String()
}
