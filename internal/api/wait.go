package api

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/internal/reservation"
)

// Prefer: wait=N (RFC 7240): POST /transfers may wait up to N seconds for
// the transfer to settle and answer its final state.
const (
	// HeaderPrefer is the request header that carries the preference.
	HeaderPrefer = "Prefer"
	// HeaderPreferenceApplied names the preferences the answer honoured.
	HeaderPreferenceApplied = "Preference-Applied"
	// MaxWait caps wait=N. It stays below the orchestrator's 15 s
	// Lambda timeout (template.yaml), itself below API Gateway's 29 s
	// integration timeout, with room to answer.
	MaxWait = 10 * time.Second
	// HeaderWaitLimited marks a request whose caller is over its wait
	// limit: the web ACL's rate-based rule PerSessionWaitRate (and
	// PerSourceIpWaitRate) counts each caller's requests that ask to wait
	// and, over CallerWaitLimit within 60 s, inserts this header (AWS WAF
	// prefixes the rule's header name, wait-limited, with x-amzn-waf-).
	// Such a request is answered at once, as without the preference: one
	// caller's waiters never hold more than about CallerWaitLimit of the
	// orchestrator's reserved concurrency. A client that sends the header
	// itself only gives up its own wait.
	HeaderWaitLimited = "X-Amzn-Waf-Wait-Limited"
)

// Backoff of the reads of a waited transfer: the first read comes after
// waitFirstPoll, each next one after a delay 1.5 times longer, with
// jitter, at most waitMaxPoll while the wait is young and then a quarter
// of the time waited, up to waitLateMaxPoll: a transfer that settles in
// 15 ms costs one or two reads, one that settles within 2 s is seen
// within 250 ms, and a wait that runs the whole 10 s costs about 25
// reads instead of 45 (pollCap).
const (
	waitFirstPoll   = 15 * time.Millisecond
	waitMaxPoll     = 250 * time.Millisecond
	waitLateMaxPoll = time.Second
	// waitReadReserve is kept before the handler's deadline for the
	// last read and the answer.
	waitReadReserve = 300 * time.Millisecond
)

// preferredWait reads the wait preference of req's Prefer headers: the
// number of whole seconds asked, capped at MaxWait. A request without it,
// or with an invalid value, has ok = false and is answered as if it had
// not asked (RFC 7240 §2: a preference that is not understood is
// ignored).
//
// RFC 7240's grammar is small (comma-separated preferences, each a token
// with an optional "=" value and ";" parameters); no maintained Go
// module parses it, so this does, for the one preference the API reads.
func preferredWait(req events.APIGatewayProxyRequest) (d time.Duration, ok bool) {
	if hasHeader(req, HeaderWaitLimited) {
		return 0, false
	}
	var values []string
	for k, vs := range req.MultiValueHeaders {
		if strings.EqualFold(k, HeaderPrefer) {
			values = append(values, vs...)
		}
	}
	if len(values) == 0 {
		if v, _ := header(req, HeaderPrefer); v != "" {
			values = append(values, v)
		}
	}
	for _, v := range values {
		for pref := range strings.SplitSeq(v, ",") {
			pref, _, _ = strings.Cut(pref, ";") // parameters of wait mean nothing
			name, value, _ := strings.Cut(pref, "=")
			if !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			value = strings.Trim(strings.TrimSpace(value), `"`)
			n, err := strconv.ParseUint(value, 10, 32)
			if err != nil {
				// RFC 7240 §2: the first instance of a preference is
				// the one that counts; an invalid one is ignored.
				return 0, false
			}
			return min(time.Duration(n)*time.Second, MaxWait), true
		}
	}
	return 0, false
}

// hasHeader reports whether req carries the header, with any value.
func hasHeader(req events.APIGatewayProxyRequest, name string) bool {
	for k := range req.MultiValueHeaders {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	for k := range req.Headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// appliedWait is the Preference-Applied value for a wait of d.
func appliedWait(d time.Duration) string {
	return "wait=" + strconv.Itoa(int(d/time.Second))
}

// settle waits for the pending answer resp of rec's transfer to become
// final, reading the record with backoff until it is terminal, until
// wait has passed, or until the Lambda function's remaining time (ctx's
// deadline, already short of the answer's reserve) runs out. The answer
// is then the final transfer (201 for the request that created it, 200
// with Idempotent-Replayed for a replay), its stored failure (as a
// replay answers it), or resp when the transfer is still running. Every
// answer carries Preference-Applied.
func (h *Handler) settle(ctx context.Context, rec reservation.Record, base string, replayed bool, wait time.Duration, resp events.APIGatewayProxyResponse) events.APIGatewayProxyResponse {
	applied := appliedWait(wait)
	switch {
	case resp.StatusCode >= http.StatusInternalServerError:
		// The infrastructure refused: the client retries.
		return resp
	case resp.StatusCode != http.StatusAccepted:
		// Already final: nothing to wait for.
		return withHeader(resp, HeaderPreferenceApplied, applied)
	}
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Add(-waitReadReserve).Before(deadline) {
		deadline = d.Add(-waitReadReserve)
	}
	delay, start := waitFirstPoll, time.Now()
	for {
		pause := delay/2 + rand.N(delay/2+1)
		if !time.Now().Add(pause).Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return withHeader(resp, HeaderPreferenceApplied, applied)
		case <-time.After(pause):
		}
		delay = min(delay*3/2, pollCap(time.Since(start)))
		fresh, err := h.records.GetByRecordKey(ctx, rec.Key)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				h.log.WarnContext(ctx, "read a waited transfer", "transferId", rec.ResourceID, "recordKey", rec.Key, "error", err)
			}
			// The transfer was accepted: a failed read while waiting
			// leaves it pending, never fails it.
			return withHeader(resp, HeaderPreferenceApplied, applied)
		}
		if !fresh.Status.Terminal() {
			continue
		}
		final := h.answer(fresh, base, replayed)
		if final.StatusCode == http.StatusOK && !replayed {
			final.StatusCode = http.StatusCreated
		}
		return withHeader(final, HeaderPreferenceApplied, applied)
	}
	return withHeader(resp, HeaderPreferenceApplied, applied)
}

// waitPref is a request's Prefer: wait, as preferredWait read it.
type waitPref struct {
	d  time.Duration
	on bool
}

// waited is resp, or, when the request asked to wait, the answer once the
// transfer settles within the wait (settle).
func (h *Handler) waited(ctx context.Context, rec reservation.Record, base string, replayed bool, pref waitPref, resp events.APIGatewayProxyResponse) events.APIGatewayProxyResponse {
	if !pref.on {
		return resp
	}
	return h.settle(ctx, rec, base, replayed, pref.d, resp)
}

func withHeader(resp events.APIGatewayProxyResponse, name, value string) events.APIGatewayProxyResponse {
	if resp.Headers == nil {
		resp.Headers = map[string]string{}
	}
	resp.Headers[name] = value
	return resp
}

// pollCap is the longest delay between two reads after waited: the reads
// slow down as the wait grows, so a long wait costs fewer reads.
func pollCap(waited time.Duration) time.Duration {
	return min(max(waitMaxPoll, waited/4), waitLateMaxPoll)
}
