package stack

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blockingServer answers the requests once answer is called, counting
// the requests it serves at the same time and recording their order of
// arrival by their "seq" header.
type blockingServer struct {
	*httptest.Server
	release        chan struct{}
	releaseOnce    sync.Once
	inFlight, peak atomic.Int64
	mu             sync.Mutex
	order          []string
}

// answer lets every request, present and future, be answered.
func (s *blockingServer) answer() { s.releaseOnce.Do(func() { close(s.release) }) }

func newBlockingServer(t *testing.T) *blockingServer {
	t.Helper()
	s := &blockingServer{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		s.mu.Lock()
		s.order = append(s.order, r.Header.Get("seq"))
		s.mu.Unlock()
		<-s.release
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(s.Close)
	t.Cleanup(s.answer) // before Close, which waits for the handlers
	return s
}

func get(ctx context.Context, rt http.RoundTripper, url, seq string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("seq", seq)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// waitFor polls cond until it holds or a second has passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDynamoDBGateBoundsRequestsInFlight(t *testing.T) {
	tests := []struct {
		name     string
		width    int
		requests int
		wantPeak int64
	}{
		{name: "default width", width: 0, requests: 10, wantPeak: DefaultDynamoDBConcurrency},
		{name: "width one", width: 1, requests: 4, wantPeak: 1},
		{name: "no bound", width: -1, requests: 6, wantPeak: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newBlockingServer(t)
			gate, err := newDynamoDBGate(srv.URL, tt.width)
			if err != nil {
				t.Fatal(err)
			}
			rt := gatedTransport{gate: gate, next: newTransport()}
			errs := make(chan error, tt.requests)
			for range tt.requests {
				go func() { errs <- get(context.Background(), rt, srv.URL, "") }()
			}
			waitFor(t, "the server to be busy", func() bool { return srv.inFlight.Load() == tt.wantPeak })
			time.Sleep(20 * time.Millisecond) // time for more to slip past a broken gate
			srv.answer()
			for range tt.requests {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			if got := srv.peak.Load(); got != tt.wantPeak {
				t.Errorf("%d requests in flight at once, want %d", got, tt.wantPeak)
			}
		})
	}
}

func TestDynamoDBGateAdmitsInArrivalOrder(t *testing.T) {
	srv := newBlockingServer(t)
	gate, err := newDynamoDBGate(srv.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	client := gatedClient{gate: gate, next: &http.Client{Transport: newTransport()}}
	rt := roundTripperFunc(func(req *http.Request) (*http.Response, error) { return client.Do(req) })
	want := []string{"0", "1", "2", "3", "4"}
	errs := make(chan error, len(want))
	for i, seq := range want {
		go func() { errs <- get(context.Background(), rt, srv.URL, seq) }()
		// Each comes once the one before has taken the slot or queued:
		// the first holds the slot, the others queue in this order.
		if i == 0 {
			waitFor(t, "the first request", func() bool { return srv.inFlight.Load() == 1 })
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	srv.answer()
	for range want {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(srv.order, ","); got != strings.Join(want, ",") {
		t.Errorf("served in order %s, want %s", got, strings.Join(want, ","))
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestDynamoDBGateScope(t *testing.T) {
	srv := newBlockingServer(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "{}") }))
	t.Cleanup(other.Close)
	gate, err := newDynamoDBGate(srv.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	rt := gatedTransport{gate: gate, next: newTransport()}
	held := make(chan error, 1)
	go func() { held <- get(context.Background(), rt, srv.URL, "holder") }()
	waitFor(t, "the slot to be taken", func() bool { return srv.inFlight.Load() == 1 })

	t.Run("another host does not wait", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := get(ctx, rt, other.URL, ""); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a request gives up with its context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := get(ctx, rt, srv.URL, "")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting to send to DynamoDB Local") {
			t.Fatalf("err = %v, want the deadline while waiting", err)
		}
		if srv.inFlight.Load() != 1 {
			t.Error("the request that gave up reached the server")
		}
	})
	t.Run("a bad endpoint", func(t *testing.T) {
		if _, err := newDynamoDBGate("::not a url", 1); err == nil {
			t.Error("no error")
		}
	})
	srv.answer()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
