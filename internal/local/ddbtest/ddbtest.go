// Package ddbtest gives tests a real DynamoDB: one DynamoDB Local per test
// binary, and per-test copies of this project's tables created from
// template.yaml.
//
//	func TestMain(m *testing.M) { ddbtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		client := ddbtest.Client(t)
//		tables := ddbtest.Tables(t, client)
//		ledgerTable := tables["LedgerTable"] // physical name for this test
//		...
//	}
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/sdklog"
)

// Environment variables.
const (
	// EnvEndpoint is the SDK's DynamoDB endpoint variable. When it is set
	// before Main (a shared server started by the Makefile, say), Main
	// uses that server and starts none.
	EnvEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"
	// EnvLog sets the level ("debug", "info", ...) of the server's log on
	// stderr; unset, it is discarded.
	EnvLog = "DDBTEST_LOG"
)

// TemplateFile is the template the tables come from, at the module root.
const TemplateFile = "template.yaml"

// server is the DynamoDB Local that Main started, nil when it reused
// EnvEndpoint.
var server *ddblocal.Server

// Main runs the tests of a package that needs DynamoDB. Call it from
// TestMain; it does not return. It sets AWS_REGION (us-east-1) and dummy
// credentials when they are unset, starts an in-memory DynamoDB Local and
// points AWS_ENDPOINT_URL_DYNAMODB at it unless that is already set, runs
// the tests and exits with their code. The server is stopped on return,
// on a panic in TestMain and on SIGINT/SIGTERM; if the test binary dies
// any other way (a panicking test, a timeout) the kernel kills it.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	setDefault("AWS_REGION", "us-east-1")
	setDefault("AWS_ACCESS_KEY_ID", "local")
	setDefault("AWS_SECRET_ACCESS_KEY", "local")
	setDefault("AWS_EC2_METADATA_DISABLED", "true")
	if os.Getenv(EnvEndpoint) != "" {
		return m.Run()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	srv, err := ddblocal.Start(ctx, ddblocal.Options{Logger: logger()})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ddbtest: cannot start DynamoDB Local: %v\n", err)
		return 1
	}
	server = srv
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "ddbtest: %v\n", err)
		}
	}()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		_ = srv.Stop()
		code := 1
		if s, isSys := sig.(syscall.Signal); isSys {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()

	if err := os.Setenv(EnvEndpoint, srv.Endpoint()); err != nil {
		fmt.Fprintf(os.Stderr, "ddbtest: %v\n", err)
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

func logger() *slog.Logger {
	lvl := os.Getenv(EnvLog)
	if lvl == "" {
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(lvl)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// ErrNotLocal: the DynamoDB endpoint is not on this machine.
var ErrNotLocal = errors.New("DynamoDB endpoint is not a loopback address")

// checkEndpoint refuses anything but a loopback endpoint, so tests that
// create and delete tables can never reach a real AWS account.
func checkEndpoint(endpoint string) error {
	if endpoint == "" {
		return fmt.Errorf("%s is not set: call ddbtest.Main(m) from TestMain", EnvEndpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", EnvEndpoint, endpoint, err)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s=%q: %w", EnvEndpoint, endpoint, ErrNotLocal)
}

// Client returns a DynamoDB client from the SDK's default configuration,
// which reads AWS_ENDPOINT_URL_DYNAMODB. It fails the test unless that
// endpoint is on the loopback interface.
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	if err := checkEndpoint(os.Getenv(EnvEndpoint)); err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatalf("ddbtest: load AWS config: %v", err)
	}
	cfg.Logger = sdklog.New(logger())
	return dynamodb.NewFromConfig(cfg)
}

// TableNames maps the logical IDs of the template's tables
// ("IdempotencyTable", "LedgerTable") to the physical names created for
// one test.
type TableNames map[string]string

// Tables creates every AWS::DynamoDB::Table of the project's template.yaml
// (found at the module root) under names unique to this call, waits until
// they are ACTIVE with TTL enabled as declared, and deletes them when the
// test ends.
func Tables(t testing.TB, client *dynamodb.Client) TableNames {
	t.Helper()
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	return TablesFrom(t, client, filepath.Join(root, TemplateFile))
}

// TablesFrom is Tables for another template file.
func TablesFrom(t testing.TB, client *dynamodb.Client, templatePath string) TableNames {
	t.Helper()
	tables, err := templateTables(templatePath)
	if err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	suffix := uniqueSuffix(t)
	names := TableNames{}
	for _, tb := range tables {
		names[tb.LogicalID] = aws.ToString(tb.Input.TableName) + "-" + suffix
	}
	// Registered before creating, so a partial failure is cleaned up too.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, name := range names {
			_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			var notFound *types.ResourceNotFoundException
			if err != nil && !errors.As(err, &notFound) {
				t.Errorf("ddbtest: delete table %s: %v", name, err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := cfn.CreateTables(ctx, client, tables, func(tb cfn.Table) string { return names[tb.LogicalID] }); err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	return names
}

var (
	cacheMu sync.Mutex
	cache   = map[string][]cfn.Table{}
)

// templateTables parses a template once per test binary.
func templateTables(path string) ([]cfn.Table, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if tables, ok := cache[path]; ok {
		return tables, nil
	}
	tmpl, err := cfn.Load(path)
	if err != nil {
		return nil, err
	}
	tables, err := tmpl.Tables(cfn.Env{Region: os.Getenv("AWS_REGION")})
	if err != nil {
		return nil, err
	}
	cache[path] = tables
	return tables, nil
}

// maxTestNameInSuffix keeps table names far below DynamoDB's 255
// characters.
const maxTestNameInSuffix = 80

// uniqueSuffix is the test name (for reading the server's state when
// debugging) and random hex (for uniqueness across calls, tests and test
// binaries sharing a server), in the characters table names allow.
func uniqueSuffix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > maxTestNameInSuffix {
		name = name[:maxTestNameInSuffix]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}
