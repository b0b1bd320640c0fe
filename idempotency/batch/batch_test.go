package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/batch"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/keypath"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

const (
	queue     = "arn:aws:sqs:eu-west-1:111122223333:orders"
	otherQ    = "arn:aws:sqs:eu-west-1:111122223333:refunds"
	fifoQueue = "arn:aws:sqs:eu-west-1:111122223333:orders.fifo"
	stream    = "arn:aws:kinesis:eu-west-1:111122223333:stream/orders"
	table     = "arn:aws:dynamodb:eu-west-1:111122223333:table/orders/stream/2026-03-01T00:00:00.000"
)

var (
	errLedger    = errors.New("ledger unavailable")
	errThrottled = errors.New("throttled")
)

// world is one case's: a memory store, a record handler that notes the
// records it runs and fails those it is told to, and the reasons the
// wrapper gave for the failures it reported.
type world struct {
	t     *testing.T
	store *idemtest.MemoryStore
	cfg   idempotency.Config
	idem  *idempotency.Idempotency
	ran   []string
	fail  map[string]error
	why   map[string]error // OnFailure's, by record id
}

func newWorld(t *testing.T) *world {
	return &world{t: t, store: idemtest.NewMemoryStore(), fail: map[string]error{}, why: map[string]error{}}
}

func (w *world) i() *idempotency.Idempotency {
	w.t.Helper()
	if w.idem == nil {
		cfg := w.cfg
		cfg.Store = w.store
		i, err := idempotency.New(cfg)
		if err != nil {
			w.t.Fatal(err)
		}
		w.idem = i
	}
	return w.idem
}

func (w *world) run(id string) error {
	w.ran = append(w.ran, id)
	return w.fail[id]
}

// calls checks the store calls of each operation since the last check,
// and that there were no others.
func (w *world) calls(want map[idemtest.Op]int) {
	w.t.Helper()
	total := 0
	for op, n := range want {
		total += n
		if got := w.store.Calls(op); got != n {
			w.t.Errorf("%s calls = %d, want %d", op, got, n)
		}
	}
	if got := w.store.TotalCalls(); got != total {
		w.t.Errorf("store calls = %d, want %d", got, total)
	}
	w.store.ResetCalls()
}

func (w *world) wantRan(ids ...string) {
	w.t.Helper()
	if !slices.Equal(w.ran, ids) {
		w.t.Errorf("ran %v, want %v", w.ran, ids)
	}
}

func (w *world) wantWhy(id string, want error) {
	w.t.Helper()
	if got := w.why[id]; !errors.Is(got, want) {
		w.t.Errorf("reason of %s = %v, want %v", id, got, want)
	}
}

// sqs sends the messages through batch.SQS with c and returns the ids
// reported failed.
func (w *world) sqs(ctx context.Context, c batch.Config[events.SQSMessage], msgs ...events.SQSMessage) []string {
	w.t.Helper()
	c.OnFailure = func(_ context.Context, m events.SQSMessage, err error) { w.why[m.MessageId] = err }
	h := batch.SQS(w.i(), c, func(_ context.Context, m events.SQSMessage) error { return w.run(m.MessageId) })
	resp, err := h(ctx, events.SQSEvent{Records: msgs})
	if err != nil {
		w.t.Fatalf("SQS handler: %v", err)
	}
	if resp.BatchItemFailures == nil {
		w.t.Error("BatchItemFailures is nil, want a list")
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func msg(source, id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: source}
}

func wantFailed(t *testing.T, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("reported failed %v, want %v", got, want)
	}
}

type none = batch.Config[events.SQSMessage]

var orderID = keypath.MustCompile("orderId")

func bodyKey(m events.SQSMessage) (string, error) { return orderID.KeyJSON([]byte(m.Body)) }

var sqsCases = []struct {
	name string
	run  func(t *testing.T, w *world)
}{
	{"new messages run once each and settle", func(t *testing.T, w *world) {
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a"), msg(queue, "m2", "b"), msg(queue, "m3", "c")))
		w.wantRan("m1", "m2", "m3")
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 3, idemtest.OpSettle: 3})
		if e, ok := w.store.Peek(queue, "m2"); !ok || e.Status != idempotency.EntryCompleted || e.Fingerprint != idempotency.Fingerprint([]byte("b")) {
			t.Errorf("record of m2 = %+v, want COMPLETED with the body's fingerprint", e)
		}
	}},
	{"a redelivered batch runs nothing", func(t *testing.T, w *world) {
		batchOf := []events.SQSMessage{msg(queue, "m1", "a"), msg(queue, "m2", "b")}
		w.sqs(t.Context(), none{}, batchOf...)
		w.store.ResetCalls()
		wantFailed(t, w.sqs(t.Context(), none{}, batchOf...))
		w.wantRan("m1", "m2")
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 2})
	}},
	{"a failed message is reported and released; its redelivery runs it", func(t *testing.T, w *world) {
		w.fail["m2"] = errLedger
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a"), msg(queue, "m2", "b"), msg(queue, "m3", "c")), "m2")
		w.wantRan("m1", "m2", "m3")
		w.wantWhy("m2", errLedger)
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 3, idemtest.OpSettle: 2, idemtest.OpRelease: 1})
		if e, _ := w.store.Peek(queue, "m2"); e.Status != idempotency.EntryReleased {
			t.Errorf("record of m2 = %s, want RELEASED", e.Status)
		}
		delete(w.fail, "m2")
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m2", "b")))
		w.wantRan("m1", "m2", "m3", "m2")
	}},
	{"a message in flight elsewhere is reported and not run", func(t *testing.T, w *world) {
		now := time.Now()
		if _, ok, err := w.store.Acquire(t.Context(), idempotency.AcquireInput{
			Scope: queue, Key: "m2", Fingerprint: idempotency.Fingerprint([]byte("b")), Now: now,
			LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
		}); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		w.store.ResetCalls()
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a"), msg(queue, "m2", "b"), msg(queue, "m3", "c")), "m2")
		w.wantRan("m1", "m3")
		w.wantWhy("m2", idempotency.ErrInProgress)
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 3, idemtest.OpSettle: 2})
	}},
	{"a message id seen with another body is reported", func(t *testing.T, w *world) {
		w.sqs(t.Context(), none{}, msg(queue, "m1", "a"))
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "changed")), "m1")
		w.wantRan("m1")
		w.wantWhy("m1", idempotency.ErrKeyReused)
	}},
	{"FIFO stops at the first failure and reports the rest", func(t *testing.T, w *world) {
		w.fail["m2"] = errLedger
		wantFailed(t, w.sqs(t.Context(), none{}, msg(fifoQueue, "m1", "a"), msg(fifoQueue, "m2", "b"), msg(fifoQueue, "m3", "c"), msg(fifoQueue, "m4", "d")), "m2", "m3", "m4")
		w.wantRan("m1", "m2")
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 1, idemtest.OpRelease: 1})
		if len(w.why) != 1 {
			t.Errorf("OnFailure of %v, want of m2 alone", w.why)
		}
	}},
	{"FIFO stops at a store failure too", func(t *testing.T, w *world) {
		w.store.FailBefore(idemtest.OpAcquire, errThrottled)
		wantFailed(t, w.sqs(t.Context(), none{}, msg(fifoQueue, "m1", "a"), msg(fifoQueue, "m2", "b")), "m1", "m2")
		w.wantRan()
		w.wantWhy("m1", errThrottled)
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1})
	}},
	{"key from the body with a Path", func(t *testing.T, w *world) {
		c := none{Key: bodyKey}
		wantFailed(t, w.sqs(t.Context(), c, msg(queue, "m1", `{"orderId":"o-1"}`), msg(queue, "m2", `{"orderId":"o-1"}`), msg(queue, "m3", `{"orderId":"o-2"}`)))
		w.wantRan("m1", "m3")
		if _, ok := w.store.Peek(queue, "o-1"); !ok {
			t.Error("no record under the order id")
		}
	}},
	{"key from the record with KeyFunc", func(t *testing.T, w *world) {
		c := none{Key: keypath.KeyFunc[events.SQSMessage](keypath.MustCompile("powertools_json(body).orderId"))}
		wantFailed(t, w.sqs(t.Context(), c, msg(queue, "m1", `{"orderId":"o-1"}`), msg(queue, "m2", `{"orderId":"o-1"}`)))
		w.wantRan("m1")
	}},
	{"payload from a selector", func(t *testing.T, w *world) {
		c := none{Key: bodyKey, Payload: keypath.PayloadFunc[events.SQSMessage](keypath.MustCompile("powertools_json(body).amount"))}
		wantFailed(t, w.sqs(t.Context(), c,
			msg(queue, "m1", `{"orderId":"o-1","amount":5,"sentAt":"10:00"}`),
			msg(queue, "m2", `{"orderId":"o-1","amount":5,"sentAt":"10:01"}`),
			msg(queue, "m3", `{"orderId":"o-1","amount":6}`)), "m3")
		w.wantRan("m1")
		w.wantWhy("m3", idempotency.ErrKeyReused)
	}},
	{"a message without a key is reported and touches nothing", func(t *testing.T, w *world) {
		wantFailed(t, w.sqs(t.Context(), none{Key: bodyKey}, msg(queue, "m1", `{}`), msg(queue, "m2", `not json`)), "m1", "m2")
		w.wantRan()
		w.wantWhy("m1", idempotency.ErrKeyMissing)
		if errors.Is(w.why["m2"], idempotency.ErrKeyMissing) || w.why["m2"] == nil {
			t.Errorf("reason of m2 = %v, want the decoding error", w.why["m2"])
		}
		w.calls(nil)
	}},
	{"a message without a key runs without idempotency when optional", func(t *testing.T, w *world) {
		c := none{Key: bodyKey, OptionalKey: true}
		for range 2 {
			wantFailed(t, w.sqs(t.Context(), c, msg(queue, "m1", `{}`)))
		}
		w.wantRan("m1", "m1")
		w.calls(nil)
	}},
	{"a malformed key is reported even when optional", func(t *testing.T, w *world) {
		c := none{Key: func(events.SQSMessage) (string, error) { return "bad\tkey", nil }, OptionalKey: true}
		wantFailed(t, w.sqs(t.Context(), c, msg(queue, "m1", "a")), "m1")
		w.wantRan()
		w.wantWhy("m1", idempotency.ErrKeyMalformed)
		w.calls(nil)
	}},
	{"a store failure reports that message alone", func(t *testing.T, w *world) {
		w.store.FailBefore(idemtest.OpAcquire, errThrottled)
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a"), msg(queue, "m2", "b"), msg(queue, "m3", "c")), "m1")
		w.wantRan("m2", "m3")
		w.wantWhy("m1", errThrottled)
	}},
	{"a permanent failure is stored and reported at every delivery", func(t *testing.T, w *world) {
		w.fail["m1"] = idempotency.Permanent(errLedger)
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a")), "m1")
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1, idemtest.OpSettle: 1})
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a")), "m1")
		w.wantRan("m1")
		w.wantWhy("m1", idempotency.ErrStoredFailure)
		w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1})
	}},
	{"a done context reports every message not started", func(t *testing.T, w *world) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		wantFailed(t, w.sqs(ctx, none{}, msg(queue, "m1", "a"), msg(queue, "m2", "b")), "m1", "m2")
		w.wantRan()
		w.calls(nil)
	}},
	{"a context that ends midway reports the rest", func(t *testing.T, w *world) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		h := batch.SQS(w.i(), none{}, func(_ context.Context, m events.SQSMessage) error {
			w.ran = append(w.ran, m.MessageId)
			if m.MessageId == "m2" {
				cancel()
			}
			return nil
		})
		resp, _ := h(ctx, events.SQSEvent{Records: []events.SQSMessage{msg(queue, "m1", "a"), msg(queue, "m2", "b"), msg(queue, "m3", "c")}})
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m3" {
			t.Errorf("failures %v, want m3", resp.BatchItemFailures)
		}
		w.wantRan("m1", "m2")
	}},
	{"the scope is the queue unless set", func(t *testing.T, w *world) {
		wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a"), msg(otherQ, "m1", "a")))
		w.wantRan("m1", "m1")
		c := none{Scope: "orders"}
		wantFailed(t, w.sqs(t.Context(), c, msg(queue, "m2", "a"), msg(otherQ, "m2", "a")))
		w.wantRan("m1", "m1", "m2")
	}},
	{"disabled runs every message", func(t *testing.T, w *world) {
		w.cfg.Disabled = true
		for range 2 {
			wantFailed(t, w.sqs(t.Context(), none{}, msg(queue, "m1", "a")))
		}
		w.wantRan("m1", "m1")
		w.calls(nil)
	}},
}

func TestSQS(t *testing.T) {
	for _, c := range sqsCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newWorld(t)) })
	}
}

// kinesis sends the records through batch.Kinesis and returns the
// sequence numbers reported failed.
func (w *world) kinesis(ctx context.Context, c batch.Config[events.KinesisEventRecord], recs ...events.KinesisEventRecord) []string {
	w.t.Helper()
	c.OnFailure = func(_ context.Context, r events.KinesisEventRecord, err error) { w.why[r.EventID] = err }
	h := batch.Kinesis(w.i(), c, func(_ context.Context, r events.KinesisEventRecord) error { return w.run(r.EventID) })
	resp, err := h(ctx, events.KinesisEvent{Records: recs})
	if err != nil {
		w.t.Fatalf("Kinesis handler: %v", err)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func kin(n int, data string) events.KinesisEventRecord {
	seq := fmt.Sprintf("4959%04d", n)
	return events.KinesisEventRecord{
		EventID: "shardId-000000000000:" + seq, EventSourceArn: stream,
		Kinesis: events.KinesisRecord{Data: []byte(data), SequenceNumber: seq, PartitionKey: "p"},
	}
}

func TestKinesis(t *testing.T) {
	type config = batch.Config[events.KinesisEventRecord]
	tests := []struct {
		name string
		run  func(t *testing.T, w *world)
	}{
		{"new records run and a redelivery runs nothing", func(t *testing.T, w *world) {
			recs := []events.KinesisEventRecord{kin(1, "a"), kin(2, "b")}
			wantFailed(t, w.kinesis(t.Context(), config{}, recs...))
			w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 2})
			wantFailed(t, w.kinesis(t.Context(), config{}, recs...))
			w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 2})
			w.wantRan(recs[0].EventID, recs[1].EventID)
			if e, ok := w.store.Peek(stream, recs[0].EventID); !ok || e.Fingerprint != idempotency.Fingerprint([]byte("a")) {
				t.Errorf("record = %+v, want one under the eventID with the data's fingerprint", e)
			}
		}},
		{"stops at the first failure and reports it alone", func(t *testing.T, w *world) {
			recs := []events.KinesisEventRecord{kin(1, "a"), kin(2, "b"), kin(3, "c"), kin(4, "d")}
			w.fail[recs[1].EventID] = errLedger
			wantFailed(t, w.kinesis(t.Context(), config{}, recs...), recs[1].Kinesis.SequenceNumber)
			w.wantRan(recs[0].EventID, recs[1].EventID)
			w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 2, idemtest.OpSettle: 1, idemtest.OpRelease: 1})
			// Lambda resumes from it: the first is skipped, the rest run.
			delete(w.fail, recs[1].EventID)
			wantFailed(t, w.kinesis(t.Context(), config{}, recs...))
			w.wantRan(recs[0].EventID, recs[1].EventID, recs[1].EventID, recs[2].EventID, recs[3].EventID)
		}},
		{"key from the data with KeyFunc", func(t *testing.T, w *world) {
			c := config{Key: keypath.KeyFunc[events.KinesisEventRecord](keypath.MustCompile("powertools_json(powertools_base64(kinesis.data)).id"))}
			wantFailed(t, w.kinesis(t.Context(), c, kin(1, `{"id":"o-1"}`), kin(2, `{"id":"o-1"}`), kin(3, `{"id":"o-2"}`)))
			w.wantRan(kin(1, "").EventID, kin(3, "").EventID)
		}},
		{"a done context reports the first record not started", func(t *testing.T, w *world) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			wantFailed(t, w.kinesis(ctx, config{}, kin(1, "a"), kin(2, "b")), kin(1, "").Kinesis.SequenceNumber)
			w.wantRan()
			w.calls(nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newWorld(t)) })
	}
}

// dynamodb sends the records through batch.DynamoDB and returns the
// sequence numbers reported failed.
func (w *world) dynamodb(ctx context.Context, c batch.Config[events.DynamoDBEventRecord], recs ...events.DynamoDBEventRecord) []string {
	w.t.Helper()
	c.OnFailure = func(_ context.Context, r events.DynamoDBEventRecord, err error) { w.why[r.EventID] = err }
	h := batch.DynamoDB(w.i(), c, func(_ context.Context, r events.DynamoDBEventRecord) error { return w.run(r.EventID) })
	resp, err := h(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil {
		w.t.Fatalf("DynamoDB handler: %v", err)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func change(n int, pk, status string) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID: fmt.Sprintf("ev-%d", n), EventName: "MODIFY", EventSourceArn: table,
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprintf("%d00", n),
			Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(pk)},
			NewImage:       map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(pk), "status": events.NewStringAttribute(status)},
		},
	}
}

func TestDynamoDB(t *testing.T) {
	type config = batch.Config[events.DynamoDBEventRecord]
	tests := []struct {
		name string
		run  func(t *testing.T, w *world)
	}{
		{"new records run and a redelivery runs nothing", func(t *testing.T, w *world) {
			recs := []events.DynamoDBEventRecord{change(1, "o-1", "PAID"), change(2, "o-2", "PAID")}
			wantFailed(t, w.dynamodb(t.Context(), config{}, recs...))
			wantFailed(t, w.dynamodb(t.Context(), config{}, recs...))
			w.wantRan("ev-1", "ev-2")
			w.calls(map[idemtest.Op]int{idemtest.OpAcquire: 4, idemtest.OpSettle: 2})
			want := idempotency.Fingerprint([]byte(`{"eventName":"MODIFY","Keys":{"pk":{"S":"o-1"}},"NewImage":{"pk":{"S":"o-1"},"status":{"S":"PAID"}}}`))
			if e, ok := w.store.Peek(table, "ev-1"); !ok || e.Fingerprint != want {
				t.Errorf("record = %+v, want one under the eventID with the change's fingerprint", e)
			}
		}},
		{"stops at the first failure and reports its sequence number", func(t *testing.T, w *world) {
			w.fail["ev-1"] = errLedger
			wantFailed(t, w.dynamodb(t.Context(), config{}, change(1, "o-1", "PAID"), change(2, "o-2", "PAID")), "100")
			w.wantRan("ev-1")
			w.wantWhy("ev-1", errLedger)
		}},
		{"key from the item's keys with KeyFunc", func(t *testing.T, w *world) {
			c := config{Key: keypath.KeyFunc[events.DynamoDBEventRecord](keypath.MustCompile("dynamodb.Keys.pk.S"))}
			wantFailed(t, w.dynamodb(t.Context(), c, change(1, "o-1", "PAID"), change(2, "o-1", "PAID")))
			w.wantRan("ev-1")
			// The same item changed otherwise: the key is reused.
			wantFailed(t, w.dynamodb(t.Context(), c, change(3, "o-1", "REFUNDED")), "300")
			w.wantWhy("ev-3", idempotency.ErrKeyReused)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newWorld(t)) })
	}
}
