package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/metrics/emftest"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/worker"
)

// A leg refused by its fence publishes LegFenced for its kind, and every
// line it logs names the transfer and its record key.
func TestFencedLegPublishesLegFenced(t *testing.T) {
	env := ledgertest.New(t)
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "USD", 1000)
	env.OpenAccount(t, dst, "USD", 0)
	// No idempotency record holds this transfer: the fence refuses it.
	task := worker.Task{TransferID: ledgertest.ID("tr"), RecordKey: ledgertest.ID("rk"),
		SourceAccountID: src, DestinationAccountID: dst, Amount: 300, Currency: "USD"}
	payload, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	w, err := worker.New(ledger.Debit, env.Ledger, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Invoke(context.Background(), payload)
	var lerr messages.InvokeResponse_Error
	if !errors.As(err, &lerr) || lerr.Type != worker.TypeTransferFenced {
		t.Fatalf("Invoke error = %v, want %s", err, worker.TypeTransferFenced)
	}

	logs.mu.Lock()
	out := logs.buf.Bytes()
	logs.mu.Unlock()
	docs, err := emftest.Docs(out)
	if err != nil {
		t.Fatalf("EMF: %v", err)
	}
	got, found := emftest.Sum(docs, metrics.LegFenced, map[string]string{"Service": metrics.ServiceWorker, "Leg": "DEBIT"})
	if !found || got != 1 {
		t.Errorf("LegFenced{worker, DEBIT} = %v (found %v), want 1", got, found)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if _, metric := rec["_aws"]; metric {
			continue
		}
		if rec["transferId"] != task.TransferID || rec["recordKey"] != task.RecordKey {
			t.Errorf("line %s: want transferId %s and recordKey %s", line, task.TransferID, task.RecordKey)
		}
	}
}

// voidedMeanwhile is the ledger, except that when the worker makes a
// rejection final, a concurrent attempt of the same debit has just done
// so with its own words.
type voidedMeanwhile struct{ *ledger.Ledger }

func (v voidedMeanwhile) Void(ctx context.Context, leg ledger.Leg, reason, detail string) (ledger.VoidResult, error) {
	if _, err := v.Ledger.Void(ctx, leg, reason, "the concurrent attempt's words"); err != nil {
		return ledger.VoidResult{}, err
	}
	return v.Ledger.Void(ctx, leg, reason, detail)
}

// A leg whose write settles the transfer's money publishes TimeToSettle
// once, from the task's createdAt to that write: the credit committing
// (completed), the refund committing (reversed), the debit's rejection
// made final (failed). Every other leg publishes none: a debit that
// commits, a refused credit (its refund settles), a failed leg, and every
// replay of a leg that committed or was rejected before (the attempt that
// wrote it published). A createdAt the worker cannot read publishes
// nothing and fails nothing.
func TestSettlingLegPublishesTimeToSettle(t *testing.T) {
	env := ledgertest.New(t)
	const accepted = 1500 * time.Millisecond // before the leg runs
	cases := []struct {
		name  string
		kind  ledger.Kind
		setup func(t *testing.T, env *ledgertest.Env) worker.Task
		// owned runs the worker with worker.EnforceOwnership; void runs it
		// on voidedMeanwhile.
		owned, void bool
		// createdAt replaces the task's createdAt when set.
		createdAt *string
		// wantErr is the leg's errorType; "" means it succeeds.
		wantErr string
		// want is the Outcome of the one TimeToSettle; "" means none.
		want string
	}{
		{name: "debit commits", kind: ledger.Debit, setup: standard()},
		{name: "credit commits", kind: ledger.Credit, setup: standard(ledger.Debit), want: metrics.OutcomeCompleted},
		{name: "owned credit commits", kind: ledger.Credit, owned: true, setup: standard(ledger.Debit), want: metrics.OutcomeCompleted},
		{name: "refund commits", kind: ledger.Refund, setup: standard(ledger.Debit), want: metrics.OutcomeReversed},
		{name: "debit refused", kind: ledger.Debit, setup: poor, want: metrics.OutcomeFailed},
		{name: "owned debit of another caller's account refused", kind: ledger.Debit, owned: true, setup: ofMallory, want: metrics.OutcomeFailed},
		{name: "debit replayed", kind: ledger.Debit, setup: standard(ledger.Debit)},
		{name: "credit replayed", kind: ledger.Credit, setup: standard(ledger.Debit, ledger.Credit)},
		{name: "refund replayed", kind: ledger.Refund, setup: standard(ledger.Debit, ledger.Refund)},
		{name: "refused debit replayed", kind: ledger.Debit,
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := poor(t, env)
				w, err := worker.New(ledger.Debit, env.Ledger, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				if res, err := w.Handle(context.Background(), task); err != nil || res.Rejected == nil {
					t.Fatalf("first attempt: %+v, %v; want a rejection", res, err)
				}
				return task
			}},
		{name: "debit refused while a concurrent attempt made its rejection final", kind: ledger.Debit, void: true, setup: poor},
		{name: "credit refused", kind: ledger.Credit, wantErr: worker.TypeAccountClosed,
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				if err := env.Ledger.CloseAccount(context.Background(), task.DestinationAccountID); err != nil {
					t.Fatal(err)
				}
				return task
			}},
		{name: "credit fenced", kind: ledger.Credit, wantErr: worker.TypeTransferFenced,
			setup: func(t *testing.T, env *ledgertest.Env) worker.Task {
				task := standard(ledger.Debit)(t, env)
				env.SetRecord(t, task.RecordKey, reservation.StatusFailed, task.TransferID)
				return task
			}},
		{name: "credit commits without createdAt", kind: ledger.Credit, setup: standard(ledger.Debit), createdAt: ptr("")},
		{name: "refund commits with an unreadable createdAt", kind: ledger.Refund, setup: standard(ledger.Debit), createdAt: ptr("yesterday")},
		{name: "debit refused with an unreadable createdAt", kind: ledger.Debit, setup: poor, createdAt: ptr("2026-01-02 03:04:05")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := c.setup(t, env)
			start := time.Now()
			task.CreatedAt = start.Add(-accepted).UTC().Format(reservation.TimeFormat)
			if c.createdAt != nil {
				task.CreatedAt = *c.createdAt
			}
			payload, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			var poster worker.Poster = env.Ledger
			if c.void {
				poster = voidedMeanwhile{env.Ledger}
			}
			var opts []worker.Option
			if c.owned {
				opts = append(opts, worker.EnforceOwnership())
			}
			logs := &logBuffer{}
			w, err := worker.New(c.kind, poster, slog.New(slog.NewJSONHandler(logs, nil)), opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Invoke(context.Background(), payload)
			elapsed := time.Since(start)
			var lerr messages.InvokeResponse_Error
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Invoke: %v, want success", err)
			case c.wantErr != "" && (!errors.As(err, &lerr) || lerr.Type != c.wantErr):
				t.Fatalf("Invoke error = %v, want %s", err, c.wantErr)
			}

			settled, err := emftest.With(logs.bytes(), metrics.TimeToSettle)
			if err != nil {
				t.Fatalf("EMF: %v", err)
			}
			if c.want == "" {
				if len(settled) != 0 {
					t.Fatalf("published TimeToSettle %+v, want none", settled)
				}
				if c.createdAt != nil && !strings.Contains(string(logs.bytes()), `"msg":"time to settle not published"`) {
					t.Errorf("no line says why the time to settle was not published:\n%s", logs.bytes())
				}
				return
			}
			if len(settled) != 1 {
				t.Fatalf("published TimeToSettle %d times (%+v), want once", len(settled), settled)
			}
			d := settled[0]
			if d.Dimensions["Outcome"] != c.want || len(d.Dimensions) != 1 || d.Units[metrics.TimeToSettle] != metrics.Milliseconds {
				t.Errorf("dimensions %v units %v, want Outcome=%s alone, in Milliseconds", d.Dimensions, d.Units, c.want)
			}
			// createdAt is stored to the millisecond, truncated.
			ms := d.Values[metrics.TimeToSettle]
			lo, hi := float64(accepted.Milliseconds()), float64(accepted+elapsed+time.Millisecond)/float64(time.Millisecond)
			if ms < lo || ms > hi {
				t.Errorf("TimeToSettle = %v ms, want between %v and %v", ms, lo, hi)
			}
			for _, rec := range logs.records(t) {
				if _, ok := rec["_aws"]; ok && (rec["transferId"] != task.TransferID || rec["recordKey"] != task.RecordKey || rec["settledBy"] != metrics.ServiceWorker) {
					t.Errorf("metric line %v: want transferId %s, recordKey %s, settledBy worker", rec, task.TransferID, task.RecordKey)
				}
			}
		})
	}
}

// poor opens a source that cannot pay (299 USD) and starts a 300 USD
// transfer from it.
func poor(t *testing.T, env *ledgertest.Env) worker.Task {
	t.Helper()
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "USD", 299)
	env.OpenAccount(t, dst, "USD", 0)
	return taskOf(env.NewTransfer(t, src, dst, 300, "USD"))
}

func ptr[T any](v T) *T { return &v }

func (b *logBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
