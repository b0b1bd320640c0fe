package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/internal/percentile"
)

// Sample is what a closed-loop run measured: each request's latency and
// the wall time the clients ran. Samples of the same cell from several
// rounds add up (Add), so a figure is the sum of interleaved slices of
// time rather than one stretch that a noisy neighbour could own.
type Sample struct {
	Latencies []time.Duration
	Elapsed   time.Duration
	// Calls is the number of remote calls the requests made; OwnerReads
	// is how many of them read an account's owner beside the
	// reservation (the orchestrator's, when its container did not
	// remember the owner).
	Calls, OwnerReads int64
}

// Add appends o's requests and time to s.
func (s *Sample) Add(o Sample) {
	s.Latencies = append(s.Latencies, o.Latencies...)
	s.Elapsed += o.Elapsed
	s.Calls += o.Calls
	s.OwnerReads += o.OwnerReads
}

// Requests is the number of requests measured.
func (s Sample) Requests() int { return len(s.Latencies) }

// PerSecond is requests per second of wall time.
func (s Sample) PerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(len(s.Latencies)) / s.Elapsed.Seconds()
}

// CallsPerRequest is the mean number of remote calls per request.
func (s Sample) CallsPerRequest() float64 {
	if len(s.Latencies) == 0 {
		return 0
	}
	return float64(s.Calls) / float64(len(s.Latencies))
}

// BudgetedCallsPerRequest is the mean number of remote calls per request
// that count against the budget: all but the owner reads.
func (s Sample) BudgetedCallsPerRequest() float64 {
	if len(s.Latencies) == 0 {
		return 0
	}
	return float64(s.Calls-s.OwnerReads) / float64(len(s.Latencies))
}

// OwnerReadsPerRequest is the mean number of owner reads per request.
func (s Sample) OwnerReadsPerRequest() float64 {
	if len(s.Latencies) == 0 {
		return 0
	}
	return float64(s.OwnerReads) / float64(len(s.Latencies))
}

// Percentile is the nearest-rank percentile of the latencies at permille
// per mille (500 is the median, 999 p99.9), as cmd/load and the plots
// compute it.
func (s Sample) Percentile(permille int) time.Duration {
	return percentile.Of(s.sorted(), permille)
}

// sorted returns the latencies in order, sorting them in place once.
func (s Sample) sorted() []time.Duration {
	if !slices.IsSorted(s.Latencies) {
		slices.Sort(s.Latencies)
	}
	return s.Latencies
}

// Op is one request of a closed-loop client: client is the client's
// index, seq the request's number within the run (unique across
// clients).
type Op func(ctx context.Context, client, seq int) error

// drive runs clients closed-loop clients, each sending its next request
// as soon as the previous one is answered, for d. An error from a
// request stops the run and is returned.
func drive(ctx context.Context, clients int, d time.Duration, op Op) (Sample, error) {
	if clients < 1 {
		return Sample{}, errors.New("drive: at least one client")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu   sync.Mutex
		lat  []time.Duration
		seq  int
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	next := func() int {
		mu.Lock()
		defer mu.Unlock()
		seq++
		return seq
	}
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			own := make([]time.Duration, 0, 1024)
			defer func() {
				mu.Lock()
				lat = append(lat, own...)
				mu.Unlock()
			}()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				n := next()
				t := time.Now()
				if err := op(ctx, c, n); err != nil {
					cancel(fmt.Errorf("client %d, request %d: %w", c, n, err))
					return
				}
				own = append(own, time.Since(t))
			}
		})
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Sample{}, err
	}
	return Sample{Latencies: lat, Elapsed: elapsed}, nil
}
