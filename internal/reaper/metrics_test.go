package reaper_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/metrics/emftest"
	"github.com/exactlyonce/transfers/internal/reaper"
)

// lockedBuffer collects log lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// A sweep publishes, as EMF documents in its log, the RECONCILING records
// it found, the transfers it settled, and for each settlement its outcome
// and whether it refunded the debit. Every log line about a transfer names
// it and its record key (a hash), never the raw key.
func TestSweepPublishesMetrics(t *testing.T) {
	e := newEnv(t, envOptions{})
	fenced := e.newTransfer(t, "TransferFenced", 25*time.Minute)
	e.closeExecution(t, fenced)
	e.markInProgress(t, fenced)
	e.post(t, fenced, debit)
	e.markReconciling(t, fenced)
	credited := e.newTransfer(t, "TransferFenced", 30*time.Minute)
	e.closeExecution(t, credited)
	e.markInProgress(t, credited)
	e.post(t, credited, debit, credit)

	logs := &lockedBuffer{}
	r, err := reaper.New(e.config(), e.db, e.sfn, e.ledger, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Sweep(testContext(t))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if res.Found != 2 || res.Reconciling != 1 {
		t.Errorf("Sweep = %+v; want 2 found, 1 reconciling", res)
	}

	docs, err := emftest.Docs(logs.Bytes())
	if err != nil {
		t.Fatalf("EMF: %v", err)
	}
	reaperDims := map[string]string{"Service": metrics.ServiceReaper}
	for _, c := range []struct {
		name string
		dims map[string]string
		want float64
	}{
		{metrics.Reconciling, reaperDims, 1},
		{metrics.Swept, reaperDims, 2},
		{metrics.Reaped, map[string]string{"Service": metrics.ServiceReaper, "Outcome": string(reaper.OutcomeReversed)}, 1},
		{metrics.Reaped, map[string]string{"Service": metrics.ServiceReaper, "Outcome": string(reaper.OutcomeCompleted)}, 1},
		{metrics.Refunded, reaperDims, 1},
	} {
		if got, found := emftest.Sum(docs, c.name, c.dims); !found || got != c.want {
			t.Errorf("%s%v = %v (found %v); want %v", c.name, c.dims, got, found, c.want)
		}
	}

	keys := map[string]string{fenced.rec.ResourceID: fenced.rec.Key, credited.rec.ResourceID: credited.rec.Key}
	for _, line := range strings.Split(strings.TrimSpace(string(logs.Bytes())), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		id, ok := rec["transferId"].(string)
		if !ok {
			continue
		}
		if rec["recordKey"] != keys[id] {
			t.Errorf("line %s: recordKey %v, want %s", line, rec["recordKey"], keys[id])
		}
	}
}
