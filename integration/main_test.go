//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// Environment variables of the deployed mode (see the package doc).
const (
	envAPIURL           = "API_URL"
	envLedgerTable      = "LEDGER_TABLE"
	envIdempotencyTable = "IDEMPOTENCY_TABLE"
	envStateMachineArn  = "STATE_MACHINE_ARN"
	envSecondProfile    = "SECOND_AWS_PROFILE"
	envMaxAmount        = "MAX_TRANSFER_AMOUNT"
	envOwnership        = "ACCOUNT_OWNERSHIP"
	envLog              = "INTEGRATION_LOG"
)

// defaultMaxAmount is the template's MaxTransferAmount default; the local
// stack is started with it explicitly.
const defaultMaxAmount = 100000000

// localStackTimeScale shrinks the workflow's retry intervals and the event
// bus's backoff so that retried legs settle quickly. A leg's 30 s
// TimeoutSeconds becomes 3 s: well above what a leg takes on a busy 2-core
// machine under -race (at 0.01, 0.3 s, a loaded machine timed legs out and
// reversed transfers the tests expect to complete).
const localStackTimeScale = 0.1

// tg is the stack under test, set up by TestMain.
var tg *target

// runID makes this run's account ids, keys and local caller names unique,
// so runs against a shared deployed stack never meet.
var runID = randomHex(4)

// target is the stack the tests drive: the API's base URL, who may call
// it, and direct access to its tables and executions.
type target struct {
	local bool
	// api is the base URL, with the stage when deployed.
	api *url.URL
	// basePath is api's path: the prefix of every Location header.
	basePath  string
	maxAmount int64
	// ownership: the stack's AccountOwnership is enforce.
	ownership bool

	db           *dynamodb.Client
	ledger       *ledger.Ledger
	records      *reservation.Store
	recordsTable string
	ledgerTable  string
	// executions counts the executions of a key; nil when the deployed
	// stack's state machine is not known.
	executions *executionIndex

	// first is the caller of most cases.
	first *caller
	// second returns a caller other than first, or a reason why there is
	// none.
	second func(ctx context.Context) (*caller, string, error)
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx := context.Background()
	if apiURL := os.Getenv(envAPIURL); apiURL != "" {
		var err error
		if tg, err = deployedTarget(ctx, apiURL); err != nil {
			fmt.Fprintf(os.Stderr, "integration: deployed stack at %s: %v\n", apiURL, err)
			return 1
		}
		return cleanUpAfter(m.Run())
	}

	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	st, err := stack.Start(startCtx, stack.Options{
		TimeScale: localStackTimeScale,
		// The suite's callers send more than a caller's rate limit
		// within a minute; the limit has its own test
		// (internal/local/stack TestCallerRateLimit).
		Parameters: map[string]string{"MaxTransferAmount": strconv.Itoa(defaultMaxAmount), "CallerRateLimit": "0"},
		Logger:     logger(),
	})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: start the local stack: %v\n", err)
		return 1
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := st.Close(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "integration: stop the local stack: %v\n", err)
			}
		})
	}
	// Close runs when the tests end, pass or fail, when anything below
	// panics, and on SIGINT/SIGTERM (which would otherwise end the process
	// without running deferred calls).
	defer stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "integration: %v: stopping the local stack\n", sig)
		stop()
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()

	if tg, err = localTarget(st); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	return cleanUpAfter(m.Run())
}

// localTarget drives the in-process stack. Callers are named by bearer
// token.
func localTarget(st *stack.Stack) (*target, error) {
	api, err := url.Parse(st.APIURL)
	if err != nil {
		return nil, fmt.Errorf("API URL %q: %w", st.APIURL, err)
	}
	machine := st.StateMachines["TransferStateMachine"]
	if machine == "" {
		return nil, fmt.Errorf("the local stack has no TransferStateMachine (have %v)", st.StateMachines)
	}
	t := &target{local: true, api: api, basePath: strings.TrimSuffix(api.Path, "/"), maxAmount: defaultMaxAmount, ownership: true}
	if err := t.useTables(st.AWS, st.Tables["LedgerTable"], st.Tables["IdempotencyTable"]); err != nil {
		return nil, err
	}
	t.executions = &executionIndex{client: sfn.NewFromConfig(st.AWS), machine: machine}
	t.first = bearerCaller("it-" + runID + "-a")
	t.second = func(context.Context) (*caller, string, error) {
		return bearerCaller("it-" + runID + "-b"), "", nil
	}
	return t, nil
}

// deployedTarget drives a deployed stack with SigV4-signed requests.
func deployedTarget(ctx context.Context, apiURL string) (*target, error) {
	api, err := url.Parse(strings.TrimSuffix(apiURL, "/"))
	if err != nil || api.Scheme == "" || api.Host == "" {
		return nil, fmt.Errorf("%s=%q is not an absolute URL", envAPIURL, apiURL)
	}
	ledgerTable, recordsTable := os.Getenv(envLedgerTable), os.Getenv(envIdempotencyTable)
	if ledgerTable == "" || recordsTable == "" {
		return nil, fmt.Errorf("%s and %s must name the stack's tables (outputs LedgerTableName, IdempotencyTableName)", envLedgerTable, envIdempotencyTable)
	}
	maxAmount := int64(defaultMaxAmount)
	if v := os.Getenv(envMaxAmount); v != "" {
		if maxAmount, err = strconv.ParseInt(v, 10, 64); err != nil || maxAmount <= 0 {
			return nil, fmt.Errorf("%s=%q is not a positive integer", envMaxAmount, v)
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("AWS_REGION is not set: it is the region requests are signed for")
	}
	t := &target{api: api, basePath: strings.TrimSuffix(api.Path, "/"), maxAmount: maxAmount}
	switch v := os.Getenv(envOwnership); v {
	case "", "enforce":
		t.ownership = true
	case "off":
	default:
		return nil, fmt.Errorf("%s=%q is not enforce or off", envOwnership, v)
	}
	if err := t.useTables(cfg, ledgerTable, recordsTable); err != nil {
		return nil, err
	}
	if machine := os.Getenv(envStateMachineArn); machine != "" {
		// Executions started before this run are not ours; a margin
		// covers clock skew.
		t.executions = &executionIndex{client: sfn.NewFromConfig(cfg), machine: machine, since: time.Now().Add(-5 * time.Minute)}
	}
	if t.first, err = signingCaller(ctx, "default credentials", cfg); err != nil {
		return nil, err
	}
	t.second = func(ctx context.Context) (*caller, string, error) {
		profile := os.Getenv(envSecondProfile)
		if profile == "" {
			return nil, "a second caller needs a second IAM principal: set " + envSecondProfile + " to its shared-config profile", nil
		}
		cfg2, err := config.LoadDefaultConfig(ctx, config.WithSharedConfigProfile(profile), config.WithRegion(cfg.Region))
		if err != nil {
			return nil, "", fmt.Errorf("load profile %s: %w", profile, err)
		}
		c, err := signingCaller(ctx, "profile "+profile, cfg2)
		if err != nil {
			return nil, "", err
		}
		if c.scope == t.first.scope {
			return nil, "", fmt.Errorf("profile %s is the same principal as the default credentials (%s)", profile, c.scope)
		}
		return c, "", nil
	}
	return t, nil
}

func (t *target) useTables(cfg aws.Config, ledgerTable, recordsTable string) error {
	t.db = dynamodb.NewFromConfig(cfg)
	led, err := ledger.New(t.db, ledger.Config{LedgerTable: ledgerTable, IdempotencyTable: recordsTable})
	if err != nil {
		return err
	}
	t.ledger = led
	t.records = reservation.NewStore(t.db, recordsTable)
	t.recordsTable = recordsTable
	t.ledgerTable = ledgerTable
	return nil
}

// logger is the local stack's logger: stderr at the level of
// INTEGRATION_LOG, else nothing.
func logger() *slog.Logger {
	v := os.Getenv(envLog)
	if v == "" {
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(v)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
