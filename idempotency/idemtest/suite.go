package idemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
)

// SuiteStore is a store under RunPersistenceSuite.
type SuiteStore struct {
	// Store is the idempotency.Persistence under test.
	Store idempotency.Persistence
	// PutForeign writes, under idempotency.RecordKey(scope, key), a
	// record whose format attribute is format, or that has none when
	// format is "" (as another application's record may have), the way another
	// writer sharing the store could. Nil when the store cannot hold such
	// a record (MemoryStore): the cases that need one skip, saying so.
	PutForeign func(ctx context.Context, scope, key, format string) error
	// Diverges names the cases (by their subtest names under the
	// suite's test, as "acquire/new key") in which the store is known to
	// break the rules, each with why: they skip, with the reason, so that
	// the rest of the suite still guards the store.
	Diverges map[string]string
}

// The times of the suite's calls: leases of a minute, outcomes kept an
// hour. Every time is judged at AcquireInput.Now, which the suite moves
// from the wall clock's present: a store that deletes expired records by
// its own clock (DynamoDB's Time to Live, a Redis key's expiry) deletes
// none while the suite runs.
const (
	suiteLease     = time.Minute
	suiteRetention = time.Hour
)

// Fingerprints of two payloads.
var (
	fpA = idempotency.Fingerprint([]byte(`{"payload":"a"}`))
	fpB = idempotency.Fingerprint([]byte(`{"payload":"b"}`))
)

// RunPersistenceSuite checks that a Persistence applies the rules of
// idempotency.Persistence, as DynamoDBPersistence and MemoryStore do: an
// acquisition takes a record exactly when there is none or it is
// idempotency.Entry.Free (each state, fingerprint and boundary of that
// rule), with a lease counter that starts at 1 and rises by one with every
// acquisition; settle and release apply only under the lease that holds
// the record (ID and count) and otherwise fail with idempotency.ErrFenced
// and write nothing; release keeps the counter; Get answers
// idempotency.ErrNotFound for a missing record; a record of another
// format is refused with an *idempotency.FormatError. Each check is a
// subtest.
//
// open is called once; the subtests share its store, each under a scope
// of its own, and do not run in parallel.
func RunPersistenceSuite(t *testing.T, open func(t *testing.T) SuiteStore) {
	t.Helper()
	s := open(t)
	if s.Store == nil {
		t.Fatal("idemtest: RunPersistenceSuite: open returned no Store")
	}
	for name := range s.Diverges {
		if !suiteCaseNamed(name) {
			t.Errorf("idemtest: SuiteStore.Diverges names %q, which is no case of the suite", name)
		}
	}
	run := newSuiteRun()
	for _, c := range acquireCases {
		t.Run("acquire/"+c.name, func(t *testing.T) {
			k := run.caseOf(t, s)
			k.skipIfDiverges("acquire/" + c.name)
			prior, exists := c.setup(k)
			now := c.at(prior)
			if exists {
				if free := prior.Free(c.fp, now); free != c.want {
					t.Fatalf("the case is wrong: Entry.Free = %v, the case wants acquired = %v", free, c.want)
				}
			}
			in := k.input(c.fp, now)
			e, acquired, err := s.Store.Acquire(k.ctx, in)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if acquired != c.want {
				t.Fatalf("Acquire at %v for fingerprint %s of %v: acquired = %v, want %v", now.Sub(k.base), short(c.fp), describe(prior, exists), acquired, c.want)
			}
			if !acquired {
				k.same("the record Acquire returned", e, prior)
				k.unchanged(prior)
				return
			}
			k.fresh(e, in, prior.LeaseCount+1)
			if exists && e.LeaseID == prior.LeaseID {
				t.Errorf("the new lease has the old lease's id %s", e.LeaseID)
			}
			k.same("Get after Acquire", k.get(), e)
		})
	}
	for _, c := range lifecycleCases {
		t.Run(c.name, func(t *testing.T) {
			k := run.caseOf(t, s)
			k.skipIfDiverges(c.name)
			if c.foreign && s.PutForeign == nil {
				t.Skip("idemtest: this store cannot hold a record of another format (SuiteStore.PutForeign is nil)")
			}
			c.run(k)
		})
	}
}

func suiteCaseNamed(name string) bool {
	for _, c := range acquireCases {
		if name == "acquire/"+c.name {
			return true
		}
	}
	for _, c := range lifecycleCases {
		if name == c.name {
			return true
		}
	}
	return false
}

// suiteRun names the scopes of one run of the suite.
type suiteRun struct{ id string }

func newSuiteRun() *suiteRun {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &suiteRun{id: hex.EncodeToString(b[:])}
}

// caseOf is the state of one subtest: its own scope, the key "k1", and
// base, the wall clock's present to the second.
func (r *suiteRun) caseOf(t *testing.T, s SuiteStore) *suiteCase {
	return &suiteCase{
		T:     t,
		ctx:   t.Context(),
		s:     s,
		scope: "suite-" + r.id + "/" + t.Name(),
		key:   "k1",
		base:  time.Now().UTC().Truncate(time.Second),
	}
}

// suiteCase is one subtest: its store, scope and key, and helpers that
// fail it on errors they do not expect.
type suiteCase struct {
	*testing.T
	ctx        context.Context
	s          SuiteStore
	scope, key string
	base       time.Time
}

// skipIfDiverges skips a case that SuiteStore.Diverges names.
func (k *suiteCase) skipIfDiverges(name string) {
	k.Helper()
	if why, ok := k.s.Diverges[name]; ok {
		k.Skipf("idemtest: the store is known to diverge here: %s", why)
	}
}

func (k *suiteCase) input(fp string, now time.Time) idempotency.AcquireInput {
	return idempotency.AcquireInput{
		Scope: k.scope, Key: k.key, Fingerprint: fp, Now: now,
		LeaseUntil: now.Add(suiteLease), ExpiresAt: now.Add(suiteRetention),
	}
}

// acquire must take the key for fp at now, and returns the record.
func (k *suiteCase) acquire(fp string, now time.Time) idempotency.Entry {
	k.Helper()
	in := k.input(fp, now)
	e, acquired, err := k.s.Store.Acquire(k.ctx, in)
	if err != nil {
		k.Fatalf("Acquire: %v", err)
	}
	if !acquired {
		k.Fatalf("Acquire at %v did not take the key: %+v", now.Sub(k.base), e)
	}
	return e
}

// refused must not take the key for fp at now, and returns the record it
// answered with.
func (k *suiteCase) refused(fp string, now time.Time) idempotency.Entry {
	k.Helper()
	e, acquired, err := k.s.Store.Acquire(k.ctx, k.input(fp, now))
	if err != nil {
		k.Fatalf("Acquire: %v", err)
	}
	if acquired {
		k.Fatalf("Acquire at %v took the key: %+v", now.Sub(k.base), e)
	}
	return e
}

func (k *suiteCase) get() idempotency.Entry {
	k.Helper()
	e, err := k.s.Store.Get(k.ctx, k.scope, k.key)
	if err != nil {
		k.Fatalf("Get: %v", err)
	}
	return e
}

func completed(output string, expires time.Time) idempotency.Outcome {
	return idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(output), ExpiresAt: expires}
}

func failed(failure string, expires time.Time) idempotency.Outcome {
	return idempotency.Outcome{Status: idempotency.EntryFailed, Failure: failure, ExpiresAt: expires}
}

// settle must store o under e's lease, and returns the record.
func (k *suiteCase) settle(e idempotency.Entry, o idempotency.Outcome) idempotency.Entry {
	k.Helper()
	if err := k.s.Store.Settle(k.ctx, e.Lease(), o); err != nil {
		k.Fatalf("Settle: %v", err)
	}
	return k.get()
}

// release must release e's lease, and returns the record.
func (k *suiteCase) release(e idempotency.Entry) idempotency.Entry {
	k.Helper()
	if err := k.s.Store.Release(k.ctx, e.Lease()); err != nil {
		k.Fatalf("Release: %v", err)
	}
	return k.get()
}

// fenced checks that err is ErrFenced and that the record is still want.
func (k *suiteCase) fenced(what string, err error, want idempotency.Entry) {
	k.Helper()
	if !errors.Is(err, idempotency.ErrFenced) {
		k.Errorf("%s: %v, want ErrFenced", what, err)
	}
	k.unchanged(want)
}

// unchanged checks that the record is still want (none when want has no
// RecordKey).
func (k *suiteCase) unchanged(want idempotency.Entry) {
	k.Helper()
	e, err := k.s.Store.Get(k.ctx, k.scope, k.key)
	if want.RecordKey == "" {
		if !errors.Is(err, idempotency.ErrNotFound) {
			k.Errorf("Get = %+v, %v; want ErrNotFound", e, err)
		}
		return
	}
	if err != nil {
		k.Fatalf("Get: %v", err)
	}
	k.same("the record", e, want)
}

// fresh checks e, just acquired with in: IN_PROGRESS for in's
// fingerprint, with a new lease of count, in's times to the millisecond
// and the second, and no outcome.
func (k *suiteCase) fresh(e idempotency.Entry, in idempotency.AcquireInput, count int64) {
	k.Helper()
	want := idempotency.Entry{
		RecordKey:   idempotency.RecordKey(in.Scope, in.Key),
		Status:      idempotency.EntryInProgress,
		Fingerprint: in.Fingerprint,
		LeaseID:     e.LeaseID,
		LeaseCount:  count,
		LeaseUntil:  time.UnixMilli(in.LeaseUntil.UnixMilli()),
		ExpiresAt:   time.Unix(in.ExpiresAt.Unix(), 0),
	}
	if e.LeaseID == "" {
		k.Errorf("the new lease has no id")
	}
	k.same("the acquired record", e, want)
	if l := e.Lease(); l.RecordKey != want.RecordKey || l.ID != e.LeaseID || l.Count != count || !l.Until.Equal(want.LeaseUntil) {
		k.Errorf("Lease() = %+v, want the record's", l)
	}
}

// same reports the fields in which got differs from want. Times compare
// with Equal, outputs by content (nil and empty alike).
func (k *suiteCase) same(what string, got, want idempotency.Entry) {
	k.Helper()
	var diffs []string
	add := func(field string, g, w any) { diffs = append(diffs, fmt.Sprintf("%s %v, want %v", field, g, w)) }
	if got.RecordKey != want.RecordKey {
		add("RecordKey", got.RecordKey, want.RecordKey)
	}
	if got.Status != want.Status {
		add("Status", got.Status, want.Status)
	}
	if got.Fingerprint != want.Fingerprint {
		add("Fingerprint", short(got.Fingerprint), short(want.Fingerprint))
	}
	if got.LeaseID != want.LeaseID {
		add("LeaseID", got.LeaseID, want.LeaseID)
	}
	if got.LeaseCount != want.LeaseCount {
		add("LeaseCount", got.LeaseCount, want.LeaseCount)
	}
	if !got.LeaseUntil.Equal(want.LeaseUntil) {
		add("LeaseUntil", got.LeaseUntil, want.LeaseUntil)
	}
	if !got.ExpiresAt.Equal(want.ExpiresAt) {
		add("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	}
	if !bytes.Equal(got.Output, want.Output) {
		add("Output", fmt.Sprintf("%q", got.Output), fmt.Sprintf("%q", want.Output))
	}
	if got.Failure != want.Failure {
		add("Failure", fmt.Sprintf("%q", got.Failure), fmt.Sprintf("%q", want.Failure))
	}
	for _, d := range diffs {
		k.Errorf("%s: %s", what, d)
	}
}

func short(fp string) string {
	switch fp {
	case fpA:
		return "A"
	case fpB:
		return "B"
	}
	return fp
}

func describe(e idempotency.Entry, exists bool) string {
	if !exists {
		return "no record"
	}
	return fmt.Sprintf("a %s record of fingerprint %s (lease until %v, expires %v)", e.Status, short(e.Fingerprint), e.LeaseUntil, e.ExpiresAt)
}

// acquireCase is a record in some state (setup: the record, and whether
// there is one), an acquisition for fp at a time set from the record,
// and whether it takes the key: the rule Entry.Free states, which the
// suite checks each case against too.
type acquireCase struct {
	name  string
	setup func(k *suiteCase) (idempotency.Entry, bool)
	fp    string
	at    func(e idempotency.Entry) time.Time
	want  bool
}

// The records an acquisition meets, all for fingerprint A: none, held,
// completed, failed, released, and completed with no expiry.
func noRecord(k *suiteCase) (idempotency.Entry, bool) { return idempotency.Entry{}, false }

func inProgress(k *suiteCase) (idempotency.Entry, bool) { return k.acquire(fpA, k.base), true }

func completedRecord(k *suiteCase) (idempotency.Entry, bool) {
	return k.settle(k.acquire(fpA, k.base), completed(`{"n":1}`, k.base.Add(suiteRetention))), true
}

func failedRecord(k *suiteCase) (idempotency.Entry, bool) {
	return k.settle(k.acquire(fpA, k.base), failed("card declined", k.base.Add(suiteRetention))), true
}

func releasedRecord(k *suiteCase) (idempotency.Entry, bool) {
	return k.release(k.acquire(fpA, k.base)), true
}

func completedNoExpiry(k *suiteCase) (idempotency.Entry, bool) {
	return k.settle(k.acquire(fpA, k.base), completed(`{"n":1}`, time.Time{})), true
}

// Times of an acquisition, from the record met.
func atStart(e idempotency.Entry) time.Time         { return e.LeaseUntil.Add(-suiteLease) }
func beforeLeaseEnds(e idempotency.Entry) time.Time { return e.LeaseUntil.Add(-time.Millisecond) }
func atLeaseEnd(e idempotency.Entry) time.Time      { return e.LeaseUntil }
func beforeExpiry(e idempotency.Entry) time.Time    { return e.ExpiresAt.Add(-time.Millisecond) }
func atExpiry(e idempotency.Entry) time.Time        { return e.ExpiresAt }
func longAfter(e idempotency.Entry) time.Time       { return e.LeaseUntil.Add(10 * suiteRetention) }

// nowAt is the present, for a case without a record.
func nowAt(idempotency.Entry) time.Time { return time.Now().UTC() }

var acquireCases = []acquireCase{
	{"new key", noRecord, fpA, nowAt, true},
	{"in progress/same payload/lease running", inProgress, fpA, beforeLeaseEnds, false},
	{"in progress/same payload/lease ends now/takeover", inProgress, fpA, atLeaseEnd, true},
	{"in progress/same payload/lease long expired/takeover", inProgress, fpA, longAfter, true},
	{"in progress/another payload/lease running", inProgress, fpB, atStart, false},
	{"in progress/another payload/lease expired", inProgress, fpB, longAfter, false},
	{"completed/same payload/retained", completedRecord, fpA, beforeExpiry, false},
	{"completed/another payload/retained", completedRecord, fpB, beforeExpiry, false},
	{"completed/same payload/expired", completedRecord, fpA, atExpiry, true},
	{"completed/another payload/expired", completedRecord, fpB, longAfter, true},
	{"failed/same payload/retained", failedRecord, fpA, beforeExpiry, false},
	{"failed/another payload/expired", failedRecord, fpB, atExpiry, true},
	{"released/same payload", releasedRecord, fpA, atStart, true},
	{"released/another payload", releasedRecord, fpB, atStart, true},
	{"completed without expiry/never free", completedNoExpiry, fpA, longAfter, false},
}

// lifecycleCase is a sequence of calls and what they leave.
type lifecycleCase struct {
	name string
	// foreign: the case needs SuiteStore.PutForeign.
	foreign bool
	run     func(k *suiteCase)
}

var lifecycleCases = []lifecycleCase{
	{name: "get/not found", run: func(k *suiteCase) {
		if e, err := k.s.Store.Get(k.ctx, k.scope, k.key); !errors.Is(err, idempotency.ErrNotFound) {
			k.Errorf("Get = %+v, %v; want ErrNotFound", e, err)
		}
	}},
	{name: "acquire/invalid key writes nothing", run: func(k *suiteCase) {
		for _, c := range []struct {
			key  string
			want error
		}{{"", idempotency.ErrKeyMissing}, {"k\x00", idempotency.ErrKeyMalformed}} {
			in := k.input(fpA, k.base)
			in.Key = c.key
			if e, ok, err := k.s.Store.Acquire(k.ctx, in); !errors.Is(err, c.want) || ok {
				k.Errorf("Acquire with key %q = %+v, %v, %v; want %v", c.key, e, ok, err, c.want)
			}
			if e, err := k.s.Store.Get(k.ctx, k.scope, c.key); !errors.Is(err, idempotency.ErrNotFound) {
				k.Errorf("Get of key %q = %+v, %v; want ErrNotFound", c.key, e, err)
			}
		}
	}},
	{name: "acquire/cancelled context writes nothing", run: func(k *suiteCase) {
		ctx, cancel := context.WithCancel(k.ctx)
		cancel()
		if e, ok, err := k.s.Store.Acquire(ctx, k.input(fpA, k.base)); err == nil || ok {
			k.Errorf("Acquire with a cancelled context = %+v, %v, %v; want an error", e, ok, err)
		}
		k.unchanged(idempotency.Entry{})
	}},
	{name: "acquire/times kept to the millisecond and the second", run: func(k *suiteCase) {
		in := k.input(fpA, k.base)
		in.LeaseUntil = in.LeaseUntil.Add(1234567 * time.Nanosecond)
		in.ExpiresAt = in.ExpiresAt.Add(999 * time.Millisecond)
		e, ok, err := k.s.Store.Acquire(k.ctx, in)
		if err != nil || !ok {
			k.Fatalf("Acquire = %v, %v", ok, err)
		}
		k.fresh(e, in, 1)
		k.same("Get", k.get(), e)
	}},
	{name: "acquire/scopes apart", run: func(k *suiteCase) {
		a := k.acquire(fpA, k.base)
		other := *k
		other.scope = k.scope + "/other"
		b := other.acquire(fpA, k.base)
		if b.LeaseCount != 1 || b.RecordKey == a.RecordKey || b.RecordKey != idempotency.RecordKey(other.scope, k.key) {
			k.Errorf("the same key in another scope got %+v, the first scope's record %+v", b, a)
		}
		k.same("the first scope's record", k.get(), a)
	}},
	{name: "acquire/concurrent acquisitions/one wins", run: func(k *suiteCase) {
		const n = 8
		type result struct {
			e   idempotency.Entry
			ok  bool
			err error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, ok, err := k.s.Store.Acquire(k.ctx, k.input(fpA, k.base))
				results[i] = result{e, ok, err}
			}()
		}
		wg.Wait()
		won := 0
		for _, r := range results {
			if r.err != nil {
				k.Fatalf("Acquire: %v", r.err)
			}
			if r.ok {
				won++
			}
		}
		if won != 1 {
			k.Fatalf("%d of %d concurrent acquisitions took the key, want 1", won, n)
		}
		e := k.get()
		for _, r := range results {
			k.same("an answer", r.e, e)
		}
	}},
	{name: "settle/completed/duplicate replays it", run: func(k *suiteCase) {
		e := k.acquire(fpA, k.base)
		o := completed(`{"id":"r-1"}`, k.base.Add(suiteRetention+999*time.Millisecond))
		got := k.settle(e, o)
		want := e
		want.Status, want.Output, want.ExpiresAt = idempotency.EntryCompleted, o.Output, k.base.Add(suiteRetention)
		k.same("the settled record", got, want)
		k.same("the duplicate's answer", k.refused(fpA, k.base.Add(time.Second)), want)
	}},
	{name: "settle/failed/duplicate replays it", run: func(k *suiteCase) {
		e := k.acquire(fpA, k.base)
		got := k.settle(e, failed("card declined", k.base.Add(suiteRetention)))
		want := e
		want.Status, want.Failure, want.ExpiresAt = idempotency.EntryFailed, "card declined", k.base.Add(suiteRetention)
		k.same("the settled record", got, want)
		k.same("the duplicate's answer", k.refused(fpA, k.base.Add(time.Second)), want)
	}},
	{name: "settle/output kept byte for byte", run: func(k *suiteCase) {
		for i, out := range [][]byte{nil, {}, {0, 0xff, '\n', 0xc3, 0x28, 0}, bytes.Repeat([]byte("é\x00"), 40000)} {
			k.key = fmt.Sprintf("k%d", i)
			got := k.settle(k.acquire(fpA, k.base), idempotency.Outcome{Status: idempotency.EntryCompleted, Output: out, ExpiresAt: k.base.Add(suiteRetention)})
			if got.Status != idempotency.EntryCompleted || !bytes.Equal(got.Output, out) {
				k.Errorf("output %d (%d bytes): the record is %s with %d bytes, want them back", i, len(out), got.Status, len(got.Output))
			}
		}
	}},
	{name: "settle/a status that is not an outcome is refused", run: func(k *suiteCase) {
		e := k.acquire(fpA, k.base)
		for _, s := range []idempotency.EntryStatus{idempotency.EntryInProgress, idempotency.EntryReleased, "", "DONE"} {
			if err := k.s.Store.Settle(k.ctx, e.Lease(), idempotency.Outcome{Status: s, ExpiresAt: k.base.Add(suiteRetention)}); err == nil {
				k.Errorf("Settle with status %q succeeded", s)
			}
		}
		k.unchanged(e)
	}},
	{name: "settle/twice/the second is fenced", run: func(k *suiteCase) {
		e := k.acquire(fpA, k.base)
		first := k.settle(e, completed(`"first"`, k.base.Add(suiteRetention)))
		k.fenced("the second Settle", k.s.Store.Settle(k.ctx, e.Lease(), completed(`"second"`, k.base.Add(2*suiteRetention))), first)
		k.fenced("Release after Settle", k.s.Store.Release(k.ctx, e.Lease()), first)
	}},
	{name: "settle and release/no record/fenced, nothing written", run: func(k *suiteCase) {
		lease := idempotency.Lease{RecordKey: idempotency.RecordKey(k.scope, k.key), ID: idempotency.NewLeaseID(), Count: 1, Until: k.base.Add(suiteLease)}
		k.fenced("Settle", k.s.Store.Settle(k.ctx, lease, completed(`{}`, k.base.Add(suiteRetention))), idempotency.Entry{})
		k.fenced("Release", k.s.Store.Release(k.ctx, lease), idempotency.Entry{})
	}},
	{name: "settle and release/another lease id or count/fenced", run: func(k *suiteCase) {
		e := k.acquire(fpA, k.base)
		for _, l := range []idempotency.Lease{
			{RecordKey: e.RecordKey, ID: idempotency.NewLeaseID(), Count: e.LeaseCount, Until: e.LeaseUntil},
			{RecordKey: e.RecordKey, ID: e.LeaseID, Count: e.LeaseCount + 1, Until: e.LeaseUntil},
			{RecordKey: e.RecordKey, ID: e.LeaseID, Count: 0, Until: e.LeaseUntil},
		} {
			k.fenced(fmt.Sprintf("Settle under %+v", l), k.s.Store.Settle(k.ctx, l, completed(`{}`, k.base.Add(suiteRetention))), e)
			k.fenced(fmt.Sprintf("Release under %+v", l), k.s.Store.Release(k.ctx, l), e)
		}
	}},
	{name: "takeover/zombie settle and release fenced", run: func(k *suiteCase) {
		zombie := k.acquire(fpA, k.base)
		holder := k.acquire(fpA, zombie.LeaseUntil)
		if holder.LeaseCount != 2 || holder.LeaseID == zombie.LeaseID {
			k.Fatalf("the takeover's lease is %d %s, the first's %d %s", holder.LeaseCount, holder.LeaseID, zombie.LeaseCount, zombie.LeaseID)
		}
		k.fenced("the zombie's Settle", k.s.Store.Settle(k.ctx, zombie.Lease(), completed(`"zombie"`, k.base.Add(suiteRetention))), holder)
		k.fenced("the zombie's Release", k.s.Store.Release(k.ctx, zombie.Lease()), holder)
		got := k.settle(holder, completed(`"holder"`, k.base.Add(suiteRetention)))
		if got.Status != idempotency.EntryCompleted || string(got.Output) != `"holder"` || got.LeaseCount != 2 {
			k.Errorf("after the holder's Settle: %+v", got)
		}
		k.fenced("the zombie's Settle after the holder's", k.s.Store.Settle(k.ctx, zombie.Lease(), completed(`"zombie"`, k.base.Add(suiteRetention))), got)
	}},
	{name: "release/keeps the counter/reacquire keeps rising", run: func(k *suiteCase) {
		now := k.base
		for want := int64(1); want <= 3; want++ {
			e := k.acquire(fpA, now)
			if e.LeaseCount != want {
				k.Fatalf("acquisition %d has lease count %d", want, e.LeaseCount)
			}
			got := k.release(e)
			released := e
			released.Status = idempotency.EntryReleased
			k.same("the released record", got, released)
			k.fenced("a second Release", k.s.Store.Release(k.ctx, e.Lease()), released)
			k.fenced("Settle after Release", k.s.Store.Settle(k.ctx, e.Lease(), completed(`{}`, now.Add(suiteRetention))), released)
			now = now.Add(time.Second)
		}
	}},
	{name: "expiry/reuse raises the counter and fences the old lease", run: func(k *suiteCase) {
		first := k.acquire(fpA, k.base)
		settled := k.settle(first, completed(`"first"`, k.base.Add(suiteRetention)))
		later := settled.ExpiresAt
		second := k.acquire(fpB, later)
		if second.LeaseCount != 2 || len(second.Output) != 0 || second.Fingerprint != fpB {
			k.Errorf("the reused record is %+v", second)
		}
		k.fenced("the first lease's Settle", k.s.Store.Settle(k.ctx, first.Lease(), completed(`"again"`, later.Add(suiteRetention))), second)
		third := k.acquire(fpB, k.settle(second, failed("no", later.Add(suiteRetention))).ExpiresAt)
		if third.LeaseCount != 3 || third.Failure != "" {
			k.Errorf("the record reused again is %+v", third)
		}
	}},
	{name: "entries/answers are copies", run: func(k *suiteCase) {
		e := k.acquire(fpA, k.base)
		got := k.settle(e, completed(`"out"`, k.base.Add(suiteRetention)))
		got.Output[0] = 'X'
		dup := k.refused(fpA, k.base)
		dup.Output[1] = 'X'
		if out := k.get().Output; string(out) != `"out"` {
			k.Errorf("the stored output changed with an answer's: %q", out)
		}
	}},
	{name: "format/another format refused and kept", foreign: true, run: func(k *suiteCase) {
		for i, format := range []string{"other.Entry/9", ""} {
			k.key = fmt.Sprintf("k%d", i)
			if err := k.s.PutForeign(k.ctx, k.scope, k.key, format); err != nil {
				k.Fatalf("PutForeign: %v", err)
			}
			wantFormat := func(what string, err error) {
				k.Helper()
				var fe *idempotency.FormatError
				if !errors.As(err, &fe) || fe.Format != format || !errors.Is(err, idempotency.ErrFormat) {
					k.Errorf("%s of a record of format %q: %v; want a *FormatError naming it", what, format, err)
				}
			}
			_, err := k.s.Store.Get(k.ctx, k.scope, k.key)
			wantFormat("Get", err)
			e, ok, err := k.s.Store.Acquire(k.ctx, k.input(fpA, k.base))
			if ok {
				k.Errorf("Acquire took a record of format %q: %+v", format, e)
			}
			wantFormat("Acquire", err)
			lease := idempotency.Lease{RecordKey: idempotency.RecordKey(k.scope, k.key), ID: idempotency.NewLeaseID(), Count: 1}
			if err := k.s.Store.Settle(k.ctx, lease, completed(`{}`, k.base.Add(suiteRetention))); !errors.Is(err, idempotency.ErrFenced) {
				k.Errorf("Settle of a record of format %q: %v, want ErrFenced", format, err)
			}
			if err := k.s.Store.Release(k.ctx, lease); !errors.Is(err, idempotency.ErrFenced) {
				k.Errorf("Release of a record of format %q: %v, want ErrFenced", format, err)
			}
			_, err = k.s.Store.Get(k.ctx, k.scope, k.key)
			wantFormat("Get afterwards", err)
		}
	}},
}
