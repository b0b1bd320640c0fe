package ttl_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/ttl"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// now is the emulator's clock in every test.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func epoch(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

// newTable creates a table keyed by pk (S) and sk (N) and puts items,
// each named by its pk, with the given expiresAt value (nil: none).
func newTable(t *testing.T, client *dynamodb.Client, items map[string]types.AttributeValue) string {
	t.Helper()
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "ttl-" + hex.EncodeToString(b[:])
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	for pk, v := range items {
		item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberN{Value: "1"}}
		if v != nil {
			item["expiresAt"] = v
		}
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

func remaining(t *testing.T, client *dynamodb.Client, table string) []string {
	t.Helper()
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var pks []string
	for _, it := range out.Items {
		pks = append(pks, it["pk"].(*types.AttributeValueMemberS).Value)
	}
	slices.Sort(pks)
	return pks
}

func TestRunNow(t *testing.T) {
	client := ddbtest.Client(t)
	items := map[string]types.AttributeValue{
		"expired-hour":   epoch(now.Add(-time.Hour)),
		"expired-now":    epoch(now),
		"expired-minute": epoch(now.Add(-time.Minute)),
		"future":         epoch(now.Add(time.Minute)),
		"fractional":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix()-10, 10) + ".5"},
		"no-attribute":   nil,
		"string":         &types.AttributeValueMemberS{Value: strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)},
		"six-years-ago":  epoch(now.AddDate(-6, 0, 0)),
		"milliseconds":   &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10)},
	}
	tests := []struct {
		name        string
		lag         time.Duration
		wantDeleted int
		wantLeft    []string
	}{
		{"no lag", 0, 4, []string{"future", "milliseconds", "no-attribute", "six-years-ago", "string"}},
		{"lag of 30 minutes", 30 * time.Minute, 1, []string{"expired-minute", "expired-now", "fractional", "future", "milliseconds", "no-attribute", "six-years-ago", "string"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t, client, items)
			e := ttl.New(client, []ttl.Table{{Name: table, Attribute: "expiresAt"}}, ttl.Options{Lag: tc.lag, Now: func() time.Time { return now }})
			n, err := e.RunNow(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantDeleted {
				t.Errorf("deleted %d, want %d", n, tc.wantDeleted)
			}
			if got := remaining(t, client, table); !slices.Equal(got, tc.wantLeft) {
				t.Errorf("left %v, want %v", got, tc.wantLeft)
			}
			if n, err := e.RunNow(context.Background()); err != nil || n != 0 {
				t.Errorf("second run deleted %d, %v; want 0", n, err)
			}
		})
	}
}

// racingClient updates the item's TTL between the scan and the delete, as
// a concurrent writer would.
type racingClient struct {
	*dynamodb.Client
	update func(ctx context.Context) error
	raced  atomic.Bool
}

func (c *racingClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if !c.raced.Swap(true) {
		if err := c.update(ctx); err != nil {
			return nil, err
		}
	}
	return c.Client.DeleteItem(ctx, in, optFns...)
}

func TestConcurrentUpdateWins(t *testing.T) {
	client := ddbtest.Client(t)
	tests := []struct {
		name   string
		update string
	}{
		{"expiry moved", "SET expiresAt = :later"},
		{"expiry removed", "REMOVE expiresAt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t, client, map[string]types.AttributeValue{"item": epoch(now.Add(-time.Hour))})
			rc := &racingClient{Client: client, update: func(ctx context.Context) error {
				in := &dynamodb.UpdateItemInput{
					TableName:        aws.String(table),
					Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "item"}, "sk": &types.AttributeValueMemberN{Value: "1"}},
					UpdateExpression: aws.String(tc.update),
				}
				if tc.update != "REMOVE expiresAt" {
					in.ExpressionAttributeValues = map[string]types.AttributeValue{":later": epoch(now.Add(time.Hour))}
				}
				_, err := client.UpdateItem(ctx, in)
				return err
			}}
			e := ttl.New(rc, []ttl.Table{{Name: table, Attribute: "expiresAt"}}, ttl.Options{Now: func() time.Time { return now }})
			n, err := e.RunNow(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !rc.raced.Load() {
				t.Fatal("the emulator never tried to delete the expired item")
			}
			if n != 0 {
				t.Errorf("deleted %d items, want 0: the update should win", n)
			}
			if got := remaining(t, client, table); !slices.Equal(got, []string{"item"}) {
				t.Errorf("left %v, want [item]", got)
			}
		})
	}
}

func TestStartClose(t *testing.T) {
	client := ddbtest.Client(t)
	table := newTable(t, client, map[string]types.AttributeValue{"item": epoch(now.Add(-time.Hour))})
	e := ttl.New(client, []ttl.Table{{Name: table, Attribute: "expiresAt"}}, ttl.Options{Interval: time.Millisecond, Now: func() time.Time { return now }})
	e.Start()
	defer e.Close()
	deadline := time.Now().Add(30 * time.Second)
	for len(remaining(t, client, table)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the loop did not delete the expired item")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.Close()
	e.Close() // idempotent
}
