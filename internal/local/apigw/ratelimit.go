package apigw

import (
	"sync"
	"time"
)

// callerLimiter counts each caller's requests over a trailing window, as
// an AWS WAF rate-based rule aggregated per caller does: a request is
// refused while the caller already has Limit served requests within the
// last Window. golang.org/x/time/rate is a token bucket, whose refill lets
// a steady caller past the count a rate-based rule keeps; a log of the
// last Limit request times per caller reproduces the rule exactly.
//
// Unlike WAF, which counts the requests it blocks too, only served
// requests count, so a client that waits for Retry-After is served again.
type callerLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu sync.Mutex
	// served holds, per caller, the times of its last limit served
	// requests, oldest first.
	served map[string][]time.Time
	// sweepAt is when callers idle for a window are next forgotten.
	sweepAt time.Time
}

func newCallerLimiter(rl RateLimit, now func() time.Time) *callerLimiter {
	if rl.Limit <= 0 || rl.Window <= 0 {
		return nil
	}
	return &callerLimiter{limit: rl.Limit, window: rl.Window, now: now, served: make(map[string][]time.Time)}
}

// allow reports whether the caller may be served now, and counts it if so.
// A nil limiter allows everything.
func (l *callerLimiter) allow(caller string) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) {
		for c, times := range l.served {
			if now.Sub(times[len(times)-1]) >= l.window {
				delete(l.served, c)
			}
		}
		l.sweepAt = now.Add(l.window)
	}
	times := l.served[caller]
	if len(times) == l.limit {
		if now.Sub(times[0]) < l.window {
			return false
		}
		times = times[1:]
	}
	l.served[caller] = append(times, now)
	return true
}
