package api

import (
	"testing"
	"time"
)

// The reads of a wait slow down as it grows: within the first 2 s as
// often as before (every 250 ms at most), then up to one a second, so a
// full 10 s wait costs far fewer reads than the 45 of a fixed 250 ms cap.
func TestWaitReadsSlowDown(t *testing.T) {
	for _, tc := range []struct {
		waited time.Duration
		want   time.Duration
	}{
		{0, 250 * time.Millisecond},
		{time.Second, 250 * time.Millisecond},
		{2 * time.Second, 500 * time.Millisecond},
		{3 * time.Second, 750 * time.Millisecond},
		{4 * time.Second, time.Second},
		{10 * time.Second, time.Second},
	} {
		if got := pollCap(tc.waited); got != tc.want {
			t.Errorf("pollCap(%v) = %v, want %v", tc.waited, got, tc.want)
		}
	}
	// The schedule of a full wait, at the longest pause of each delay
	// (jitter only shortens it): how many reads.
	reads := func(cap func(time.Duration) time.Duration) int {
		n, elapsed, delay := 0, time.Duration(0), waitFirstPoll
		for elapsed+delay < MaxWait {
			elapsed += delay
			n++
			delay = min(delay*3/2, cap(elapsed))
		}
		return n
	}
	fixed := reads(func(time.Duration) time.Duration { return waitMaxPoll })
	slowing := reads(pollCap)
	if slowing > 25 || slowing >= fixed {
		t.Errorf("a %v wait reads %d times (a fixed cap: %d), want at most 25", MaxWait, slowing, fixed)
	}
	t.Logf("a %v wait: %d reads at least apart, %d with a fixed %v cap", MaxWait, slowing, fixed, waitMaxPoll)
}
