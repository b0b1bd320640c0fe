package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// config is one run of the load generator.
type config struct {
	base *url.URL
	auth authorizer
	// clients send concurrently.
	clients int
	// rate is the target of requests per second over all clients; 0 is as
	// fast as the clients go.
	rate float64
	// duration and count end the load phase, whichever comes first; both
	// are set (see main).
	duration time.Duration
	count    int64
	mix      mix
	// accounts are the caller's accounts the transfers move money between.
	accounts []string
	seed     uint64
	runID    string
	// maxAmount is the largest amount of a transfer the source can pay
	// (each draws 1..maxAmount); maxTransfer is the stack's
	// MaxTransferAmount, the ceiling of an insufficient-funds transfer.
	maxAmount, maxTransfer int64
	requestTimeout         time.Duration
	settleTimeout          time.Duration
	// progress shows the progress bar; nil shows none.
	progress io.Writer
	// log receives what the run does; nil discards it.
	log io.Writer
}

// result is what a run found.
type result struct {
	stats   *stats
	elapsed time.Duration
	// accepted counts the keys that got a transfer; outcomes counts their
	// final states ("COMPLETED", "FAILED insufficient_funds").
	accepted int
	outcomes map[string]int
	// settled is how long the transfers took to turn terminal after the
	// load phase.
	settled time.Duration
	// before and after are the sums of the accounts' balances, by currency.
	before, after map[string]int64
	failures      []string
}

func (r *result) ok() bool { return len(r.failures) == 0 }

// keyState is what is known of one key the run sent.
type keyState struct {
	key  string
	body []byte
	kind op
	// stored: an answer carried the key's transfer.
	stored bool
	// transferID, status and code are those of the latest answer with
	// the transfer (code: its problem's, for a refused transfer);
	// outcome names its state for the report.
	transferID, status, code, outcome string
}

// tracker holds every key of a run. It is safe for concurrent use.
type tracker struct {
	mu     sync.Mutex
	keys   []*keyState // every key sent, for duplicates
	stored []*keyState // keys with a transfer, for key reuse
}

func (t *tracker) add(k *keyState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys = append(t.keys, k)
}

// pick draws an earlier key: any key sent, or with stored one that has a
// transfer. nil when there is none yet.
func (t *tracker) pick(draw func(n int) int, stored bool) *keyState {
	t.mu.Lock()
	defer t.mu.Unlock()
	from := t.keys
	if stored {
		from = t.stored
	}
	if len(from) == 0 {
		return nil
	}
	return from[draw(len(from))]
}

// outcome classifies an answer to a POST of k's key with k's body and
// records the transfer it carries. It returns what breaks the contract,
// or "".
func (t *tracker) outcome(k *keyState, a answer, err error) string {
	if err != nil || a.Status == http.StatusServiceUnavailable || a.Status == http.StatusTooManyRequests {
		return "" // no answer yet: the same request again is the remedy
	}
	if a.Transfer.ID == "" {
		return fmt.Sprintf("key %s: %s without a transfer", k.key, label(a.Status, a.Code))
	}
	switch a.Status {
	case http.StatusOK, http.StatusAccepted, http.StatusUnprocessableEntity, http.StatusForbidden:
	default:
		return fmt.Sprintf("key %s: %s", k.key, label(a.Status, a.Code))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if k.stored && k.transferID != a.Transfer.ID {
		return fmt.Sprintf("key %s answered transfer %s, then %s", k.key, k.transferID, a.Transfer.ID)
	}
	if k.stored && terminal(k.status) {
		// An answer sent earlier may arrive later: only a different final
		// state is wrong.
		if terminal(a.Transfer.Status) && k.status != a.Transfer.Status {
			return fmt.Sprintf("key %s: transfer %s was %s, then %s", k.key, k.transferID, k.status, a.Transfer.Status)
		}
		return ""
	}
	if !k.stored {
		k.stored = true
		t.stored = append(t.stored, k)
	}
	k.transferID, k.status, k.code = a.Transfer.ID, a.Transfer.Status, a.Code
	k.outcome = a.Transfer.outcome(a.Code)
	return ""
}

// unsettled lists the keys whose transfer is not known to be terminal:
// accepted and pending, or never answered.
func (t *tracker) unsettled() []*keyState {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*keyState
	for _, k := range t.keys {
		if !terminal(k.status) {
			out = append(out, k)
		}
	}
	return out
}

// transferRequest is the body of POST /transfers.
type transferRequest struct {
	Source      string `json:"sourceAccountId"`
	Destination string `json:"destinationAccountId"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Reference   string `json:"reference,omitempty"`
}

// book is the accounts of a run, grouped by currency.
type book struct {
	// groups are the currencies with at least two accounts.
	groups []group
}

type group struct {
	currency string
	accounts []string
	// tooMuch is an amount no account of the group can pay: more than
	// their sum, at most the stack's MaxTransferAmount.
	tooMuch int64
}

func newBook(balances map[string]balance, maxTransfer int64) (book, []string) {
	byCurrency := map[string]*group{}
	for _, id := range slices.Sorted(maps.Keys(balances)) {
		b := balances[id]
		g := byCurrency[b.currency]
		if g == nil {
			g = &group{currency: b.currency}
			byCurrency[b.currency] = g
		}
		g.accounts = append(g.accounts, id)
		g.tooMuch += b.amount
	}
	var bk book
	var warnings []string
	for _, c := range slices.Sorted(maps.Keys(byCurrency)) {
		g := byCurrency[c]
		if len(g.accounts) < 2 {
			warnings = append(warnings, fmt.Sprintf("%s is the only %s account: no transfer uses it", g.accounts[0], c))
			continue
		}
		if g.tooMuch >= maxTransfer {
			warnings = append(warnings, fmt.Sprintf("the %s accounts hold %d, not less than MaxTransferAmount %d: an insufficient-funds transfer may succeed", c, g.tooMuch, maxTransfer))
		}
		g.tooMuch = min(g.tooMuch+1, maxTransfer)
		bk.groups = append(bk.groups, *g)
	}
	return bk, warnings
}

// request draws a transfer between two accounts of one currency.
func (bk book) request(r interface {
	IntN(int) int
	Int64N(int64) int64
}, kind op, maxAmount int64, ref string) transferRequest {
	g := bk.groups[r.IntN(len(bk.groups))]
	i := r.IntN(len(g.accounts))
	j := r.IntN(len(g.accounts) - 1)
	if j >= i {
		j++
	}
	amount := 1 + r.Int64N(maxAmount)
	if kind == opInsufficient {
		amount = g.tooMuch
	}
	return transferRequest{Source: g.accounts[i], Destination: g.accounts[j], Amount: amount, Currency: g.currency, Reference: ref}
}

type balance struct {
	amount   int64
	currency string
}

// balances reads every account as its owner, retrying an answer that asks
// for it a few times.
func balances(ctx context.Context, c *client, ids []string) (map[string]balance, error) {
	out := map[string]balance{}
	for _, id := range ids {
		var err error
		for attempt := range 10 {
			var b balance
			b.amount, b.currency, err = c.account(ctx, id)
			if err == nil {
				out[id] = b
				break
			}
			if !retryable(err) || attempt == 9 {
				return nil, err
			}
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func sums(bs map[string]balance) map[string]int64 {
	out := map[string]int64{}
	for _, b := range bs {
		out[b.currency] += b.amount
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// load runs the load phase until its duration or count, then waits for
// every transfer to settle and verifies the accounts. An error is a
// run that could not be made (accounts not readable); what the run
// found wrong is in result.failures. stop ends the load phase early
// (Ctrl-C); the settling and the checks still run.
func load(ctx, stop context.Context, cfg config) (*result, error) {
	logf := func(format string, args ...any) {
		if cfg.log != nil {
			fmt.Fprintf(cfg.log, format+"\n", args...)
		}
	}
	c := newClient(cfg.base, cfg.auth, cfg.clients, cfg.requestTimeout)
	before, err := balances(ctx, c, cfg.accounts)
	if err != nil {
		return nil, err
	}
	bk, warnings := newBook(before, cfg.maxTransfer)
	for _, w := range warnings {
		logf("warning: %s", w)
	}
	if len(bk.groups) == 0 {
		return nil, fmt.Errorf("no two of the accounts %v share a currency", cfg.accounts)
	}

	res := &result{stats: newStats(), outcomes: map[string]int{}, before: sums(before)}
	tr := &tracker{}
	var errorsSeen atomic.Int64
	start := time.Now()
	pc := newPacer(start, cfg.rate, cfg.count, cfg.duration)
	loadCtx, cancel := context.WithCancel(stop)
	defer cancel()

	done := make(chan struct{})
	var progress sync.WaitGroup
	if cfg.progress != nil {
		progress.Go(func() { showProgress(cfg, pc, res.stats, &errorsSeen, start, done) })
	}

	var wg sync.WaitGroup
	for i := range cfg.clients {
		wg.Go(func() {
			r := clientRand(cfg.seed, i)
			for n := 0; ; n++ {
				wait, ok := pc.take(time.Now())
				if !ok || sleep(loadCtx, wait) != nil {
					return
				}
				kind := cfg.mix.pick(r)
				var k *keyState
				payload := []byte(nil)
				switch kind {
				case opDuplicate:
					k = tr.pick(r.IntN, false)
				case opReuse:
					k = tr.pick(r.IntN, true)
				}
				if k == nil { // nothing to resend yet: a new transfer
					if kind == opDuplicate || kind == opReuse {
						kind = opNew
					}
					req := bk.request(r, kind, cfg.maxAmount, "load "+cfg.runID)
					body, _ := json.Marshal(req)
					k = &keyState{key: fmt.Sprintf("load-%s-%d-%d", cfg.runID, i, n), body: body, kind: kind}
					tr.add(k)
				}
				payload = k.body
				if kind == opReuse {
					var req transferRequest
					_ = json.Unmarshal(k.body, &req)
					req.Reference += " reused"
					payload, _ = json.Marshal(req)
				}
				t0 := time.Now()
				a, err := c.postTransfer(ctx, k.key, payload)
				res.stats.add(kind, label(a.Status, a.Code), time.Since(t0))
				bad := ""
				if kind == opReuse {
					if err == nil && !(a.Status == http.StatusUnprocessableEntity && a.Code == "idempotency_key_reused") &&
						a.Status != http.StatusServiceUnavailable && a.Status != http.StatusTooManyRequests {
						bad = fmt.Sprintf("key %s reused with another body: %s, want 422 idempotency_key_reused", k.key, label(a.Status, a.Code))
					}
				} else {
					bad = tr.outcome(k, a, err)
				}
				if bad != "" {
					res.stats.addUnexpected(bad)
				}
				if err != nil || a.Status >= 500 || bad != "" {
					errorsSeen.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(done)
	progress.Wait()
	logf("load phase over: %d requests in %s; waiting for the transfers to settle", res.stats.total(), res.elapsed.Round(time.Millisecond))

	settleStart := time.Now()
	left := settle(ctx, c, tr, cfg, res.stats)
	res.settled = time.Since(settleStart)

	after, err := balances(ctx, c, slices.Sorted(maps.Keys(before)))
	if err != nil {
		res.failures = append(res.failures, "balances after the run: "+err.Error())
	} else {
		res.after = sums(after)
	}
	res.verify(tr, left)
	return res, nil
}

// settle replays every key whose transfer is not terminal until it is,
// or until the settle timeout. It returns the keys still unsettled.
func settle(ctx context.Context, c *client, tr *tracker, cfg config, st *stats) []*keyState {
	ctx, cancel := context.WithTimeout(ctx, cfg.settleTimeout)
	defer cancel()
	for round := 0; ; round++ {
		left := tr.unsettled()
		if len(left) == 0 || ctx.Err() != nil {
			return left
		}
		if round > 0 && sleep(ctx, 100*time.Millisecond) != nil {
			return left
		}
		work := make(chan *keyState)
		var wg sync.WaitGroup
		for range cfg.clients {
			wg.Go(func() {
				for k := range work {
					a, err := c.postTransfer(ctx, k.key, k.body)
					if ctx.Err() != nil {
						continue
					}
					if bad := tr.outcome(k, a, err); bad != "" {
						st.addUnexpected("while settling: " + bad)
					}
				}
			})
		}
		for _, k := range left {
			work <- k
		}
		close(work)
		wg.Wait()
	}
}

// verify records what the run found wrong: money not conserved,
// transfers not terminal, answers that break the contract, server errors.
func (r *result) verify(tr *tracker, left []*keyState) {
	tr.mu.Lock()
	for _, k := range tr.keys {
		if !k.stored {
			continue
		}
		r.accepted++
		if terminal(k.status) {
			r.outcomes[k.outcome]++
		}
	}
	tr.mu.Unlock()
	if r.after != nil {
		if err := conserved(r.before, r.after); err != nil {
			r.failures = append(r.failures, err.Error())
		}
	}
	if err := allTerminal(left); err != nil {
		r.failures = append(r.failures, err.Error())
	}
	if n := r.stats.unexpectedCount; n > 0 {
		r.failures = append(r.failures, fmt.Sprintf("%d answers broke the contract, first: %v", n, r.stats.unexpected[0]))
	}
	if n := r.stats.serverErrors(); n > 0 {
		r.failures = append(r.failures, fmt.Sprintf("%d answers were server errors other than 503", n))
	}
}

// conserved checks that every currency's sum is the same before and after.
func conserved(before, after map[string]int64) error {
	var bad []string
	for _, c := range slices.Sorted(maps.Keys(before)) {
		if before[c] != after[c] {
			bad = append(bad, fmt.Sprintf("%s %d before, %d after (%+d)", c, before[c], after[c], after[c]-before[c]))
		}
	}
	for _, c := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[c]; !ok {
			bad = append(bad, fmt.Sprintf("%s: none before, %d after", c, after[c]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("money not conserved: %v", bad)
	}
	return nil
}

// allTerminal checks that no key is left unsettled, naming the first few.
func allTerminal(left []*keyState) error {
	if len(left) == 0 {
		return nil
	}
	var pending, unanswered []string
	for _, k := range left {
		if k.stored {
			pending = append(pending, k.key+" ("+k.transferID+" "+k.status+")")
		} else {
			unanswered = append(unanswered, k.key)
		}
	}
	var msg string
	if len(pending) > 0 {
		msg = fmt.Sprintf("%d accepted transfers not terminal after -settle-timeout: %v", len(pending), firstFew(pending))
	}
	if len(unanswered) > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("%d keys never answered with a transfer: %v", len(unanswered), firstFew(unanswered))
	}
	return fmt.Errorf("%s", msg)
}

func firstFew(s []string) []string {
	if len(s) > 5 {
		return append(slices.Clone(s[:5]), "...")
	}
	return s
}

// showProgress draws the bar until done: the share of the run gone (of
// its count or its duration, whichever is nearer), the live rate and the
// errors so far.
func showProgress(cfg config, pc *pacer, st *stats, errs *atomic.Int64, start time.Time, done <-chan struct{}) {
	const steps = 1000
	bar := progressbar.NewOptions64(steps,
		progressbar.OptionSetWriter(cfg.progress),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			_ = bar.Finish()
			return
		case <-tick.C:
		}
		sent := st.total()
		elapsed := time.Since(start)
		frac := max(float64(pc.taken())/float64(cfg.count), float64(elapsed)/float64(cfg.duration))
		bar.Describe(fmt.Sprintf("%d requests  %.0f req/s  %d errors", sent, float64(sent)/elapsed.Seconds(), errs.Load()))
		_ = bar.Set64(int64(min(frac, 1) * steps))
	}
}
