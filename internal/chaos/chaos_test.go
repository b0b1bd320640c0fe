//go:build integration

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/percentile"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Environment variables of the chaos run.
const (
	envSeed = "CHAOS_SEED"
	envOps  = "CHAOS_OPS"
)

// Defaults: a fixed seed, so that "make test" is reproducible, and an
// operation count that keeps the run short.
const (
	defaultSeed = 20261122
	defaultOps  = 1000
)

// The run's shape.
const (
	clients        = 8
	accounts       = 20
	openingBalance = 100_000
	currency       = "EUR"
	otherCurrency  = "USD"
	// maxAttempts bounds how often a client retries a 503 during the run;
	// what is still 503 is retried once the faults are disarmed.
	maxAttempts = 8
	// timeScale shrinks the workflow's retry intervals and task timeouts
	// tenfold: a leg's 30 s timeout becomes 3 s, still well above what a
	// leg takes on a loaded machine under -race.
	timeScale = 0.1
	// quiesceBudget bounds the settling after the run.
	quiesceBudget = 3 * time.Minute
)

var callers = []string{"chaos-alice", "chaos-bob"}

// TestChaos runs random operations from concurrent clients against the
// local stack while faults fire at random, brings the stack to rest, and
// checks that no money was lost or doubled, every accepted key ended
// COMPLETED or FAILED, and every replay agrees with the ledger.
func TestChaos(t *testing.T) {
	seed, ops := envUint(t, envSeed, defaultSeed), int(envUint(t, envOps, defaultOps))
	t.Logf("chaos: %s=%d %s=%d", envSeed, seed, envOps, ops)

	inj := fault.New(seed)
	ctx := t.Context()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	h, err := chaos.Start(startCtx, chaos.Options{
		DynamoDBEndpoint: os.Getenv(ddbtest.EnvEndpoint),
		TimeScale:        timeScale,
		Faults:           inj,
	})
	cancel()
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})

	// Each account belongs to one caller, who alone may debit it.
	r := newRun(t, h, seed)
	for i := range accounts {
		r.open(fmt.Sprintf("acct-%02d", i), callers[i%len(callers)], currency)
	}
	for i, c := range callers {
		r.open(fmt.Sprintf("usd-%02d", i), c, otherCurrency)
	}

	armFaults(inj)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		n := ops / clients
		if c < ops%clients {
			n++
		}
		wg.Go(func() { r.client(ctx, c, n) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	counts := inj.Counts()
	inj.Reset()
	faultsStopped := time.Now()

	// What the faults left at 503 is retried now, as a client would.
	for _, p := range r.unanswered() {
		r.post(ctx, p.caller, p.key, p.body, p.want, 0)
	}

	qctx, cancel := context.WithTimeout(ctx, quiesceBudget)
	q, qerr := h.Quiesce(qctx)
	cancel()
	v, verr := h.Verify(ctx)

	t.Logf("chaos: seed=%d ops=%d duration=%v ops/s=%.0f", seed, ops, elapsed.Round(time.Millisecond), float64(ops)/elapsed.Seconds())
	t.Logf("chaos: answers %s", formatCounts(h.Client.Journal.Histogram()))
	t.Logf("chaos: faults %s", formatCounts(counts))
	t.Logf("chaos: quiesce %v, %d sweeps (%d failed), %d failed invocations, %d items expired",
		q.Elapsed.Round(time.Millisecond), q.Sweeps, q.SweepErrors, len(q.FailedInvocations), q.Expired)
	if verr == nil {
		t.Logf("chaos: %s; %d replays, %d mismatches", v.Report.Summary(), v.Replays, len(v.Mismatches))
		late := chaos.SettledAfter(v.Snapshot, faultsStopped)
		t.Logf("chaos: settled after the faults stopped: %d transfers; time from the faults' stop to their settlement p50 %v, p99 %v, max %v",
			len(late), percentile.Of(late, 500), percentile.Of(late, 990), percentile.Of(late, 1000))
		// Faults that stop well inside the completion window never
		// leave a transfer to time out.
		if n := v.Report.Failures[transfer.CodeTimedOut] + v.Report.Failures[transfer.CodeTimedOut+"/reversed"]; n > 0 {
			t.Errorf("seed %d: %d transfers failed TimedOut although the faults stopped well inside the completion window", seed, n)
		}
	}

	for _, p := range r.problems() {
		t.Errorf("seed %d: %s", seed, p)
	}
	if verr == nil {
		for _, id := range r.lateForbidden {
			if msg := refusedLate(v.Snapshot, id); msg != "" {
				t.Errorf("seed %d: transfer %s of a caller who does not own its source: %s", seed, id, msg)
			}
		}
		t.Logf("chaos: %d transfers of a non-owner accepted after a 503, each refused by its debit", len(r.lateForbidden))
		t.Logf("chaos: %d accounts handed over to another caller during the run", r.handOvers)
	}
	if qerr != nil {
		t.Errorf("seed %d: quiesce: %v", seed, qerr)
		for _, rec := range q.Pending[:min(len(q.Pending), 5)] {
			t.Errorf("  left %s: transfer %s created %s", rec.Status, rec.ResourceID, rec.CreatedAt)
		}
		for _, arn := range q.Running[:min(len(q.Running), 5)] {
			t.Errorf("  still running: %s", arn)
		}
	}
	if verr != nil {
		t.Fatalf("seed %d: verify: %v", seed, verr)
	}
	if !v.Report.OK() {
		first := v.Report.Violations[0]
		t.Errorf("seed %d: %d violations; first: %s\n%s", seed, len(v.Report.Violations), first, r.history(ctx, v.Snapshot, first.TransferID, first.AccountID))
		if first.TransferID == "" {
			// A violation of the totals names no transfer: show the
			// first one that does.
			for _, more := range v.Report.Violations {
				if more.TransferID != "" {
					t.Errorf("seed %d: first violation naming a transfer: %s\n%s", seed, more, r.history(ctx, v.Snapshot, more.TransferID, ""))
					break
				}
			}
		}
		for _, more := range v.Report.Violations[1:min(len(v.Report.Violations), 10)] {
			t.Logf("  also: %s", more)
		}
	}
	if len(v.Mismatches) > 0 {
		first := v.Mismatches[0]
		t.Errorf("seed %d: %d answers disagree with their records; first: %s\n%s", seed, len(v.Mismatches), first, r.history(ctx, v.Snapshot, first.TransferID, ""))
		for _, more := range v.Mismatches[1:min(len(v.Mismatches), 10)] {
			t.Logf("  also: %s", more)
		}
	}
}

func envUint(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// want is the answer an operation may get.
type want int

const (
	// wantAccepted: 202, or (a retry after a 503 that reserved, or a
	// duplicate) the settled transfer: 200 or a 422 failure that carries
	// it.
	wantAccepted want = iota
	// wantReused: 422 idempotency_key_reused.
	wantReused
	// wantFound: GET 200 of the given transfer.
	wantFound
	// wantNotFound: GET 404.
	wantNotFound
	// wantForbidden: 403 forbidden, a debit of an account that is not
	// the caller's (or does not exist): with nothing stored, or with the
	// transfer its record holds, settled FAILED Forbidden before it
	// started (the orchestrator had not yet read the account's owner;
	// Verify checks the record and its replay).
	wantForbidden
)

// accepted is a key some client got accepted, for duplicates, reuses and
// GETs.
type accepted struct {
	caller, key string
	body        []byte
	req         transfer.Request
	transferID  string
}

// pending is a request left at 503 when its attempts ran out.
type pending struct {
	caller, key string
	body        []byte
	want        want
}

// run is the shared state of the clients.
type run struct {
	t    *testing.T
	h    *chaos.Harness
	seed uint64
	eur  []string          // EUR account ids
	usd  map[string]string // the USD account of each caller

	mu sync.Mutex
	// own lists the EUR account ids by owner; an account handed over to
	// another caller (opHandOver) moves, and is in handedOver from then
	// on.
	own        map[string][]string
	handedOver map[string]bool
	pool       []accepted
	later      []pending
	failures   []string

	// lateForbidden are transfers of a caller who does not own the
	// source account that were answered as accepted: each must settle
	// FAILED Forbidden with no debit.
	lateForbidden []string
	// handOvers counts the accounts handed over.
	handOvers int
}

func newRun(t *testing.T, h *chaos.Harness, seed uint64) *run {
	return &run{t: t, h: h, seed: seed, own: map[string][]string{}, usd: map[string]string{}, handedOver: map[string]bool{}}
}

func (r *run) open(id, owner, cur string) {
	r.t.Helper()
	if err := r.h.OpenAccount(r.t.Context(), id, owner, cur, openingBalance); err != nil {
		r.t.Fatalf("seed %d: %v", r.seed, err)
	}
	if cur == currency {
		r.eur = append(r.eur, id)
		r.own[owner] = append(r.own[owner], id)
	} else {
		r.usd[owner] = id
	}
}

func (r *run) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *run) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failures)
}

func (r *run) unanswered() []pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.later
	r.later = nil
	return out
}

func (r *run) remember(a accepted) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pool = append(r.pool, a)
}

func (r *run) pick(rng *rand.Rand) (accepted, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pool) == 0 {
		return accepted{}, false
	}
	return r.pool[rng.IntN(len(r.pool))], true
}

// Operation kinds and their weights.
type op int

const (
	opNew op = iota
	opConcurrentNew
	opInsufficient
	opUnknownAccount
	opCurrencyMismatch
	opDuplicate
	opReuse
	opGet
	opGetUnknown
	opGetOther
	// opHandOver gives one of the caller's accounts to another caller,
	// while transfers from it are in flight, resumed or retried.
	opHandOver
)

var weights = []struct {
	op     op
	weight int
}{
	{opNew, 34}, {opConcurrentNew, 5}, {opInsufficient, 6}, {opUnknownAccount, 6}, {opCurrencyMismatch, 4},
	{opDuplicate, 15}, {opReuse, 8}, {opGet, 15}, {opGetUnknown, 4}, {opGetOther, 3},
	{opHandOver, 1},
}

func pickOp(rng *rand.Rand) op {
	total := 0
	for _, w := range weights {
		total += w.weight
	}
	n := rng.IntN(total)
	for _, w := range weights {
		if n < w.weight {
			return w.op
		}
		n -= w.weight
	}
	panic("unreachable")
}

// client runs n operations; its choices come from a source seeded with
// the run's seed and its index.
func (r *run) client(ctx context.Context, index, n int) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(index)))
	caller := callers[index%len(callers)]
	for i := range n {
		if ctx.Err() != nil {
			return
		}
		key := fmt.Sprintf("k-%d-%d-%d", r.seed, index, i)
		src, dst := r.twoAccounts(rng, caller)
		req := transfer.Request{SourceAccountID: src, DestinationAccountID: dst, Amount: 1 + rng.Int64N(500), Currency: currency}
		switch pickOp(rng) {
		case opNew:
			r.newTransfer(ctx, caller, key, req, 1)
		case opConcurrentNew:
			r.newTransfer(ctx, caller, key, req, 2+rng.IntN(3))
		case opInsufficient:
			req.Amount = 10 * openingBalance * int64(accounts)
			r.newTransfer(ctx, caller, key, req, 1)
		case opUnknownAccount:
			ghost := fmt.Sprintf("ghost-%d", rng.IntN(3))
			switch rng.IntN(3) {
			case 0:
				// Unknown and another caller's are one answer.
				req.SourceAccountID = ghost
				r.post(ctx, caller, key, req.Canonical(), wantForbidden, maxAttempts)
			case 1:
				req.SourceAccountID = r.foreignAccount(rng, caller)
				if req.SourceAccountID == req.DestinationAccountID {
					req.DestinationAccountID = ghost
				}
				r.post(ctx, caller, key, req.Canonical(), wantForbidden, maxAttempts)
			default:
				req.DestinationAccountID = ghost
				r.newTransfer(ctx, caller, key, req, 1)
			}
		case opCurrencyMismatch:
			switch rng.IntN(3) {
			case 0:
				req.DestinationAccountID = r.usd[callers[rng.IntN(len(callers))]]
			case 1:
				req.SourceAccountID = r.usd[caller]
			default:
				req.Currency = otherCurrency
			}
			r.newTransfer(ctx, caller, key, req, 1)
		case opDuplicate:
			if a, ok := r.pick(rng); ok {
				r.duplicate(ctx, a, 1+rng.IntN(3))
			}
		case opReuse:
			if a, ok := r.pick(rng); ok {
				other := a.req
				other.Amount++
				r.post(ctx, a.caller, a.key, other.Canonical(), wantReused, maxAttempts)
			}
		case opGet:
			if a, ok := r.pick(rng); ok {
				r.get(ctx, a.caller, a.transferID, wantFound)
			}
		case opGetUnknown:
			r.get(ctx, caller, fmt.Sprintf("01000000-0000-7000-8000-%012d", rng.IntN(1e6)), wantNotFound)
		case opHandOver:
			r.handOver(ctx, rng, caller)
		case opGetOther:
			if a, ok := r.pick(rng); ok {
				other := callers[0]
				if a.caller == other {
					other = callers[1]
				}
				r.get(ctx, other, a.transferID, wantNotFound)
			}
		}
	}
}

// handOver gives one of caller's EUR accounts, picked at random, to
// another caller, unless it is the caller's last. Transfers from it that
// its former owner sent before (in flight, resumed, retried) may then be
// refused by their debit (FAILED Forbidden) or complete if their debit
// was posted; either way, the promise holds (Verify).
func (r *run) handOver(ctx context.Context, rng *rand.Rand, caller string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	own := r.own[caller]
	if len(own) < 2 {
		return
	}
	i := rng.IntN(len(own))
	id := own[i]
	to := callers[rng.IntN(len(callers))]
	if to == caller {
		return
	}
	if err := r.h.SetOwner(ctx, id, chaos.Scope(to)); err != nil {
		r.failures = append(r.failures, err.Error())
		return
	}
	r.own[caller] = slices.Delete(slices.Clone(own), i, i+1)
	r.own[to] = append(r.own[to], id)
	r.handedOver[id] = true
	r.handOvers++
}

// fromHandedOver reports whether a POST's source account changed owner
// during the run: its answer may be the former owner's 403, or the new
// owner's transfer.
func (r *run) fromHandedOver(e chaos.Exchange) bool {
	var req struct {
		Source string `json:"sourceAccountId"`
	}
	if e.Method != http.MethodPost || json.Unmarshal([]byte(e.Body), &req) != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handedOver[req.Source]
}

// twoAccounts picks a source of caller's and another account as the
// destination, anyone's.
func (r *run) twoAccounts(rng *rand.Rand, caller string) (string, string) {
	r.mu.Lock()
	own := r.own[caller]
	src := own[rng.IntN(len(own))]
	r.mu.Unlock()
	for {
		if dst := r.eur[rng.IntN(len(r.eur))]; dst != src {
			return src, dst
		}
	}
}

// foreignAccount picks an EUR account of another caller.
func (r *run) foreignAccount(rng *rand.Rand, caller string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		other := callers[rng.IntN(len(callers))]
		if other != caller {
			return r.own[other][rng.IntN(len(r.own[other]))]
		}
	}
}

// newTransfer posts a new key from `parallel` goroutines at once and
// remembers it once accepted.
func (r *run) newTransfer(ctx context.Context, caller, key string, req transfer.Request, parallel int) {
	body := req.Canonical()
	ids := make([]string, parallel)
	var wg sync.WaitGroup
	for i := range parallel {
		wg.Go(func() { ids[i] = r.post(ctx, caller, key, body, wantAccepted, maxAttempts) })
	}
	wg.Wait()
	id := ""
	for _, got := range ids {
		switch {
		case got == "":
		case id == "":
			id = got
		case got != id:
			r.fail("key %s of %s: concurrent posts answered transfers %s and %s", key, caller, id, got)
		}
	}
	if id != "" {
		r.remember(accepted{caller: caller, key: key, body: body, req: req, transferID: id})
	}
}

// duplicate posts an accepted key's body again from `parallel`
// goroutines at once.
func (r *run) duplicate(ctx context.Context, a accepted, parallel int) {
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			if id := r.post(ctx, a.caller, a.key, a.body, wantAccepted, maxAttempts); id != "" && id != a.transferID {
				r.fail("key %s of %s: duplicate answered transfer %s, first %s", a.key, a.caller, id, a.transferID)
			}
		})
	}
	wg.Wait()
}

// post posts until the answer is not a 503 (at most attempts times; 0 is
// until ctx ends), checks it against w and returns the transfer it names.
func (r *run) post(ctx context.Context, caller, key string, body []byte, w want, attempts int) string {
	for attempt := 1; ; attempt++ {
		e := r.h.Client.PostTransfer(ctx, caller, key, body)
		if retry := r.unavailable(e); !retry {
			r.expect(e, w)
			return e.TransferID
		}
		if attempts > 0 && attempt >= attempts || ctx.Err() != nil {
			r.mu.Lock()
			r.later = append(r.later, pending{caller: caller, key: key, body: body, want: w})
			r.mu.Unlock()
			return ""
		}
		// Retry-After asks for a second; the local stack recovers in
		// milliseconds, and the faults are random, so retry sooner.
		time.Sleep(time.Duration(10*attempt) * time.Millisecond)
	}
}

func (r *run) get(ctx context.Context, caller, id string, w want) {
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		e := r.h.Client.GetTransfer(ctx, caller, id)
		if !r.unavailable(e) {
			r.expect(e, w)
			if w == wantFound && e.TransferID != id {
				r.fail("GET %s as %s named transfer %s", id, caller, e.TransferID)
			}
			return
		}
		time.Sleep(time.Duration(10*attempt) * time.Millisecond)
	}
}

// unavailable reports whether e is a 503 (which must carry Retry-After)
// or a failed exchange: the client retries both.
func (r *run) unavailable(e chaos.Exchange) bool {
	switch {
	case e.Err != "" && e.Status == 0:
		return true
	case e.Status == http.StatusServiceUnavailable:
		if e.RetryAfter == "" {
			r.fail("503 without Retry-After: %s", e)
		}
		return true
	}
	return false
}

func (r *run) expect(e chaos.Exchange, w want) {
	accepted := e.Err == "" && (e.Status == http.StatusAccepted || e.Status == http.StatusOK ||
		e.Status == http.StatusUnprocessableEntity && e.Code != chaos.CodeKeyReused) && e.TransferID != ""
	forbidden := e.Status == http.StatusForbidden && e.Code == chaos.CodeForbidden && (e.TransferID == "" || e.TransferStatus == transfer.StatusFailed)
	if (w == wantAccepted || w == wantForbidden) && (accepted || forbidden) && r.fromHandedOver(e) {
		// Its source changed owner: the former owner's transfer may be
		// refused, another caller's accepted.
		return
	}
	ok := false
	switch w {
	case wantAccepted:
		ok = accepted
	case wantReused:
		ok = e.Status == http.StatusUnprocessableEntity && e.Code == chaos.CodeKeyReused
	case wantFound:
		ok = e.Status == http.StatusOK
	case wantNotFound:
		ok = e.Status == http.StatusNotFound
	case wantForbidden:
		ok = forbidden
		if !ok && e.Replayed && e.TransferID != "" && (e.Status == http.StatusAccepted || e.Status == http.StatusForbidden) {
			// An earlier attempt reserved the key and was answered 503
			// before its record was settled, and something started it
			// since (a retry, the sweeper): its debit refuses it. Checked
			// once the stack is at rest (lateForbidden).
			r.mu.Lock()
			r.lateForbidden = append(r.lateForbidden, e.TransferID)
			r.mu.Unlock()
			ok = true
		}
	}
	if !ok {
		r.fail("unexpected answer: %s", e)
	}
}

// refusedLate checks a transfer of a caller who does not own its source
// account: FAILED Forbidden, and no debit posted. It returns what is
// wrong, or "".
func refusedLate(s *chaos.Snapshot, transferID string) string {
	rec, ok := s.RecordOf(transferID)
	if !ok {
		return "no record"
	}
	var t transfer.Transfer
	if rec.Status != reservation.StatusFailed || json.Unmarshal([]byte(rec.Response), &t) != nil || t.Failure == nil || t.Failure.Code != "Forbidden" {
		return fmt.Sprintf("record %s %s, want FAILED Forbidden", rec.Status, rec.Response)
	}
	for _, e := range s.Entries(transferID) {
		if !e.Voided {
			return fmt.Sprintf("entry %s posted", e)
		}
	}
	return ""
}

// history describes a transfer (or an account) for a failure message: the
// client's exchanges for its key, the record, the entries and the
// execution history.
func (r *run) history(ctx context.Context, s *chaos.Snapshot, transferID, accountID string) string {
	var b strings.Builder
	if transferID == "" {
		if accountID == "" {
			return ""
		}
		fmt.Fprintf(&b, "entries of account %s:\n", accountID)
		for _, e := range s.AccountEntries(accountID) {
			fmt.Fprintf(&b, "  %s\n", e)
		}
		return b.String()
	}
	rec, ok := s.RecordOf(transferID)
	if !ok {
		fmt.Fprintf(&b, "no record names transfer %s\n", transferID)
	} else {
		j, _ := json.MarshalIndent(rec, "  ", "  ")
		fmt.Fprintf(&b, "record:\n  %s\n", j)
		for _, c := range callers {
			for _, key := range r.keysOf(c) {
				if chaos.RecordKey(c, key) != rec.Key {
					continue
				}
				fmt.Fprintf(&b, "exchanges of key %s of %s:\n", key, c)
				for _, e := range r.h.Client.Journal.OfKey(c, key) {
					fmt.Fprintf(&b, "  %s\n", e)
				}
			}
		}
	}
	fmt.Fprintf(&b, "entries:\n")
	for _, e := range s.Entries(transferID) {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	lines, err := r.h.History(ctx, transferID)
	fmt.Fprintf(&b, "execution history (%d events):\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if err != nil {
		fmt.Fprintf(&b, "  (%v)\n", err)
	}
	return b.String()
}

// keysOf lists the keys a caller posted.
func (r *run) keysOf(caller string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range r.h.Client.Journal.Exchanges() {
		if e.Caller == caller && e.Key != "" && !seen[e.Key] {
			seen[e.Key] = true
			out = append(out, e.Key)
		}
	}
	return out
}
