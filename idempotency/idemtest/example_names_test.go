package idemtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// A package whose tests need DynamoDB starts one DynamoDB Local for its
// test binary from its TestMain.
func ExampleMain() {
	// In a _test.go file:
	//
	//	func TestMain(m *testing.M) { idemtest.Main(m) }
	var testMain func(*testing.M) = idemtest.Main
	_ = testMain
}

// A test asks for a client of that DynamoDB Local and a table of its own,
// deleted when the test ends.
func ExampleClient() {
	_ = func(t *testing.T) {
		client := idemtest.Client(t)
		idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))})
		if err != nil {
			t.Fatal(err)
		}
		res, err := idempotency.Do(t.Context(), idem, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1,
			func(_ context.Context, n int) (int, error) { return n + 1, nil })
		if err != nil || res.Output != 2 {
			t.Fatalf("Do = %v, %v", res, err)
		}
	}
}

// Table makes a table of idempotency.TableInput's schema, with Time to
// Live on.
func ExampleTable() {
	_ = func(t *testing.T) {
		client := idemtest.Client(t)
		store := idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))
		_ = store
	}
}

// TableFrom makes a table of any schema, under a name unique to the test.
func ExampleTableFrom() {
	_ = func(t *testing.T) {
		client := idemtest.Client(t)
		name := idemtest.TableFrom(t, client, &dynamodb.CreateTableInput{
			TableName:            aws.String("accounts"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		if !strings.HasPrefix(name, "accounts-") {
			t.Fatalf("table %s", name)
		}
	}
}

// Endpoint is where the DynamoDB Local of this test binary answers, and
// NewClient a client of it.
func ExampleEndpoint() {
	endpoint, err := idemtest.Endpoint()
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(endpoint, "http://127.0.0.1:"))
	// Output:
	// true
}

// NewClient makes a client of a DynamoDB Local, with dummy credentials.
func ExampleNewClient() {
	endpoint, _ := idemtest.Endpoint()
	client := idemtest.NewClient(endpoint, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	_, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	fmt.Println(err)
	// Output:
	// <nil>
}

// Locate finds the installed DynamoDB Local.
func ExampleLocate() {
	dir, err := idemtest.Locate()
	if err != nil {
		panic(err)
	}
	_, err = os.Stat(filepath.Join(dir, "DynamoDBLocal.jar"))
	fmt.Println(err)
	// Output:
	// <nil>
}

// Start runs a DynamoDB Local of its own, stopped by Stop: for a program
// outside go test, or a test that needs a second server.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var srv *idemtest.Server
	srv, err := idemtest.Start(ctx)
	if err != nil {
		fmt.Println(errors.Is(err, idemtest.ErrJavaNotFound))
		return
	}
	defer func() { _ = srv.Stop() }()
	client := idemtest.NewClient(srv.Endpoint())
	_, _ = client.ListTables(ctx, &dynamodb.ListTablesInput{})
}

// A Clock moves only when told to.
func ExampleNewClock() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	clock.Advance(90 * time.Second)
	fmt.Println(clock.Now().Format(time.TimeOnly))
	clock.Set(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	fmt.Println(clock.Now().Format(time.DateOnly))
	// Output:
	// 12:01:30
	// 2026-03-02
}

// Op names a store operation, for call counts and injected faults.
func ExampleOp() {
	store := idemtest.NewMemoryStore()
	store.FailAfter(idemtest.OpSettle, errors.New("timeout"))
	idem, _ := idempotency.New(idempotency.Config{Store: store})
	_, err := idempotency.Do(context.Background(), idem, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1,
		func(_ context.Context, n int) (int, error) { return n, nil })
	e, _ := store.Peek("alice", "k1")
	// The settle was written, but its answer lost.
	fmt.Println(err != nil, e.Status)
	for _, op := range []idemtest.Op{idemtest.OpAcquire, idemtest.OpSettle, idemtest.OpRelease, idemtest.OpGet} {
		fmt.Println(op, store.Calls(op))
	}
	// Output:
	// true COMPLETED
	// Acquire 1
	// Settle 1
	// Release 0
	// Get 0
}

// A fake clock for a test against DynamoDB Local starts at the current
// time, so that no record it settles is already past its Time to Live.
func ExampleNow() {
	clock := idemtest.NewClock(idemtest.Now())
	fmt.Println(clock.Now().Before(time.Now()), time.Since(clock.Now()) < time.Minute)
	clock.Advance(48 * time.Hour)
	fmt.Println(clock.Now().After(time.Now()))
	// Output:
	// true true
	// true
}

// CountingClient counts the round trips a flow costs: a new key two, a
// duplicate one.
func ExampleCountingClient() {
	_ = func(t *testing.T) {
		client, calls := idemtest.CountingClient(t)
		idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))})
		if err != nil {
			t.Fatal(err)
		}
		calls.Store(0)
		for range 2 {
			_, _ = idempotency.Do(t.Context(), idem, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1,
				func(_ context.Context, n int) (int, error) { return n, nil })
		}
		if calls.Load() != 3 {
			t.Errorf("%d calls, want 3", calls.Load())
		}
	}
}

// LoseFirstReply shows what a store does when its write committed and
// the answer never came back: Do's acquisition, retried by the SDK, finds
// the record under its own lease and runs the function once.
func ExampleLoseFirstReply() {
	_ = func(t *testing.T) {
		client, attempts := idemtest.LoseFirstReply(t, "UpdateItem")
		idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))})
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		_, err = idempotency.Do(t.Context(), idem, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1,
			func(_ context.Context, n int) (int, error) { runs++; return n, nil })
		if err != nil || runs != 1 || attempts.Load() < 2 {
			t.Errorf("Do = %v after %d runs and %d UpdateItem attempts, want one run after a retried acquisition", err, runs, attempts.Load())
		}
	}
}
