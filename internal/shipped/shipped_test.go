//go:build integration

package shipped

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/lambdaproc"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/transfer"
)

const (
	// caller is the API caller (Authorization: Bearer caller).
	caller = "shipped"
	// buildBudget bounds building the bootstraps: a few seconds each
	// with a warm build cache, a minute or two from a cold one.
	buildBudget = 5 * time.Minute
	// settleBudget bounds the wait for a transfer to settle; reaching it
	// fails the test.
	settleBudget = 60 * time.Second
	poll         = 25 * time.Millisecond
	// envLog sets the level of the stack's log (the processes' output
	// included) on stderr; unset, it is kept and shown when the test
	// fails.
	envLog = "SHIPPED_LOG"
)

// function is one entry of the Makefile's FUNCTIONS list.
type function struct{ dir, logicalID string }

// TestShippedBootstraps runs the stack with each function served by its
// bootstrap as make build-<LogicalId> (and so sam build) makes it, and
// drives a completed transfer (orchestrator, debit, credit), a transfer
// whose credit is refused (refund) and an aborted execution (reaper)
// through the API: each settles as it must, money is conserved, and
// every function answered at least one invocation from its process.
func TestShippedBootstraps(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH to run the Makefile's build recipes")
	}
	if _, err := lambdaproc.Emulator("arm64"); err != nil {
		t.Skipf("the linux/arm64 bootstraps cannot run here: %v", err)
	}
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	fns := makefileFunctions(t, root)
	start := time.Now()
	bins := buildBootstraps(t, root, fns)
	t.Logf("built %d bootstraps with the Makefile's recipes in %v", len(bins), time.Since(start).Round(time.Millisecond))

	logs := &syncBuffer{}
	in := fault.New(1)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start = time.Now()
	st, err := stack.Start(ctx, stack.Options{
		// The harness's settings: a stuck record or a missing execution
		// counts as such after a second; no per-caller rate limit.
		Parameters: map[string]string{"StuckAfterSeconds": "1", "NotFoundGraceSeconds": "1", "CallerRateLimit": "0"},
		Bootstraps: bins,
		Faults:     in,
		Logger:     logger(logs),
	})
	if err != nil {
		t.Fatalf("start the stack: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			t.Errorf("close the stack: %v", err)
		}
		if t.Failed() && os.Getenv(envLog) == "" {
			t.Logf("the stack's log:\n%s", logs.tail(64<<10))
		}
	})
	t.Logf("stack started in %v", time.Since(start).Round(time.Millisecond))
	for _, f := range fns {
		if st.Processes[f.logicalID] == nil {
			t.Fatalf("%s does not run from its bootstrap (processes: %v)", f.logicalID, st.Processes)
		}
	}

	db := dynamodb.NewFromConfig(st.AWS, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(st.DynamoDBEndpoint) })
	led, err := ledger.New(db, ledger.Config{LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"]})
	if err != nil {
		t.Fatal(err)
	}
	opening := map[string]chaos.Opening{}
	open := func(id, currency string, balance int64) string {
		t.Helper()
		if _, err := led.OpenAccount(ctx, id, chaos.Scope(caller), currency, balance); err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
		opening[id] = chaos.Opening{Currency: currency, Balance: balance}
		return id
	}
	c := &client{base: st.APIURL, http: &http.Client{Timeout: 30 * time.Second}}

	t.Run("completed", func(t *testing.T) {
		src, dst := open("ok.src", "EUR", 10000), open("ok.dst", "EUR", 0)
		tr := c.settle(t, ctx, c.accept(t, ctx, "ok", transfer.Request{SourceAccountID: src, DestinationAccountID: dst, Amount: 2500, Currency: "EUR", Reference: "shipped"}))
		if tr.Status != "COMPLETED" || tr.Failure != nil {
			t.Fatalf("transfer %s settled %s (failure %+v), want COMPLETED", tr.TransferID, tr.Status, tr.Failure)
		}
		c.expectBalance(t, ctx, src, 7500)
		c.expectBalance(t, ctx, dst, 2500)
	})

	t.Run("credit refused and refunded", func(t *testing.T) {
		src, dst := open("fx.src", "EUR", 10000), open("fx.dst", "USD", 0)
		tr := c.settle(t, ctx, c.accept(t, ctx, "fx", transfer.Request{SourceAccountID: src, DestinationAccountID: dst, Amount: 4000, Currency: "EUR", Reference: "fx"}))
		if tr.Status != "FAILED" || tr.Failure == nil || tr.Failure.Code != "CurrencyMismatch" || !tr.Failure.Reversed {
			t.Fatalf("transfer %s settled %s (failure %+v), want FAILED CurrencyMismatch reversed", tr.TransferID, tr.Status, tr.Failure)
		}
		c.expectBalance(t, ctx, src, 10000)
		c.expectBalance(t, ctx, dst, 0)
	})

	t.Run("aborted and settled by the reaper", func(t *testing.T) {
		src, dst := open("ab.src", "EUR", 10000), open("ab.dst", "EUR", 0)
		// The credit attempt hangs (the registry's interceptor, in front
		// of the process), so the execution is in its Credit state when
		// an operator stops it; the status change event then goes to the
		// reaper, which refunds the debit.
		in.Lambda(fault.LambdaFault{Function: "CreditFunction", Kind: fault.Hang, Times: 1, Match: func(payload []byte) bool {
			return bytes.Contains(payload, []byte(`"sourceAccountId":"`+src+`"`))
		}})
		id := c.accept(t, ctx, "ab", transfer.Request{SourceAccountID: src, DestinationAccountID: dst, Amount: 3000, Currency: "EUR", Reference: "abort"})
		waitFor(t, ctx, "the credit to hang", func() bool { return in.Counts()[fault.CountLambdaHang] >= 1 })
		machine := st.StateMachines["TransferStateMachine"]
		exec := strings.Replace(machine, ":stateMachine:", ":execution:", 1) + ":" + id
		sf := sfn.NewFromConfig(st.AWS, func(o *sfn.Options) { o.BaseEndpoint = aws.String(st.SFNEndpoint) })
		if _, err := sf.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(exec),
			Error: aws.String("Aborted"), Cause: aws.String("the payer withdrew the payment")}); err != nil {
			t.Fatalf("stop the execution of %s: %v", id, err)
		}
		tr := c.settle(t, ctx, id)
		if tr.Status != "FAILED" || tr.Failure == nil || tr.Failure.Code != "Aborted" || !tr.Failure.Reversed {
			t.Fatalf("transfer %s settled %s (failure %+v), want FAILED Aborted reversed", tr.TransferID, tr.Status, tr.Failure)
		}
		c.expectBalance(t, ctx, src, 10000)
		c.expectBalance(t, ctx, dst, 0)
	})

	t.Run("the PreTraffic hook checks the new versions", func(t *testing.T) {
		// As CodeDeploy does before it shifts an alias: a deployment's
		// lifecycle hook runs the hook function, which invokes each
		// function's version and reports the outcome.
		d := st.CodeDeploy.CreateDeployment("ServerlessDeploymentApplication", "OrchestratorFunctionDeploymentGroup")
		event, _ := json.Marshal(map[string]string{"DeploymentId": d.ID, "LifecycleEventHookExecutionId": "shipped"})
		if _, fnErr, err := st.Functions.InvokeFunction(ctx, st.FunctionNames["PreTrafficHookFunction"], event); err != nil || fnErr != nil {
			t.Fatalf("the hook: %v %v", err, fnErr)
		}
		if got, ok := st.CodeDeploy.Status("shipped"); !ok || got.Status != "Succeeded" {
			t.Fatalf("CodeDeploy has %+v (%v), want Succeeded", got, ok)
		}
	})

	dctx, dcancel := context.WithTimeout(ctx, settleBudget)
	defer dcancel()
	if err := st.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	rep, err := chaos.Check(ctx, db, st.Tables["LedgerTable"], st.Tables["IdempotencyTable"], opening)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Errorf("invariant broken: %s", v)
	}
	if failed := st.FailedInvocations(); len(failed) > 0 {
		t.Errorf("failed asynchronous invocations: %+v", failed)
	}
	if denied := st.IAM.Denials(); len(denied) > 0 {
		t.Errorf("calls the functions' roles do not allow: %+v", denied)
	}
	if u := st.IAM.Usage(); len(u.Used) == 0 {
		t.Error("no call of the processes went through the IAM checks")
	}
	for _, f := range fns {
		s := st.Processes[f.logicalID].Stats()
		var initMean time.Duration
		if s.Ready > 0 {
			initMean = s.InitTime / time.Duration(s.Ready)
		}
		t.Logf("%-20s %d process(es), started to ready in %v on average; %d invocation(s), %d error(s)",
			f.logicalID, s.Starts, initMean.Round(time.Millisecond), s.Invocations, s.Errors)
		if s.Invocations == 0 {
			t.Errorf("%s: no invocation answered by its bootstrap (%+v)", f.logicalID, s)
		}
		if s.Exits != 0 {
			t.Errorf("%s: %d process(es) exited unexpectedly (%+v)", f.logicalID, s.Exits, s)
		}
	}
	// The credit's refusal is a function error its process reported.
	if s := st.Processes["CreditFunction"].Stats(); s.Errors == 0 {
		t.Errorf("CreditFunction: no error reported by its process (%+v), want the refused credit's", s)
	}
}

// makefileFunctions reads the Makefile's FUNCTIONS list (dir:LogicalId).
func makefileFunctions(t *testing.T, root string) []function {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var fns []function
	for line := range strings.SplitSeq(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
		rest, ok := strings.CutPrefix(line, "FUNCTIONS :=")
		if !ok {
			continue
		}
		for _, field := range strings.Fields(rest) {
			dir, id, ok := strings.Cut(field, ":")
			if !ok {
				t.Fatalf("Makefile: FUNCTIONS entry %q is not dir:LogicalId", field)
			}
			fns = append(fns, function{dir: dir, logicalID: id})
		}
	}
	var ids []string
	for _, f := range fns {
		ids = append(ids, f.logicalID)
	}
	for _, want := range []string{"OrchestratorFunction", "DebitFunction", "CreditFunction", "RefundFunction", "ReaperFunction", "PreTrafficHookFunction"} {
		if !slices.Contains(ids, want) {
			t.Fatalf("Makefile: FUNCTIONS %v lacks %s", ids, want)
		}
	}
	return fns
}

// buildBootstraps builds each function with make build-<LogicalId>
// ARTIFACTS_DIR=<dir>, as sam build does, and returns the bootstraps by
// logical ID.
func buildBootstraps(t *testing.T, root string, fns []function) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), buildBudget)
	defer cancel()
	dir := t.TempDir()
	bins := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Go(func() {
			artifacts := filepath.Join(dir, f.dir)
			cmd := exec.CommandContext(ctx, "make", "-s", "--no-print-directory", "build-"+f.logicalID, "ARTIFACTS_DIR="+artifacts)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("make build-%s: %v\n%s", f.logicalID, err, out)
				return
			}
			bin := filepath.Join(artifacts, "bootstrap")
			if err := isArm64(bin); err != nil {
				t.Errorf("make build-%s: %v", f.logicalID, err)
				return
			}
			mu.Lock()
			bins[f.logicalID] = bin
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return bins
}

// isArm64 checks that bin is a linux/arm64 executable, what Lambda's arm64
// architecture runs.
func isArm64(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_EXEC {
		return fmt.Errorf("%s is a %s %s, not an arm64 executable", bin, f.Machine, f.Type)
	}
	return nil
}

// client calls the local API as caller.
type client struct {
	base string
	http *http.Client
}

func (c *client) do(ctx context.Context, method, path, key string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+caller)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// accept posts a transfer under key and returns its id; the answer must
// be 202.
func (c *client) accept(t *testing.T, ctx context.Context, key string, req transfer.Request) string {
	t.Helper()
	status, body, err := c.do(ctx, http.MethodPost, "/transfers", key, req.Canonical())
	if err != nil {
		t.Fatalf("POST /transfers key %s: %v", key, err)
	}
	var tr transfer.Transfer
	if status != http.StatusAccepted || json.Unmarshal(body, &tr) != nil || tr.TransferID == "" {
		t.Fatalf("POST /transfers key %s: %d %s, want 202 with a transfer", key, status, body)
	}
	return tr.TransferID
}

// settle waits until the transfer is COMPLETED or FAILED and returns it.
func (c *client) settle(t *testing.T, ctx context.Context, id string) transfer.Transfer {
	t.Helper()
	var tr transfer.Transfer
	waitFor(t, ctx, "transfer "+id+" to settle", func() bool {
		status, body, err := c.do(ctx, http.MethodGet, "/transfers/"+id, "", nil)
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET /transfers/%s: %d %s %v", id, status, body, err)
		}
		tr = transfer.Transfer{}
		if err := json.Unmarshal(body, &tr); err != nil {
			t.Fatalf("GET /transfers/%s: %s: %v", id, body, err)
		}
		return tr.Status == "COMPLETED" || tr.Status == "FAILED"
	})
	return tr
}

// expectBalance checks an account's balance as the API shows it.
func (c *client) expectBalance(t *testing.T, ctx context.Context, id string, want int64) {
	t.Helper()
	status, body, err := c.do(ctx, http.MethodGet, "/accounts/"+id, "", nil)
	var a struct {
		Balance int64 `json:"balance"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &a) != nil {
		t.Fatalf("GET /accounts/%s: %d %s %v", id, status, body, err)
	}
	if a.Balance != want {
		t.Errorf("account %s: balance %d, want %d", id, a.Balance, want)
	}
}

// waitFor polls cond until it holds, failing the test after settleBudget.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(settleBudget)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", settleBudget, what)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// logger is the stack's logger: stderr at the level SHIPPED_LOG names, else
// everything into buf.
func logger(buf *syncBuffer) *slog.Logger {
	if v := os.Getenv(envLog); v != "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(v)); err != nil {
			level = slog.LevelInfo
		}
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// syncBuffer is a log buffer written by the stack's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// tail is the last n bytes written.
func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.Bytes()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return string(s)
}
