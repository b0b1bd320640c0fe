package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func newIdem(t *testing.T, cfg idempotency.Config) *idempotency.Idempotency {
	t.Helper()
	i, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func echo(_ context.Context, o order) (receipt, error) { return receipt{Amount: o.Amount}, nil }

// A record of another format under the same table key is refused by
// name, and left as it is.
func TestDoRefusesAnotherFormat(t *testing.T) {
	client := idemtest.Client(t)
	table := idemtest.Table(t, client)
	ctx := t.Context()
	// A record without a format, as an application's own reservation
	// store writes one, and a record of a later format.
	unformatted := map[string]types.AttributeValue{
		idempotency.AttrKey:    &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", "k1")},
		idempotency.AttrStatus: &types.AttributeValueMemberS{Value: "RESERVED"},
		"resourceId":           &types.AttributeValueMemberS{Value: "transfer-1"},
	}
	later := map[string]types.AttributeValue{
		idempotency.AttrKey:    &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", "k2")},
		idempotency.AttrFormat: &types.AttributeValueMemberS{Value: "idempotency.Entry/9"},
	}
	for _, item := range []map[string]types.AttributeValue{unformatted, later} {
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	i := newIdem(t, idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	for key, format := range map[string]string{"k1": "", "k2": "idempotency.Entry/9"} {
		runs := 0
		_, err := idempotency.Do(ctx, i, op("alice"), order{key, 1}, func(context.Context, order) (receipt, error) {
			runs++
			return receipt{}, nil
		})
		var fe *idempotency.FormatError
		if !errors.As(err, &fe) || !errors.Is(err, idempotency.ErrFormat) || fe.Format != format || runs != 0 {
			t.Errorf("Do on a record of format %q = %v after %d runs, want a *FormatError naming it", format, err, runs)
		}
	}
	for _, want := range []map[string]types.AttributeValue{unformatted, later} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{idempotency.AttrKey: want[idempotency.AttrKey]}, ConsistentRead: aws.Bool(true)})
		if err != nil || !reflect.DeepEqual(out.Item, want) {
			t.Errorf("the record = %v, %v, want it unchanged: %v", out.Item, err, want)
		}
	}
	if _, err := idempotency.NewDynamoDBPersistence(client, table).Get(ctx, "alice", "k1"); !errors.Is(err, idempotency.ErrFormat) {
		t.Errorf("Get = %v, want ErrFormat", err)
	}
}

func TestDoStoreFaults(t *testing.T) {
	errDown := errors.New("store unreachable")
	for _, c := range []struct {
		name  string
		op    idemtest.Op
		after bool
		// wantRuns and wantStatus after the faulty call; then a retry
		// must give the output, replayed or not.
		wantRuns   int
		wantStatus idempotency.EntryStatus
		replayed   bool
	}{
		{"acquire never reached the store", idemtest.OpAcquire, false, 0, "", false},
		{"acquire answer lost", idemtest.OpAcquire, true, 0, idempotency.EntryInProgress, false},
		{"settle never reached the store", idemtest.OpSettle, false, 1, idempotency.EntryInProgress, false},
		{"settle answer lost", idemtest.OpSettle, true, 1, idempotency.EntryCompleted, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := idemtest.NewMemoryStore()
			clock := idemtest.NewClock(time.Now())
			i := newIdem(t, idempotency.Config{Store: m, Clock: clock.Now, Lease: time.Minute})
			if c.after {
				m.FailAfter(c.op, errDown)
			} else {
				m.FailBefore(c.op, errDown)
			}
			runs := 0
			fn := func(_ context.Context, o order) (receipt, error) { runs++; return receipt{Amount: o.Amount}, nil }
			if _, err := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 5}, fn); !errors.Is(err, errDown) {
				t.Errorf("Do = %v, want the store's error", err)
			}
			if runs != c.wantRuns {
				t.Errorf("runs = %d, want %d", runs, c.wantRuns)
			}
			e, ok := m.Peek("alice", "k1")
			if e.Status != c.wantStatus || ok != (c.wantStatus != "") {
				t.Errorf("record = %q (%v), want %q", e.Status, ok, c.wantStatus)
			}
			if m.Calls(c.op) != 1 {
				t.Errorf("%s calls = %d, want 1", c.op, m.Calls(c.op))
			}
			// A lease left behind expires; the retry then succeeds.
			clock.Advance(time.Minute)
			res, err := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 5}, fn)
			if err != nil || res.Output.Amount != 5 || res.Replayed != c.replayed {
				t.Errorf("retry = %+v, %v, want amount 5 replayed %v", res, err, c.replayed)
			}
		})
	}
}

func TestDoPanicReleases(t *testing.T) {
	m := idemtest.NewMemoryStore()
	i := newIdem(t, idempotency.Config{Store: m})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_, _ = idempotency.Do(t.Context(), i, op("alice"), order{"k1", 1}, func(context.Context, order) (receipt, error) {
			panic("boom")
		})
	}()
	if e, _ := m.Peek("alice", "k1"); e.Status != idempotency.EntryReleased {
		t.Errorf("record after a panic = %q, want RELEASED", e.Status)
	}
	if _, err := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 1}, echo); err != nil {
		t.Errorf("retry after a panic = %v", err)
	}
}

func TestDoBadCalls(t *testing.T) {
	m := idemtest.NewMemoryStore()
	i := newIdem(t, idempotency.Config{Store: m})
	errNoKey := errors.New("no key in the event")
	for _, c := range []struct {
		name string
		op   idempotency.Operation[order]
		in   order
		want error
	}{
		{"missing key", op("alice"), order{"", 1}, idempotency.ErrKeyMissing},
		{"malformed key", op("alice"), order{"tab\there", 1}, idempotency.ErrKeyMalformed},
		{"key function fails", idempotency.Operation[order]{KeyFunc: func(order) (string, error) { return "", errNoKey }}, order{"k", 1}, errNoKey},
		{"explicit key is validated", idempotency.Operation[order]{Key: "bad\x00key"}, order{}, idempotency.ErrKeyMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := idempotency.Do(t.Context(), i, c.op, c.in, echo); !errors.Is(err, c.want) {
				t.Errorf("Do = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("key and key function", func(t *testing.T) {
		both := op("alice")
		both.Key = "k"
		if _, err := idempotency.Do(t.Context(), i, both, order{"k", 1}, echo); err == nil {
			t.Error("Do with both a key and a key function succeeded")
		}
	})
	if n := m.TotalCalls(); n != 0 {
		t.Errorf("bad calls cost %d store calls, want 0", n)
	}
	if _, err := idempotency.New(idempotency.Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
}

// The payload function decides what a duplicate is: here, the amount
// alone, so a retry with another note is the same request.
func TestDoPayloadFunction(t *testing.T) {
	type note struct {
		Key, Note string
		Amount    int
	}
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore()})
	o := idempotency.Operation[note]{
		Key:     "k1",
		Payload: func(n note) ([]byte, error) { return []byte{byte(n.Amount)}, nil },
	}
	fn := func(_ context.Context, n note) (string, error) { return n.Note, nil }
	_, _ = idempotency.Do(t.Context(), i, o, note{"k1", "first", 3}, fn)
	res, err := idempotency.Do(t.Context(), i, o, note{"k1", "second", 3}, fn)
	if err != nil || !res.Replayed || res.Output != "first" {
		t.Errorf("Do = %+v, %v, want the first output replayed", res, err)
	}
	if _, err := idempotency.Do(t.Context(), i, o, note{"k1", "first", 4}, fn); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("Do with another amount = %v, want ErrKeyReused", err)
	}
}

// Concurrent calls with one key run the function once; the others are
// told it is in progress, or replay it.
func TestDoConcurrent(t *testing.T) {
	m := idemtest.NewMemoryStore()
	i := newIdem(t, idempotency.Config{Store: m, CacheSize: 4})
	var mu sync.Mutex
	runs := 0
	fn := func(_ context.Context, o order) (receipt, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		return receipt{Amount: o.Amount}, nil
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := idempotency.Do(context.Background(), i, op("alice"), order{"k1", 9}, fn)
			if err != nil && !errors.Is(err, idempotency.ErrInProgress) || err == nil && res.Output.Amount != 9 {
				t.Errorf("Do = %+v, %v", res, err)
			}
		}()
	}
	wg.Wait()
	if runs != 1 {
		t.Errorf("runs = %d, want 1", runs)
	}
}

// The cache hands out copies: a caller that changes its output changes
// nothing for the next replay.
func TestDoCacheCopies(t *testing.T) {
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 1})
	fn := func(context.Context, order) ([]byte, error) { return []byte("abc"), nil }
	_, _ = idempotency.Do(t.Context(), i, op("alice"), order{"k1", 1}, fn)
	for range 2 {
		res, err := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 1}, fn)
		if err != nil || string(res.Output) != "abc" || !res.FromCache {
			t.Fatalf("Do = %+v, %v", res, err)
		}
		res.Output[0] = 'X'
	}
	// One entry: a second key evicts the first.
	_, _ = idempotency.Do(t.Context(), i, op("alice"), order{"k2", 1}, fn)
	if res, _ := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 1}, fn); res.FromCache || !res.Replayed {
		t.Errorf("Do after eviction = %+v, want a replay from the store", res)
	}
}

func TestWrapOnReplay(t *testing.T) {
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 2})
	var replays []idempotency.Replay
	o := op("alice")
	o.OnReplay = func(_ context.Context, r idempotency.Replay) { replays = append(replays, r) }
	handler := idempotency.Wrap(i, o, echo)
	for range 2 {
		if out, err := handler(t.Context(), order{"k1", 4}); err != nil || out.Amount != 4 {
			t.Fatalf("handler = %+v, %v", out, err)
		}
	}
	if len(replays) != 1 || !replays[0].FromCache || replays[0].Failed {
		t.Errorf("replays = %+v, want one from the cache", replays)
	}
}

// WrapWithHook changes every replayed output, from the store or the
// cache, and nothing else: not the first run's, not the stored one, not
// the cache's, not a stored failure.
func TestWrapWithHook(t *testing.T) {
	store := idemtest.NewMemoryStore()
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg := idempotency.Config{Store: store, Clock: clock.Now, Retention: time.Hour}
	var replays []idempotency.Replay
	hook := func(_ context.Context, out receipt, r idempotency.Replay) receipt {
		replays = append(replays, r)
		out.Run = -out.Run
		return out
	}
	fn := func(_ context.Context, o order) (receipt, error) {
		if o.Amount < 0 {
			return receipt{}, idempotency.Permanent(errRefused)
		}
		return receipt{Run: 1, Amount: o.Amount}, nil
	}
	cfg.CacheSize = 4
	cached := idempotency.WrapWithHook(newIdem(t, cfg), op("alice"), fn, hook)
	cfg.CacheSize = 0
	uncached := idempotency.WrapWithHook(newIdem(t, cfg), op("alice"), fn, hook)
	for n, c := range []struct {
		handler   func(context.Context, order) (receipt, error)
		wantRun   int64
		fromCache bool
	}{
		{cached, 1, false}, // runs: no hook
		{cached, -1, true},
		{cached, -1, true}, // the cache's value is unchanged by the hook
		{uncached, -1, false},
	} {
		out, err := c.handler(t.Context(), order{"k1", 5})
		if err != nil || out != (receipt{c.wantRun, 5}) {
			t.Errorf("call %d = %+v, %v, want run %d", n, out, err, c.wantRun)
		}
	}
	want := idempotency.Replay{ExpiresAt: clock.Now().Add(time.Hour)}
	if len(replays) != 3 || replays[0] != (idempotency.Replay{FromCache: true, ExpiresAt: want.ExpiresAt}) || replays[2] != want {
		t.Errorf("hook saw %+v, want two replays from the cache and one from the store, expiring at %v", replays, want.ExpiresAt)
	}
	if e, _ := store.Peek("alice", "k1"); string(e.Output) != `{"run":1,"amount":5}` {
		t.Errorf("stored output %s, want the function's", e.Output)
	}
	replays = nil
	for range 2 {
		if _, err := cached(t.Context(), order{"k2", -1}); err == nil {
			t.Error("a stored failure succeeded")
		}
	}
	if len(replays) != 0 {
		t.Errorf("the hook saw a stored failure: %+v", replays)
	}
}

// OnReplay is told when the replayed outcome expires.
func TestOnReplayExpiresAt(t *testing.T) {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), Clock: clock.Now, Retention: time.Hour})
	var got idempotency.Replay
	o := op("alice")
	o.OnReplay = func(_ context.Context, r idempotency.Replay) { got = r }
	_, _ = idempotency.Do(t.Context(), i, o, order{"k1", 1}, echo)
	clock.Advance(time.Minute)
	_, _ = idempotency.Do(t.Context(), i, o, order{"k1", 1}, echo)
	if want := clock.Now().Add(59 * time.Minute); !got.ExpiresAt.Equal(want) || got.FromCache || got.Failed {
		t.Errorf("replay %+v, want from the store, expiring at %v", got, want)
	}
}

// A cached output is handed out as a copy that shares nothing with the
// cache, whatever its type; and a record read with two output types
// decodes into each.
func TestDoCacheOutputTypes(t *testing.T) {
	type flat struct {
		N  int       `json:"n"`
		S  string    `json:"s"`
		At time.Time `json:"at"`
		A  [2]int    `json:"a"`
	}
	type deep struct {
		L []int          `json:"l"`
		M map[string]int `json:"m"`
		P *int           `json:"p"`
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 8})
	t.Run("flat", func(t *testing.T) {
		o := idempotency.Operation[int]{Scope: "alice", Key: "flat"}
		fn := func(context.Context, int) (flat, error) { return flat{1, "one", at, [2]int{1, 2}}, nil }
		_, _ = idempotency.Do(t.Context(), i, o, 1, fn)
		for range 3 {
			res, err := idempotency.Do(t.Context(), i, o, 1, fn)
			if err != nil || !res.FromCache || res.Output.N != 1 || res.Output.S != "one" || !res.Output.At.Equal(at) || res.Output.A != [2]int{1, 2} {
				t.Fatalf("Do = %+v, %v", res, err)
			}
			res.Output.N, res.Output.A[0] = 99, 99
		}
	})
	t.Run("deep", func(t *testing.T) {
		o := idempotency.Operation[int]{Scope: "alice", Key: "deep"}
		one := 1
		fn := func(context.Context, int) (deep, error) { return deep{[]int{1}, map[string]int{"a": 1}, &one}, nil }
		_, _ = idempotency.Do(t.Context(), i, o, 1, fn)
		for range 3 {
			res, err := idempotency.Do(t.Context(), i, o, 1, fn)
			if err != nil || !res.FromCache || res.Output.L[0] != 1 || res.Output.M["a"] != 1 || *res.Output.P != 1 {
				t.Fatalf("Do = %+v, %v", res, err)
			}
			res.Output.L[0], res.Output.M["a"], *res.Output.P = 99, 99, 99
		}
	})
	t.Run("two types", func(t *testing.T) {
		o := idempotency.Operation[int]{Scope: "alice", Key: "two"}
		_, _ = idempotency.Do(t.Context(), i, o, 1, func(context.Context, int) (int, error) { return 5, nil })
		for range 2 {
			n, err := idempotency.Do(t.Context(), i, o, 1, func(context.Context, int) (int, error) { return 0, nil })
			f, ferr := idempotency.Do(t.Context(), i, o, 1, func(context.Context, int) (float64, error) { return 0, nil })
			if err != nil || ferr != nil || n.Output != 5 || f.Output != 5 || !n.FromCache || !f.FromCache {
				t.Fatalf("Do = %+v, %v and %+v, %v, want 5 from the cache as an int and a float64", n, err, f, ferr)
			}
		}
	})
}

// The fingerprint of an input is Fingerprint of its json.Marshal, HTML
// escapes and all.
func TestDoFingerprintIsMarshal(t *testing.T) {
	store := idemtest.NewMemoryStore()
	i := newIdem(t, idempotency.Config{Store: store})
	for n, in := range []any{
		map[string]any{"b": "<a&b>", "a": []any{1.5, "é\u2028"}, "c": nil},
		"plain",
		struct {
			X string `json:"x,omitempty"`
			Y []byte `json:"y"`
		}{Y: []byte{0, 255}},
	} {
		o := idempotency.Operation[any]{Scope: "alice", Key: "k" + string(rune('0'+n))}
		if _, err := idempotency.Do(t.Context(), i, o, in, func(context.Context, any) (int, error) { return 0, nil }); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(in)
		if e, _ := store.Peek("alice", o.Key); e.Fingerprint != idempotency.Fingerprint(b) {
			t.Errorf("input %d: fingerprint %s, want Fingerprint(%s)", n, e.Fingerprint, b)
		}
	}
}
