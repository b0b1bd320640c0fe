package main

import (
	"sync/atomic"
	"time"
)

// pacer hands out request slots to the clients: at most limit of them,
// none due after the deadline, and with a rate, slot i due at
// start + i/rate. It is safe for concurrent use.
type pacer struct {
	start    time.Time
	interval time.Duration // 0: as fast as possible
	limit    int64
	deadline time.Time
	next     atomic.Int64
}

// newPacer paces limit requests at rate per second (0: no pacing) from
// start, until start+duration.
func newPacer(start time.Time, rate float64, limit int64, duration time.Duration) *pacer {
	p := &pacer{start: start, limit: limit, deadline: start.Add(duration)}
	if rate > 0 {
		p.interval = time.Duration(float64(time.Second) / rate)
	}
	return p
}

// take claims the next slot at time now: how long to wait before sending
// it, or ok false when the run is over (count reached, or the slot would
// be due after the deadline).
func (p *pacer) take(now time.Time) (wait time.Duration, ok bool) {
	if !now.Before(p.deadline) {
		return 0, false
	}
	i := p.next.Add(1) - 1
	if i >= p.limit {
		return 0, false
	}
	due := p.start.Add(time.Duration(i) * p.interval)
	if !due.Before(p.deadline) {
		return 0, false
	}
	return max(due.Sub(now), 0), true
}

// taken is how many slots were claimed (at most limit).
func (p *pacer) taken() int64 { return min(p.next.Load(), p.limit) }
