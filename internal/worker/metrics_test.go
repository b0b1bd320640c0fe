package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/metrics/emftest"
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
