// Command load drives a running stack over HTTP with concurrent clients:
// new transfers, duplicates (an earlier key with its body), reused keys
// (an earlier key with another body) and transfers the source cannot
// pay. Then it waits for every accepted transfer to settle and checks
// that the money over the accounts it used is conserved. It exits 1 when
// a check fails, naming it, and 2 when it could not run.
//
//	load                                   # make local on http://127.0.0.1:3000, caller local
//	load -clients 32 -rate 200 -duration 1m -dup 0.2 -reuse 0.05
//	API_URL=https://....execute-api.eu-west-1.amazonaws.com/prod load -accounts a,b,c
//
// With -url on another host than this machine (or API_URL), requests are
// SigV4-signed with the SDK's default credentials for execute-api in
// AWS_REGION; on loopback they carry "Authorization: Bearer CALLER", as
// the local stack expects.
//
// The accounts must be the caller's. -open N opens N fresh ones first,
// writing them to the stack's tables as cmd/seed does: DynamoDB from the
// SDK's configuration or -ddb-endpoint (make local prints its DynamoDB
// endpoint; LOCAL_FLAGS='-ddb-port 8000' fixes it), the tables from
// -ledger-table/-idempotency-table, LEDGER_TABLE/IDEMPOTENCY_TABLE, else
// the local stack's names.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/term"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/seed"
)

// Caps that keep every run bounded whatever the flags say.
const (
	maxDuration = time.Hour
	maxCount    = 10_000_000
	maxClients  = 1024
	maxOpen     = 1000
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line.
type options struct {
	url, auth, caller, owner       string
	clients                        int
	rate                           float64
	duration                       time.Duration
	count                          int64
	dup, reuse, insufficient       float64
	accounts                       string
	open                           int
	openBalance                    int64
	currency                       string
	ddbEndpoint, ledgerTable, idem string
	seed                           uint64
	maxAmount, maxTransfer         int64
	requestTimeout, settleTimeout  time.Duration
	quiet                          bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defURL := os.Getenv("API_URL")
	if defURL == "" {
		defURL = "http://127.0.0.1:3000"
	}
	fs.StringVar(&o.url, "url", defURL, "the API's base URL, with the stage when deployed (default $API_URL, else make local's)")
	fs.StringVar(&o.auth, "auth", "auto", "bearer (the local stack), sigv4 (a deployed one), or auto: bearer on loopback, sigv4 elsewhere")
	fs.StringVar(&o.caller, "caller", "local", "the bearer caller name (local stack)")
	fs.IntVar(&o.clients, "clients", 8, "concurrent clients")
	fs.Float64Var(&o.rate, "rate", 0, "target requests per second over all clients; 0: as fast as they go")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send (at most "+maxDuration.String()+")")
	fs.Int64Var(&o.count, "count", 0, "how many requests to send; 0: as many as -duration allows. The run ends at whichever comes first")
	fs.Float64Var(&o.dup, "dup", 0.1, "share of duplicates: an earlier key with its body")
	fs.Float64Var(&o.reuse, "reuse", 0.02, "share of reused keys: an earlier key with another body (expects 422 idempotency_key_reused)")
	fs.Float64Var(&o.insufficient, "insufficient", 0.05, "share of new transfers the source cannot pay (they end FAILED insufficient_funds)")
	fs.StringVar(&o.accounts, "accounts", "demo-alice,demo-bob", "comma-separated accounts of the caller to move money between")
	fs.IntVar(&o.open, "open", 0, "open N fresh accounts of the caller in the stack's tables and use them instead of -accounts")
	fs.Int64Var(&o.openBalance, "open-balance", 100000, "opening balance of each -open account, minor units")
	fs.StringVar(&o.currency, "currency", "EUR", "currency of the -open accounts")
	fs.StringVar(&o.owner, "owner", "", "owner scope of the -open accounts (default: the caller's, from -caller or STS)")
	fs.StringVar(&o.ddbEndpoint, "ddb-endpoint", "", "DynamoDB endpoint for -open, e.g. make local's http://127.0.0.1:PORT (default: the SDK's)")
	fs.StringVar(&o.ledgerTable, "ledger-table", envOr("LEDGER_TABLE", "LedgerTable"), "ledger table for -open")
	fs.StringVar(&o.idem, "idempotency-table", envOr("IDEMPOTENCY_TABLE", "IdempotencyTable"), "idempotency table for -open")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of each client's sequence of requests; 0: a random one (printed)")
	fs.Int64Var(&o.maxAmount, "max-amount", 100, "a new transfer moves 1 to N minor units")
	fs.Int64Var(&o.maxTransfer, "max-transfer", 100000000, "the stack's MaxTransferAmount: the amount of an insufficient-funds transfer is below it")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 30*time.Second, "timeout of one request")
	fs.DurationVar(&o.settleTimeout, "settle-timeout", 2*time.Minute, "how long to wait for the transfers to settle after the load")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar (also when stdout is not a terminal)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.clients < 1 || o.clients > maxClients:
		return o, fmt.Errorf("-clients %d: want 1 to %d", o.clients, maxClients)
	case !(o.rate >= 0):
		return o, fmt.Errorf("-rate %v: want 0 or more", o.rate)
	case o.duration < 0 || o.duration > maxDuration:
		return o, fmt.Errorf("-duration %s: want up to %s", o.duration, maxDuration)
	case o.count < 0 || o.count > maxCount:
		return o, fmt.Errorf("-count %d: want up to %d", o.count, maxCount)
	case o.duration == 0 && o.count == 0:
		return o, errors.New("-duration 0 needs a -count")
	case o.open < 0 || o.open > maxOpen:
		return o, fmt.Errorf("-open %d: want up to %d", o.open, maxOpen)
	case o.maxAmount < 1 || o.maxTransfer < 1:
		return o, errors.New("-max-amount and -max-transfer must be positive")
	case o.requestTimeout <= 0 || o.settleTimeout <= 0:
		return o, errors.New("-request-timeout and -settle-timeout must be positive")
	}
	if err := (mix{Duplicate: o.dup, Reuse: o.reuse, Insufficient: o.insufficient}).validate(); err != nil {
		return o, err
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	ctx := context.Background()
	cfg, err := setup(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	if f, ok := stdout.(*os.File); ok && !o.quiet && term.IsTerminal(int(f.Fd())) {
		cfg.progress = stdout
	}
	fmt.Fprintf(stdout, "load: %s, %d clients, %s, seed %d, accounts %s\n",
		cfg.base, cfg.clients, pace(cfg), cfg.seed, strings.Join(cfg.accounts, ","))
	// Ctrl-C ends the load phase; the settling and the checks still run
	// (a second Ctrl-C ends the process).
	stop, cancel := signal.NotifyContext(ctx, os.Interrupt)
	defer cancel()
	go func() { <-stop.Done(); cancel() }()
	res, err := load(ctx, stop, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	// The whole summary, failures included, goes to stdout: one stream
	// to read or to redirect.
	report(stdout, cfg, res)
	if !res.ok() {
		return 1
	}
	return 0
}

func pace(cfg config) string {
	s := "as fast as possible"
	if cfg.rate > 0 {
		s = fmt.Sprintf("%g req/s", cfg.rate)
	}
	if cfg.count < maxCount {
		s += fmt.Sprintf(", %d requests", cfg.count)
	}
	return s + ", at most " + cfg.duration.String()
}

// setup turns the options into a run: who calls, which accounts.
func setup(ctx context.Context, o options, stderr io.Writer) (config, error) {
	base, err := url.Parse(strings.TrimSuffix(o.url, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return config{}, fmt.Errorf("-url %q is not an http(s) URL", o.url)
	}
	cfg := config{
		base: base, clients: o.clients, rate: o.rate, duration: o.duration, count: o.count,
		mix:  mix{Duplicate: o.dup, Reuse: o.reuse, Insufficient: o.insufficient},
		seed: o.seed, runID: randomHex(4), maxAmount: o.maxAmount, maxTransfer: o.maxTransfer,
		requestTimeout: o.requestTimeout, settleTimeout: o.settleTimeout, log: stderr,
	}
	if cfg.duration == 0 {
		cfg.duration = maxDuration
	}
	if cfg.count == 0 {
		cfg.count = maxCount
	}
	for cfg.seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.seed = binary.LittleEndian.Uint64(b[:])
	}
	auth := o.auth
	if auth == "auto" {
		auth = "sigv4"
		if isLoopback(base) {
			auth = "bearer"
		}
	}
	var scope func(context.Context) (string, error)
	switch auth {
	case "bearer":
		var s string
		cfg.auth, s = bearer(o.caller)
		scope = func(context.Context) (string, error) { return s, nil }
	case "sigv4":
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return config{}, fmt.Errorf("load AWS configuration: %w", err)
		}
		if awsCfg.Region == "" {
			return config{}, errors.New("AWS_REGION is not set: it is the region requests are signed for")
		}
		cfg.auth, scope = sigv4(awsCfg)
	default:
		return config{}, fmt.Errorf("-auth %q: want bearer, sigv4 or auto", o.auth)
	}
	if o.open == 0 {
		for a := range strings.SplitSeq(o.accounts, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cfg.accounts = append(cfg.accounts, a)
			}
		}
		if len(cfg.accounts) < 2 {
			return config{}, fmt.Errorf("-accounts %q: want at least two", o.accounts)
		}
		return cfg, nil
	}
	owner := o.owner
	if owner == "" {
		if owner, err = scope(ctx); err != nil {
			return config{}, err
		}
	}
	cfg.accounts, err = openAccounts(ctx, o, owner, cfg.runID, stderr)
	return cfg, err
}

// openAccounts opens o.open fresh accounts of owner through cmd/seed's
// package.
func openAccounts(ctx context.Context, o options, owner, runID string, log io.Writer) ([]string, error) {
	if o.open < 2 {
		return nil, errors.New("-open needs at least 2 accounts")
	}
	var opts []func(*awsconfig.LoadOptions) error
	if o.ddbEndpoint != "" {
		// DynamoDB Local takes any credentials; the region names its tables.
		opts = append(opts, awsconfig.WithRegion("us-east-1"),
			awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(do *dynamodb.Options) {
		if o.ddbEndpoint != "" {
			do.BaseEndpoint = aws.String(o.ddbEndpoint)
		}
	})
	led, err := ledger.New(db, ledger.Config{LedgerTable: o.ledgerTable, IdempotencyTable: o.idem})
	if err != nil {
		return nil, err
	}
	accounts := make([]seed.Account, o.open)
	ids := make([]string, o.open)
	for i := range accounts {
		ids[i] = fmt.Sprintf("load-%s-%d", runID, i)
		accounts[i] = seed.Account{ID: ids[i], Owner: owner, Currency: o.currency, Balance: o.openBalance}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := seed.Open(ctx, led, accounts); err != nil {
		return nil, fmt.Errorf("-open: %w", err)
	}
	fmt.Fprintf(log, "load: opened %d accounts %s-0..%d of %s with %s %d each\n", o.open, "load-"+runID, o.open-1, owner, o.currency, o.openBalance)
	return ids, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// report prints the figures of a run.
func report(w io.Writer, cfg config, r *result) {
	n := r.stats.total()
	fmt.Fprintf(w, "\nsent %d requests in %s: %.1f req/s (%d clients)\n", n, r.elapsed.Round(time.Millisecond), float64(n)/r.elapsed.Seconds(), cfg.clients)
	fmt.Fprintln(w, "\nanswers")
	hist := r.stats.histogram()
	writeHistogram(w, hist)
	for _, b := range hist {
		if note, ok := answerNotes[b.Label]; ok {
			fmt.Fprintf(w, "  %s: %s\n", b.Label, note)
		}
	}
	fmt.Fprintln(w, "\nlatency")
	r.stats.writeLatency(w)
	var outcomes []string
	for _, o := range sortedKeys(r.outcomes) {
		outcomes = append(outcomes, fmt.Sprintf("%s %d", o, r.outcomes[o]))
	}
	fmt.Fprintf(w, "\ntransfers: %d accepted, all settled %s after the load: %s\n", r.accepted, r.settled.Round(time.Millisecond), strings.Join(outcomes, ", "))
	for _, c := range sortedKeys(r.before) {
		after := "?"
		if v, ok := r.after[c]; ok {
			after = seed.Major(v, c)
		}
		fmt.Fprintf(w, "balances: %s before, %s after, over %d accounts\n", seed.Major(r.before[c], c), after, len(cfg.accounts))
	}
	if r.ok() {
		fmt.Fprintln(w, "OK: money conserved, every accepted transfer terminal, no answer broke the contract")
		return
	}
	fmt.Fprintf(w, "FAILED: %d checks\n", len(r.failures))
	for _, f := range r.failures {
		fmt.Fprintln(w, "  FAIL:", f)
	}
}

// answerNotes explain the answers of a run that are not errors: every new
// transfer is first answered 202, so a 422 with a transfer's problem is a
// duplicate replaying a transfer that had settled FAILED, and a reused
// key's 422 is the refusal the contract asks for.
var answerNotes = map[string]string{
	"200":                        "duplicates replaying a COMPLETED transfer",
	"422 insufficient_funds":     "duplicates replaying a transfer that settled FAILED (its first answer was 202)",
	"422 idempotency_key_reused": "keys sent again with another body, refused as they must be (nothing stored)",
}
