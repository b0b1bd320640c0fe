package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// CPU is what one request costs the orchestrator's process itself: the
// handler and the SDK (building, signing and decoding the calls) run
// against a transport that answers at once with responses recorded from
// the real services, so the time measured is time outside remote calls.
type CPU struct {
	Impl      string
	Ownership bool
	Kind      string
	// CPUNs is the process's CPU time (user and system, garbage
	// collection included) per request, NsPerOp the wall time per
	// request of the same loop on one goroutine.
	CPUNs   int64
	NsPerOp int64
	Allocs  int64
	Bytes   int64
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// recording passes requests on to next and keeps the responses to each
// operation (by X-Amz-Target), in order.
type recording struct {
	next aws.HTTPClient
	mu   sync.Mutex
	resp map[string][]recorded
}

// snapshot is a copy of the responses recorded so far. A call the recorded
// request left running (a duplicate's owner read, which it does not wait
// for) may still add to the recording; the replay reads its own copy.
func (r *recording) snapshot() map[string][]recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]recorded, len(r.resp))
	for k, v := range r.resp {
		out[k] = slices.Clone(v)
	}
	return out
}

type recorded struct {
	status int
	header http.Header
	body   []byte
}

func (r *recording) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("record response: %w", err)
	}
	r.mu.Lock()
	if r.resp == nil {
		r.resp = map[string][]recorded{}
	}
	target := req.Header.Get("X-Amz-Target")
	r.resp[target] = append(r.resp[target], recorded{status: resp.StatusCode, header: resp.Header.Clone(), body: body})
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// replaying answers each request at once with the responses recorded for
// its operation, in the order recorded, over and over: the handler sends
// the same calls for every request of a kind. One request may send two at
// once (the owner read beside the reservation), so the position is kept
// under a lock.
type replaying struct {
	resp map[string][]recorded
	mu   sync.Mutex
	next map[string]int
}

func (r *replaying) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	target := req.Header.Get("X-Amz-Target")
	seq := r.resp[target]
	if len(seq) == 0 {
		return nil, fmt.Errorf("no recorded response to %s", target)
	}
	r.mu.Lock()
	rec := seq[r.next[target]%len(seq)]
	r.next[target]++
	r.mu.Unlock()
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header.Clone(), Body: io.NopCloser(bytes.NewReader(rec.body)),
		ContentLength: int64(len(rec.body)), Request: req,
	}, nil
}

// cpu measures one request kind of an implementation (ours, the
// baseline, or ours's calls alone: the SDK's own share) with Go's
// benchmark driver: once against the real services to record their
// answers, then against the recording alone.
func (p *paths) cpu(ctx context.Context, name string, ownership bool, kind string) (CPU, error) {
	do, err := p.replayed(ctx, name, ownership, kind)
	if err != nil {
		return CPU{}, err
	}
	var (
		failed error
		cpu    time.Duration
		n      int
	)
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		start := processCPU()
		for i := 1; b.Loop(); i++ {
			if err := do(i); err != nil {
				failed = err
				b.SkipNow()
			}
		}
		// The driver's last call is the one it reports.
		cpu, n = processCPU()-start, b.N
	})
	if failed != nil {
		return CPU{}, fmt.Errorf("cpu: %s %s: %w", name, kind, failed)
	}
	return CPU{Impl: name, Ownership: ownership, Kind: kind, CPUNs: cpu.Nanoseconds() / int64(max(n, 1)), NsPerOp: res.NsPerOp(), Allocs: res.AllocsPerOp(), Bytes: res.AllocedBytesPerOp()}, nil
}

// replayed returns one request of a kind to an implementation (ours, the
// baseline, or ours's calls alone), sent once to the real services to
// record their answers and then bound to the recording alone: each call
// of the returned function sends the request again and is answered at
// once.
func (p *paths) replayed(ctx context.Context, name string, ownership bool, kind string) (func(i int) error, error) {
	build := func(client aws.HTTPClient) (func(i int) error, error) {
		cfg := clientConfig(p.st)
		cfg.HTTPClient = client
		var h handler
		switch name {
		case Ours:
			var err error
			if h, err = p.orchestrator(cfg, ownership); err != nil {
				return nil, err
			}
		case Baseline:
			var err error
			if h, err = p.conventional(cfg, ownership); err != nil {
				return nil, err
			}
		case Calls:
			for _, im := range p.impls {
				if im.name != Raw || im.ownership != ownership {
					continue
				}
				reserve := im.opsOn(dynamodb.NewFromConfig(cfg))[kind]
				if kind != New {
					return func(i int) error { return reserve(ctx, 0, i) }, nil
				}
				// A name of its own, so that the recorded start is a
				// new execution's.
				start := *p.start[ownership]
				start.Name = aws.String(fmt.Sprintf("cpu-calls-%t", ownership))
				executions := sfn.NewFromConfig(cfg)
				return func(i int) error {
					if err := reserve(ctx, 0, i); err != nil {
						return err
					}
					_, err := executions.StartExecution(ctx, &start)
					return err
				}, nil
			}
			return nil, fmt.Errorf("cpu: no raw call with ownership %t", ownership)
		default:
			return nil, fmt.Errorf("cpu: no implementation %q", name)
		}
		// One request, built here so that the loop measures the handler
		// alone: against the recording, a new key's request may be sent
		// again and is handled the same way each time.
		req, status := request(fmt.Sprintf("cpu-%s-%t", name, ownership), 0), http.StatusAccepted
		if kind == Duplicate {
			// The recorded answer is this key's.
			d := p.pool[name][0]
			req, status = request(d.key, d.client), http.StatusOK
		}
		return func(int) error { return expect(ctx, h, req, status) }, nil
	}
	rec := &recording{next: clientConfig(p.st).HTTPClient}
	do, err := build(rec)
	if err != nil {
		return nil, err
	}
	if err := do(0); err != nil {
		return nil, fmt.Errorf("cpu: record %s %s: %w", name, kind, err)
	}
	return build(&replaying{resp: rec.snapshot(), next: map[string]int{}})
}
