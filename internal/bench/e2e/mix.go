package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// ByWorkflow is Op.By of the workflow's DynamoDB integration calls.
const ByWorkflow = "workflow"

// Op is one DynamoDB operation of a transfer, as it was sent.
type Op struct {
	// By is who issued it: a function's name for its SDK calls,
	// ByWorkflow for the workflow's integration calls.
	By string
	// Operation is the DynamoDB API operation: "TransactWriteItems",
	// "UpdateItem", ...
	Operation string
	// Body is the JSON request as sent.
	Body []byte
	// Error is the error code of the answer, "" for success; a cancelled
	// transaction lists its reasons: "TransactionCanceledException[None
	// ConditionalCheckFailed]".
	Error string
}

// Kind names the operation for reports: the operation and, for a
// transaction, its items' actions, e.g. "TransactWriteItems(Put,
// ConditionCheck)".
func (o Op) Kind() string {
	var tx struct {
		TransactItems []map[string]json.RawMessage
	}
	if !strings.HasPrefix(o.Operation, "Transact") || json.Unmarshal(o.Body, &tx) != nil || len(tx.TransactItems) == 0 {
		return o.Operation
	}
	actions := make([]string, len(tx.TransactItems))
	for i, item := range tx.TransactItems {
		actions[i] = strings.Join(slices.Sorted(maps.Keys(item)), "+")
	}
	return o.Operation + "(" + strings.Join(actions, ", ") + ")"
}

// Mix is the DynamoDB operations of one completed transfer, in the order
// they were issued, with the identifiers Replay rewrites in them.
type Mix struct {
	Ops []Op
	// TransferID, RecordKey (the idempotency record's pk) and Key (the
	// Idempotency-Key) of the captured transfer, and its accounts.
	TransferID string
	RecordKey  string
	Key        string
	Pair       Pair
	// Caller is the API caller that made the transfer.
	Caller string
}

// Kinds counts the operations by Op.Kind.
func (m Mix) Kinds() map[string]int {
	out := map[string]int{}
	for _, o := range m.Ops {
		out[o.Kind()]++
	}
	return out
}

// String lists the operations, one a line: who issued it and its kind.
func (m Mix) String() string {
	var b strings.Builder
	for i, o := range m.Ops {
		fmt.Fprintf(&b, "%d. %s %s", i+1, o.By, o.Kind())
		if o.Error != "" {
			b.WriteString(" -> " + o.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// recording collects the operations of one transfer: those whose body
// names its record, and the reads of its accounts' versions (each leg
// reads its account's version first).
type recording struct {
	recordKey []byte
	// accounts are the pks of the pair's account items, as a request
	// names them.
	accounts [][]byte
	mu       sync.Mutex
	ops      []Op
}

func newRecording(recordKey string, p Pair) *recording {
	r := &recording{recordKey: []byte(recordKey)}
	for _, id := range []string{p.Source, p.Destination} {
		r.accounts = append(r.accounts, []byte(`{"S":"ACCOUNT#`+id+`"}`))
	}
	return r
}

func (r *recording) wants(body []byte) bool {
	if bytes.Contains(body, r.recordKey) {
		return true
	}
	if bytes.Contains(body, []byte(`"TransactItems"`)) || !bytes.Contains(body, []byte(`{"S":"ACCOUNT"}`)) ||
		!bytes.Contains(body, []byte(`"version"`)) {
		return false
	}
	for _, pk := range r.accounts {
		if bytes.Contains(body, pk) {
			return true
		}
	}
	return false
}

func (r *recording) add(o Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, o)
}

// CaptureConfig is the transfer Capture makes.
type CaptureConfig struct {
	// Pair are its accounts; required.
	Pair Pair
	// Caller, Amount, Currency and Timeout: as in Config.
	Caller   string
	Amount   int64
	Currency string
	Timeout  time.Duration
}

// Capture runs one transfer through the REST API, alone, and returns the
// DynamoDB operations it cost, in order: the functions' SDK calls and the
// workflow's integration calls that name its record, and the legs' reads
// of their accounts' versions. Calls that are not
// DynamoDB's (the orchestrator's StartExecution) are not part of it.
// Each operation is recorded once, as serialized before the SDK's
// retries; a retried attempt does not appear twice. The transfer must end
// COMPLETED with every operation successful.
func (p *Probe) Capture(ctx context.Context, st *stack.Stack, cfg CaptureConfig) (Mix, error) {
	c, err := Config{Count: 1, Pairs: []Pair{cfg.Pair}, Caller: cfg.Caller, Amount: cfg.Amount, Currency: cfg.Currency, Timeout: cfg.Timeout}.withDefaults()
	if err != nil {
		return Mix{}, err
	}
	if cfg.Pair.Source == "" || cfg.Pair.Destination == "" {
		return Mix{}, errors.New("e2e: capture: the pair names no accounts")
	}
	key := fmt.Sprintf("e2e-capture-%d", time.Now().UnixNano())
	rec := newRecording(recordKeyOf(c.Caller, key), cfg.Pair)
	if !p.capture.CompareAndSwap(nil, rec) {
		return Mix{}, errors.New("e2e: capture: another capture is in progress")
	}
	defer p.capture.Store(nil)
	client := newAPIClient(st.APIURL, c.Caller, 1)
	defer client.http.CloseIdleConnections()
	body, _ := json.Marshal(transferRequest{Source: cfg.Pair.Source, Destination: cfg.Pair.Destination, Amount: c.Amount, Currency: c.Currency}) // never fails
	id, _, _, err := p.transfer(ctx, client, key, body, c.Timeout)
	if err != nil {
		return Mix{}, fmt.Errorf("e2e: capture: %w", err)
	}
	rec.mu.Lock()
	m := Mix{Ops: slices.Clone(rec.ops), TransferID: id, RecordKey: string(rec.recordKey), Key: key, Pair: cfg.Pair, Caller: c.Caller}
	rec.mu.Unlock()
	for i, o := range m.Ops {
		if o.Error != "" {
			return m, fmt.Errorf("e2e: capture: operation %d (%s %s) failed: %s", i+1, o.By, o.Kind(), o.Error)
		}
	}
	if len(m.Ops) == 0 {
		return m, errors.New("e2e: capture: no DynamoDB operation named the transfer's record; is the probe wired into the stack (Probe.Options)?")
	}
	return m, nil
}

// recordKeyOf is the idempotency record's pk of a caller's key.
func recordKeyOf(caller, key string) string {
	return idempotency.RecordKey(Scope(caller), key)
}
