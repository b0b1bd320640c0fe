package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/worker"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// last is the last log record.
func (b *logBuffer) last(t *testing.T) map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(b.buf.String()), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatalf("log line %q: %v", lines[len(lines)-1], err)
	}
	return rec
}

// records are the log records.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// invoke runs h through aws-lambda-go's own runtime entry point (the
// net/rpc Function, which shares the Runtime API loop's error conversion),
// so the error document is the one Lambda hands to Step Functions.
func invoke(t *testing.T, h lambda.Handler, payload []byte) *messages.InvokeResponse {
	t.Helper()
	//lint:ignore SA1019 the rpc Function is the exported way to reach the runtime's error conversion
	fn := lambda.NewFunction(h)
	var resp messages.InvokeResponse
	req := &messages.InvokeRequest{
		Payload:   payload,
		RequestId: "test",
		Deadline:  messages.InvokeRequest_Timestamp{Seconds: time.Now().Add(time.Minute).Unix()},
	}
	if err := fn.Invoke(req, &resp); err != nil {
		t.Fatalf("runtime invoke: %v", err)
	}
	return &resp
}

// errorDocument is the function error as the caller of Lambda sees it.
type errorDocument struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func document(t *testing.T, ive *messages.InvokeResponse_Error) errorDocument {
	t.Helper()
	raw, err := json.Marshal(ive)
	if err != nil {
		t.Fatalf("marshal error: %v", err)
	}
	var doc errorDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return doc
}

func taskOf(tr ledgertest.Transfer) worker.Task {
	return worker.Task{
		TransferID:           tr.ID,
		RecordKey:            tr.RecordKey,
		SourceAccountID:      tr.Source,
		DestinationAccountID: tr.Destination,
		Amount:               tr.Amount,
		Currency:             tr.Currency,
		Scope:                tr.Scope,
	}
}

const mallory = "iam:arn:aws:iam::123456789012:user/mallory"

// ofMallory opens a source of mallory's (1000 USD) and a destination and
// starts a 300 USD transfer of ledgertest.Owner between them.
func ofMallory(t *testing.T, env *ledgertest.Env) worker.Task {
	t.Helper()
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccountOf(t, src, mallory, "USD", 1000)
	env.OpenAccount(t, dst, "USD", 0)
	return taskOf(env.NewTransfer(t, src, dst, 300, "USD"))
}

type scenario struct {
	name string
	kind ledger.Kind
	// setup prepares the ledger and returns the task; posts are the legs
	// posted before the task runs.
	setup func(t *testing.T, env *ledgertest.Env) worker.Task
	// broken runs the worker on a ledger whose tables do not exist.
	broken bool
	// owned runs the worker with worker.EnforceOwnership.
	owned bool
	// wantType is the errorType; "" means success.
	wantType string
	// wantRejected is the code of a rejected debit's answer; its slot
	// must then hold a void marker and nothing else may change.
	wantRejected string
	// wantOutcome is the logged outcome.
	wantOutcome string
	// wantMessage is part of the error message.
	wantMessage string
}

// standard opens a source (1000 USD) and a destination (50 USD), starts a
// 300 USD transfer and posts the given legs.
func standard(legs ...ledger.Kind) func(*testing.T, *ledgertest.Env) worker.Task {
	return func(t *testing.T, env *ledgertest.Env) worker.Task {
		t.Helper()
		src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
		env.OpenAccount(t, src, "USD", 1000)
		env.OpenAccount(t, dst, "USD", 50)
		tr := env.NewTransfer(t, src, dst, 300, "USD")
		for _, k := range legs {
			env.Post(t, tr, k)
		}
		return taskOf(tr)
	}
}

func scenarios() []scenario {
	return []scenario{
		{name: "debit commits", kind: ledger.Debit, setup: standard(), wantOutcome: "committed"},
		{name: "credit commits", kind: ledger.Credit, setup: standard(ledger.Debit), wantOutcome: "committed"},
		{name: "refund commits", kind: ledger.Refund, setup: standard(ledger.Debit), wantOutcome: "committed"},
		{name: "retried debit replays", kind: ledger.Debit, setup: standard(ledger.Debit), wantOutcome: "replayed"},
		{name: "insufficient funds", kind: ledger.Debit, wantRejected: worker.TypeInsufficientFunds, wantOutcome: "rejected", wantMessage: "insufficient funds for 300 USD",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
				env.OpenAccount(t, src, "USD", 299)
				env.OpenAccount(t, dst, "USD", 0)
				return taskOf(env.NewTransfer(t, src, dst, 300, "USD"))
			}},
		{name: "retried debit after a rejection replays it", kind: ledger.Debit, wantRejected: worker.TypeInsufficientFunds, wantOutcome: "replayed", wantMessage: "earlier words",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
				env.OpenAccount(t, src, "USD", 1000)
				env.OpenAccount(t, dst, "USD", 0)
				tr := env.NewTransfer(t, src, dst, 300, "USD")
				if _, err := env.Ledger.Void(context.Background(), tr.Leg(ledger.Debit), worker.TypeInsufficientFunds, "earlier words"); err != nil {
					t.Fatal(err)
				}
				return taskOf(tr)
			}},
		{name: "credit past the largest balance", kind: ledger.Credit, wantType: worker.TypeBalanceLimit, wantMessage: "cannot hold a larger balance",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
				env.OpenAccount(t, src, "USD", 1000)
				env.OpenAccount(t, dst, "USD", math.MaxInt64-299)
				tr := env.NewTransfer(t, src, dst, 300, "USD")
				env.Post(t, tr, ledger.Debit)
				return taskOf(tr)
			}},
		{name: "unknown source", kind: ledger.Debit, wantRejected: worker.TypeAccountNotFound, wantOutcome: "rejected", wantMessage: "does not exist",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				dst := ledgertest.ID("dst")
				env.OpenAccount(t, dst, "USD", 0)
				return taskOf(env.NewTransfer(t, ledgertest.ID("ghost"), dst, 300, "USD"))
			}},
		{name: "destination in another currency", kind: ledger.Credit, wantType: worker.TypeCurrencyMismatch, wantMessage: "does not hold USD",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
				env.OpenAccount(t, src, "USD", 1000)
				env.OpenAccount(t, dst, "GBP", 0)
				tr := env.NewTransfer(t, src, dst, 300, "USD")
				env.Post(t, tr, ledger.Debit)
				return taskOf(tr)
			}},
		{name: "closed destination", kind: ledger.Credit, wantType: worker.TypeAccountClosed, wantMessage: "is closed",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				if err := env.Ledger.CloseAccount(context.Background(), task.DestinationAccountID); err != nil {
					t.Fatalf("CloseAccount: %v", err)
				}
				return task
			}},
		{name: "fenced", kind: ledger.Debit, wantType: worker.TypeTransferFenced, wantMessage: "COMPLETED",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard()(t, env)
				env.SetRecord(t, task.RecordKey, reservation.StatusCompleted, task.TransferID)
				return task
			}},
		{name: "credit without debit", kind: ledger.Credit, setup: standard(), wantType: worker.TypeDebitMissing},
		{name: "refund without debit", kind: ledger.Refund, setup: standard(), wantType: worker.TypeNothingToRefund},
		{name: "credit after refund", kind: ledger.Credit, setup: standard(ledger.Debit, ledger.Refund), wantType: worker.TypeTransferRefunded},
		{name: "refund after credit", kind: ledger.Refund, setup: standard(ledger.Debit, ledger.Credit), wantType: worker.TypeTransferCredited},
		{name: "zero amount", kind: ledger.Debit, wantType: worker.TypeInvalidTask, wantMessage: "invalid task: amount",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard()(t, env)
				task.Amount = 0
				return task
			}},
		{name: "credit without source", kind: ledger.Credit, wantType: worker.TypeInvalidTask, wantMessage: "invalid task: sourceAccountId",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				task.SourceAccountID = ""
				return task
			}},
		{name: "lower-case currency", kind: ledger.Refund, wantType: worker.TypeInvalidTask, wantMessage: "invalid task: currency",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				task.Currency = "usd"
				return task
			}},
		{name: "ledger unavailable", kind: ledger.Debit, setup: standard(), broken: true,
			wantType: worker.TypeLedgerUnavailable, wantMessage: "temporarily unavailable"},
		{name: "debit with another amount than its transfer", kind: ledger.Debit, wantType: worker.TypeTransferFenced, wantMessage: "not the transfer's",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard()(t, env)
				task.Amount = 999
				return task
			}},
		{name: "credit to another account than its transfer's", kind: ledger.Credit, wantType: worker.TypeTransferFenced, wantMessage: "not the transfer's",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				task.DestinationAccountID = ledgertest.ID("thief")
				env.OpenAccount(t, task.DestinationAccountID, "USD", 0)
				return task
			}},
		{name: "owned debit of the caller's account", kind: ledger.Debit, owned: true, setup: standard(), wantOutcome: "committed"},
		{name: "debit of another caller's account, ownership off", kind: ledger.Debit, setup: ofMallory, wantOutcome: "committed"},
		{name: "owned debit of another caller's account", kind: ledger.Debit, owned: true, setup: ofMallory,
			wantRejected: worker.TypeForbidden, wantOutcome: "rejected", wantMessage: "may not debit"},
		{name: "owned debit of an unknown account", kind: ledger.Debit, owned: true,
			wantRejected: worker.TypeForbidden, wantOutcome: "rejected", wantMessage: "may not debit",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				dst := ledgertest.ID("dst")
				env.OpenAccount(t, dst, "USD", 0)
				return taskOf(env.NewTransfer(t, ledgertest.ID("ghost"), dst, 300, "USD"))
			}},
		{name: "owned debit under another caller's transfer", kind: ledger.Debit, owned: true, wantType: worker.TypeTransferFenced, wantMessage: "owner",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := ofMallory(t, env)
				task.Scope = mallory
				return task
			}},
		{name: "owned debit without a scope", kind: ledger.Debit, owned: true, wantType: worker.TypeInvalidTask, wantMessage: "scope",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard()(t, env)
				task.Scope = ""
				return task
			}},
		{name: "owned credit to the caller's account", kind: ledger.Credit, owned: true, setup: standard(ledger.Debit), wantOutcome: "committed"},
		{name: "owned credit to the caller's closed account", kind: ledger.Credit, owned: true, wantType: worker.TypeAccountClosed, wantMessage: "is closed",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				if err := env.Ledger.CloseAccount(context.Background(), task.DestinationAccountID); err != nil {
					t.Fatalf("CloseAccount: %v", err)
				}
				return task
			}},
		{name: "owned credit to another caller's account in another currency", kind: ledger.Credit, owned: true,
			wantType: worker.TypeDestinationUnavailable, wantMessage: "cannot receive",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
				env.OpenAccount(t, src, "USD", 1000)
				env.OpenAccountOf(t, dst, mallory, "GBP", 0)
				tr := env.NewTransfer(t, src, dst, 300, "USD")
				env.Post(t, tr, ledger.Debit)
				return taskOf(tr)
			}},
		{name: "owned credit to an unknown account", kind: ledger.Credit, owned: true,
			wantType: worker.TypeDestinationUnavailable, wantMessage: "cannot receive",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				src := ledgertest.ID("src")
				env.OpenAccount(t, src, "USD", 1000)
				tr := env.NewTransfer(t, src, ledgertest.ID("ghost"), 300, "USD")
				env.Post(t, tr, ledger.Debit)
				return taskOf(tr)
			}},
		{name: "owned credit without a scope", kind: ledger.Credit, owned: true, wantType: worker.TypeInvalidTask, wantMessage: "scope",
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				task.Scope = ""
				return task
			}},
	}
}

func newWorker(t *testing.T, env *ledgertest.Env, sc scenario, logs *logBuffer) *worker.Worker {
	t.Helper()
	poster := env.Ledger
	if sc.broken {
		l, err := ledger.New(env.Client, ledger.Config{LedgerTable: "no-such-ledger", IdempotencyTable: "no-such-records"})
		if err != nil {
			t.Fatal(err)
		}
		poster = l
	}
	var opts []worker.Option
	if sc.owned {
		opts = append(opts, worker.EnforceOwnership())
	}
	w, err := worker.New(sc.kind, poster, slog.New(slog.NewJSONHandler(logs, nil)), opts...)
	if err != nil {
		t.Fatalf("worker.New: %v", err)
	}
	return w
}

func TestWorker(t *testing.T) {
	env := ledgertest.New(t)
	paths := []struct {
		name    string
		handler func(w *worker.Worker) lambda.Handler
	}{
		// lambda.Start(w.Handle): the runtime decodes the task.
		{"Handle", func(w *worker.Worker) lambda.Handler { return lambda.NewHandler(w.Handle) }},
		// lambda.Start(w): the worker decodes the task.
		{"Invoke", func(w *worker.Worker) lambda.Handler { return w }},
	}
	for _, sc := range scenarios() {
		for _, path := range paths {
			t.Run(sc.name+"/"+path.name, func(t *testing.T) {
				task := sc.setup(t, env)
				payload, err := json.Marshal(task)
				if err != nil {
					t.Fatal(err)
				}
				var logs logBuffer
				w := newWorker(t, env, sc, &logs)
				before := env.Snapshot(t)
				resp := invoke(t, path.handler(w), payload)

				outcome := sc.wantOutcome
				if sc.wantType != "" {
					outcome = sc.wantType
					if resp.Error == nil {
						t.Fatalf("succeeded with %s, want %s", resp.Payload, sc.wantType)
					}
					doc := document(t, resp.Error)
					if doc.Type != sc.wantType || !strings.Contains(doc.Message, sc.wantMessage) {
						t.Errorf("error = %+v, want type %s with %q in the message", doc, sc.wantType, sc.wantMessage)
					}
					// Business messages are stored with the failed transfer
					// for its client, so they speak of accounts only.
					business := doc.Type == worker.TypeInsufficientFunds || doc.Type == worker.TypeAccountNotFound ||
						doc.Type == worker.TypeCurrencyMismatch || doc.Type == worker.TypeAccountClosed ||
						doc.Type == worker.TypeBalanceLimit || doc.Type == worker.TypeDestinationUnavailable
					if !business && !strings.Contains(doc.Message, task.TransferID) {
						t.Errorf("message %q does not name the transfer", doc.Message)
					}
					if sc.broken && strings.Contains(doc.Message, "no-such-ledger") {
						t.Errorf("message %q leaks infrastructure detail", doc.Message)
					}
					if d := before.Diff(env.Snapshot(t)); d != "" {
						t.Errorf("failed leg wrote:\n%s", d)
					}
				} else if sc.wantRejected != "" {
					if resp.Error != nil {
						t.Fatalf("failed with %+v, want a rejection", resp.Error)
					}
					var res worker.Result
					if err := json.Unmarshal(resp.Payload, &res); err != nil {
						t.Fatalf("payload %s: %v", resp.Payload, err)
					}
					if res.Rejected == nil || res.Rejected.Code != sc.wantRejected || !strings.Contains(res.Rejected.Detail, sc.wantMessage) || res.Entry != nil {
						t.Errorf("result = %s, want rejected %s with %q", resp.Payload, sc.wantRejected, sc.wantMessage)
					}
					diff := before.Diff(env.Snapshot(t))
					if sc.wantOutcome == "replayed" && diff != "" {
						t.Errorf("replayed rejection wrote:\n%s", diff)
					}
					if sc.wantOutcome == "rejected" && (strings.Count(diff, "\n") != 1 || !strings.Contains(diff, "added ") ||
						!strings.Contains(diff, "#DEBIT") || !strings.Contains(diff, "voided:true")) {
						t.Errorf("rejection wrote, want only the void marker:\n%s", diff)
					}
				} else {
					if resp.Error != nil {
						t.Fatalf("failed with %+v", resp.Error)
					}
					var entry ledger.Entry
					if err := json.Unmarshal(resp.Payload, &entry); err != nil {
						t.Fatalf("payload %s: %v", resp.Payload, err)
					}
					want := map[ledger.Kind]int64{ledger.Debit: -task.Amount, ledger.Credit: task.Amount, ledger.Refund: task.Amount}[sc.kind]
					account := task.SourceAccountID
					if sc.kind == ledger.Credit {
						account = task.DestinationAccountID
					}
					if entry.Kind != sc.kind || entry.TransferID != task.TransferID || entry.AccountID != account || entry.Amount != want || entry.PostedAt.IsZero() {
						t.Errorf("entry = %+v, want %s of %d on %s", entry, sc.kind, want, account)
					}
					var got map[string]any
					if err := json.Unmarshal(resp.Payload, &got); err != nil {
						t.Fatal(err)
					}
					for _, field := range []string{"accountId", "transferId", "leg", "amount", "currency", "counterpartyAccountId", "postedAt"} {
						if _, ok := got[field]; !ok {
							t.Errorf("payload %s has no %q", resp.Payload, field)
						}
					}
				}
				rec := logs.last(t)
				if rec["transferId"] != task.TransferID || rec["leg"] != string(sc.kind) || rec["outcome"] != outcome {
					t.Errorf("log = %v, want transferId %s, leg %s, outcome %s", rec, task.TransferID, sc.kind, outcome)
				}
			})
		}
	}
}

// TestHandleReturnsInvokeResponseError checks what aws-lambda-go relies on
// to keep the error's name: Handle returns a messages.InvokeResponse_Error
// value, not a pointer or a wrapper (which the runtime would name after
// their Go types).
func TestHandleReturnsInvokeResponseError(t *testing.T) {
	env := ledgertest.New(t)
	task := standard()(t, env)
	w, err := worker.New(ledger.Credit, env.Ledger, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Handle(context.Background(), task)
	ive, ok := err.(messages.InvokeResponse_Error)
	if !ok || ive.Type != worker.TypeDebitMissing {
		t.Fatalf("Handle error = %#v, want a messages.InvokeResponse_Error value of type %s", err, worker.TypeDebitMissing)
	}
}

func TestInvokeMalformedPayload(t *testing.T) {
	env := ledgertest.New(t)
	w, err := worker.New(ledger.Debit, env.Ledger, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	payloads := []struct{ name, payload string }{
		{"amount as string", `{"transferId":"t","recordKey":"k","sourceAccountId":"a","destinationAccountId":"b","amount":"300","currency":"USD"}`},
		{"fractional amount", `{"transferId":"t","recordKey":"k","sourceAccountId":"a","destinationAccountId":"b","amount":3.5,"currency":"USD"}`},
		{"not an object", `[1,2]`},
		{"empty object", `{}`},
	}
	before := env.Snapshot(t)
	for _, p := range payloads {
		t.Run(p.name, func(t *testing.T) {
			resp := invoke(t, w, []byte(p.payload))
			if resp.Error == nil {
				t.Fatalf("succeeded with %s", resp.Payload)
			}
			if doc := document(t, resp.Error); doc.Type != worker.TypeInvalidTask {
				t.Errorf("error = %+v, want %s", doc, worker.TypeInvalidTask)
			}
		})
	}
	if d := before.Diff(env.Snapshot(t)); d != "" {
		t.Errorf("malformed tasks wrote:\n%s", d)
	}
}

func TestErrorType(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{ledger.ErrInsufficientFunds, worker.TypeInsufficientFunds},
		{ledger.ErrAccountNotFound, worker.TypeAccountNotFound},
		{ledger.ErrCurrencyMismatch, worker.TypeCurrencyMismatch},
		{ledger.ErrAccountClosed, worker.TypeAccountClosed},
		{ledger.ErrFenced, worker.TypeTransferFenced},
		{ledger.ErrDebitMissing, worker.TypeDebitMissing},
		{ledger.ErrNothingToRefund, worker.TypeNothingToRefund},
		{ledger.ErrAlreadyRefunded, worker.TypeTransferRefunded},
		{ledger.ErrAlreadyCredited, worker.TypeTransferCredited},
		{&ledger.InvalidInputError{Field: "Amount", Problem: "must be positive"}, worker.TypeInvalidTask},
		{ledger.ErrUnavailable, worker.TypeLedgerUnavailable},
		{errors.New("unknown"), worker.TypeLedgerUnavailable},
		{context.DeadlineExceeded, worker.TypeLedgerUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.want+"/"+tc.err.Error(), func(t *testing.T) {
			if got := worker.ErrorType(fmt.Errorf("debit t-1: %w", tc.err)); got != tc.want {
				t.Errorf("ErrorType = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	env := ledgertest.New(t)
	cases := []struct {
		name   string
		kind   ledger.Kind
		poster worker.Poster
		ok     bool
	}{
		{"debit", ledger.Debit, env.Ledger, true},
		{"credit", ledger.Credit, env.Ledger, true},
		{"refund", ledger.Refund, env.Ledger, true},
		{"unknown kind", "TRANSFER", env.Ledger, false},
		{"nil poster", ledger.Debit, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := worker.New(tc.kind, tc.poster, nil)
			if (err == nil) != tc.ok || (w != nil) != tc.ok {
				t.Errorf("New = %v, %v; want ok %v", w, err, tc.ok)
			}
		})
	}
}

// A refused leg logs its refusal's code at INFO and the refusal's detail
// (the account's currency, state or balance) at DEBUG only: the INFO log
// of a leg tells nothing of the account that another caller may own.
func TestRefusalLogs(t *testing.T) {
	env := ledgertest.New(t)
	cases := []struct {
		name  string
		kind  ledger.Kind
		owned bool
		setup func(t *testing.T) worker.Task
		// code is the refusal's code, at INFO; secrets are what only the
		// DEBUG lines may tell.
		code    string
		secrets []string
	}{
		{"credit to an account in another currency", ledger.Credit, false, func(t *testing.T) worker.Task {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "USD", 1000)
			env.OpenAccountOf(t, dst, mallory, "GBP", 0)
			tr := env.NewTransfer(t, src, dst, 300, "USD")
			env.Post(t, tr, ledger.Debit)
			return taskOf(tr)
		}, worker.TypeCurrencyMismatch, []string{"GBP", "currency mismatch"}},
		{"owned credit to another caller's full account", ledger.Credit, true, func(t *testing.T) worker.Task {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "USD", 1000)
			env.OpenAccountOf(t, dst, mallory, "USD", math.MaxInt64-1)
			tr := env.NewTransfer(t, src, dst, 300, "USD")
			env.Post(t, tr, ledger.Debit)
			return taskOf(tr)
		}, worker.TypeDestinationUnavailable, []string{fmt.Sprint(int64(math.MaxInt64 - 1)), "balance limit"}},
		{"credit to a closed account", ledger.Credit, false, func(t *testing.T) worker.Task {
			task := standard(ledger.Debit)(t, env)
			if err := env.Ledger.CloseAccount(context.Background(), task.DestinationAccountID); err != nil {
				t.Fatal(err)
			}
			return task
		}, worker.TypeAccountClosed, []string{"account closed"}},
		{"debit without the funds", ledger.Debit, true, func(t *testing.T) worker.Task {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "USD", 299)
			env.OpenAccount(t, dst, "USD", 0)
			return taskOf(env.NewTransfer(t, src, dst, 300, "USD"))
		}, worker.TypeInsufficientFunds, []string{"insufficient funds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := tc.setup(t)
			var logs logBuffer
			var opts []worker.Option
			if tc.owned {
				opts = append(opts, worker.EnforceOwnership())
			}
			w, err := worker.New(tc.kind, env.Ledger, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), opts...)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			invoke(t, w, payload)
			var info, debug strings.Builder
			coded := false
			for _, rec := range logs.records(t) {
				line, _ := json.Marshal(rec)
				if rec["level"] == slog.LevelDebug.String() {
					debug.Write(line)
					continue
				}
				info.Write(line)
				if rec["code"] == tc.code || rec["outcome"] == tc.code {
					coded = true
				}
			}
			if !coded {
				t.Errorf("no INFO line carries the code %s:\n%s", tc.code, info.String())
			}
			for _, s := range append(tc.secrets, task.DestinationAccountID, task.SourceAccountID) {
				if strings.Contains(info.String(), s) {
					t.Errorf("an INFO line tells %q:\n%s", s, info.String())
				}
			}
			for _, s := range tc.secrets {
				if !strings.Contains(debug.String(), s) {
					t.Errorf("no DEBUG line tells %q:\n%s", s, debug.String())
				}
			}
		})
	}
}
