//go:build integration

package main

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/seed"
)

// TestLoadAgainstTheLocalStack runs the load generator's core against the
// local stack in-process: a few hundred requests of every kind, then the
// checks of a run.
func TestLoadAgainstTheLocalStack(t *testing.T) {
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	// A leg's 30 s TimeoutSeconds becomes 3 s, above what a leg takes on
	// a busy machine under -race.
	// No per-caller rate limit: the run sends more than a caller's limit
	// on purpose.
	st, err := stack.Start(startCtx, stack.Options{TimeScale: 0.1, Parameters: map[string]string{"CallerRateLimit": "0"}})
	cancel()
	if err != nil {
		t.Fatalf("start the local stack: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			t.Errorf("stop the local stack: %v", err)
		}
	})
	led, err := ledger.New(dynamodb.NewFromConfig(st.AWS), ledger.Config{LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"]})
	if err != nil {
		t.Fatal(err)
	}
	auth, owner := bearer("loader")
	accounts := []seed.Account{
		{ID: "load-a", Owner: owner, Currency: "EUR", Balance: 5000},
		{ID: "load-b", Owner: owner, Currency: "EUR", Balance: 5000},
		{ID: "load-c", Owner: owner, Currency: "EUR", Balance: 200},
	}
	if _, err := seed.Open(ctx, led, accounts); err != nil {
		t.Fatal(err)
	}
	base, err := url.Parse(st.APIURL)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("core", func(t *testing.T) {
		var log bytes.Buffer
		res, err := load(ctx, ctx, config{
			base: base, auth: auth, clients: 8, duration: 2 * time.Minute, count: 300,
			mix:      mix{Duplicate: 0.2, Reuse: 0.05, Insufficient: 0.1},
			accounts: []string{"load-a", "load-b", "load-c"}, seed: 1, runID: "it",
			maxAmount: 300, maxTransfer: 100000000,
			requestTimeout: 30 * time.Second, settleTimeout: 2 * time.Minute, log: &log,
		})
		if err != nil {
			t.Fatalf("load: %v\n%s", err, log.String())
		}
		if !res.ok() {
			t.Errorf("checks failed: %q", res.failures)
		}
		if n := res.stats.total(); n != 300 {
			t.Errorf("sent %d requests, want 300", n)
		}
		if got, want := res.after["EUR"], res.before["EUR"]; got != want || want != 10200 {
			t.Errorf("EUR %d before, %d after, want 10200 both", want, got)
		}
		answers := map[string]int{}
		for _, b := range res.stats.histogram() {
			answers[b.Label] = b.Count
			if strings.HasPrefix(b.Label, "5") && !strings.HasPrefix(b.Label, "503") {
				t.Errorf("%d answers %s", b.Count, b.Label)
			}
		}
		// Every kind of request met its answer.
		for _, want := range []string{"202", "422 idempotency_key_reused"} {
			if answers[want] == 0 {
				t.Errorf("no %s answer; answers %v", want, answers)
			}
		}
		if res.outcomes["COMPLETED"] == 0 || res.outcomes["FAILED insufficient_funds"] == 0 {
			t.Errorf("outcomes %v: want COMPLETED and FAILED insufficient_funds", res.outcomes)
		}
		total := 0
		for _, n := range res.outcomes {
			total += n
		}
		if total != res.accepted || res.accepted == 0 {
			t.Errorf("%d accepted, %d terminal", res.accepted, total)
		}
		var out bytes.Buffer
		report(&out, config{clients: 8, accounts: []string{"load-a", "load-b", "load-c"}}, res)
		t.Logf("\n%s", out.String())
	})

	t.Run("command with -open", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"-url", st.APIURL, "-caller", "opener", "-open", "3", "-ddb-endpoint", st.DynamoDBEndpoint,
			"-ledger-table", st.Tables["LedgerTable"], "-idempotency-table", st.Tables["IdempotencyTable"],
			"-count", "100", "-clients", "4", "-dup", "0.2", "-reuse", "0.1", "-settle-timeout", "2m"}, &stdout, &stderr)
		if code != 0 {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		}
		for _, want := range []string{"sent 100 requests", "p99.9", "EUR 3,000.00 before, EUR 3,000.00 after", "OK: money conserved"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout.String())
			}
		}
	})

	t.Run("accounts not the caller's", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"-url", st.APIURL, "-caller", "mallory", "-accounts", "load-a,load-b", "-count", "10"}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "load-a: 404") {
			t.Errorf("exit %d, stderr %s: want 2 and the account named", code, stderr.String())
		}
	})
}
