package idembench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/idempotency"
)

// Settings both sides share.
const (
	// Scope is ours's Operation.Scope (Powertools' key_prefix is
	// "bench").
	Scope = "bench"
	// Retention is how long a settled outcome is replayed, on both sides
	// (Powertools' expires_after_seconds).
	Retention = time.Hour
	// Lease is how long a call holds its key: ours's Config.Lease, and
	// the remaining time of the fake Lambda context Powertools is given
	// (its in-progress expiry).
	Lease = time.Minute
	// CacheSize is the local cache of the cached scenario on both sides
	// (Powertools' local_cache_max_items).
	CacheSize = 1024
	// Amount is the payload's amount; the mismatch scenario sends
	// MismatchAmount for keys completed with Amount.
	Amount         = 100
	MismatchAmount = 200
)

// Order is the handler's input on both sides: {"id": key, "amount": n}.
type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// Receipt is the handler's output: {"id", "amount", "status": "ok"}.
type Receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
	Status string `json:"status"`
}

// errDeclined is the handler's error in the error scenarios.
var errDeclined = errors.New("declined")

// GoSide is this project's side: idempotency.Wrap over
// DynamoDBPersistence on one table, through a client whose calls it
// counts.
type GoSide struct {
	client *dynamodb.Client
	table  string
	calls  callCounter
	runs   atomic.Int64
}

// NewClient returns a DynamoDB client of the DynamoDB Local at endpoint,
// with dummy credentials (DynamoDB Local checks that a request is
// signed, not by whom), then optFns.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	creds := aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "idembench"}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return creds, nil
		}),
	}, optFns...)
}

// NewGoSide returns ours's side on table (a table of
// idempotency.DefaultAttributes' TableInput) of the DynamoDB Local at
// endpoint.
func NewGoSide(endpoint, table string) *GoSide {
	g := &GoSide{table: table}
	g.client = NewClient(endpoint, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, g.calls.add)
	})
	return g
}

// Hello is the Go side's versions.
func (g *GoSide) Hello() Hello {
	v := map[string]string{"go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			switch m.Path {
			case "github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/service/dynamodb":
				v[m.Path] = m.Version
			}
		}
	}
	return Hello{Side: "ours", Versions: v}
}

// callCounter counts the calls a client sends, by operation, once per
// operation (the Initialize step, before the SDK's retries), as
// botocore's before-call event does on the Powertools side.
type callCounter struct {
	mu  sync.Mutex
	ops map[string]int64
}

func (c *callCounter) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("idembenchCount",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			c.mu.Lock()
			if c.ops == nil {
				c.ops = map[string]int64{}
			}
			c.ops[op]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// snapshot returns the counts so far.
func (c *callCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.ops))
	for k, v := range c.ops {
		out[k] = v
	}
	return out
}

// since returns the counts of after less those of before, without
// zeros.
func since(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// holdKey marks the context of a call that holds its key (the in-flight
// scenario): its handler waits until released.
type holdKey struct{}

// Run runs c: it prepares the scenario's keys, sends the warm-up
// requests, then measures c.Requests requests. Every answer is checked
// against the scenario's; the first unexpected one fails the run.
func (g *GoSide) Run(ctx context.Context, c Command) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	sc, _ := ScenarioNamed(c.Scenario)
	cache := 0
	if sc.Name == Cached {
		cache = CacheSize
	}
	idem, err := idempotency.New(idempotency.Config{
		Store:     idempotency.NewDynamoDBPersistence(g.client, g.table),
		CacheSize: cache,
		Retention: Retention,
		Lease:     Lease,
	})
	if err != nil {
		return Result{}, err
	}
	release := make(chan struct{})
	var held sync.WaitGroup // handlers of the held calls, entered
	handler := func(ctx context.Context, o Order) (Receipt, error) {
		g.runs.Add(1)
		if ctx.Value(holdKey{}) != nil {
			held.Done()
			<-release
		}
		switch sc.Name {
		case HandlerError, RetryAfterError:
			return Receipt{}, errDeclined
		case PermanentError, RetryAfterPermanent:
			return Receipt{}, idempotency.Permanent(errDeclined)
		}
		return Receipt{ID: o.ID, Amount: o.Amount, Status: "ok"}, nil
	}
	fn := idempotency.Wrap(idem, idempotency.Operation[Order]{
		Scope:   Scope,
		KeyFunc: func(o Order) (string, error) { return o.ID, nil },
	}, handler)

	// Prepare the keys: a pool of completed, failed or held keys, or a
	// failed key for each request.
	prepare := func(ctx context.Context, key string) error {
		_, err := fn(ctx, Order{ID: key, Amount: Amount})
		if err != nil && !errors.Is(err, errDeclined) {
			return fmt.Errorf("prepare %s: %w", key, err)
		}
		return nil
	}
	var holders sync.WaitGroup
	holderErrs := make(chan error, c.Pool)
	defer func() {
		close(release)
		holders.Wait()
	}()
	warm := c.Prefix + "-w"
	switch {
	case sc.Pool:
		warm = c.Prefix
		for p := range c.Pool {
			key := Key(c.Prefix, true, c.Pool, p)
			if sc.Name == InFlight {
				held.Add(1)
				holders.Go(func() {
					_, err := fn(context.WithValue(ctx, holdKey{}, true), Order{ID: key, Amount: Amount})
					select {
					case <-release: // held until released
					default: // never entered the handler, or left it early
						held.Done()
						holderErrs <- fmt.Errorf("hold %s: the call ended before it was released: %v", key, err)
					}
				})
				continue
			}
			if err := prepare(ctx, key); err != nil {
				return Result{}, err
			}
		}
		held.Wait()
		select {
		case err := <-holderErrs:
			return Result{}, err
		default:
		}
	case sc.FailedFirst:
		for _, batch := range []struct {
			prefix string
			n      int
		}{{warm, c.Warmup}, {c.Prefix, c.Requests}} {
			if _, _, err := measure(ctx, c.Workers, batch.n, func(ctx context.Context, i int) error {
				return prepare(ctx, Key(batch.prefix, false, c.Pool, i))
			}); err != nil {
				return Result{}, err
			}
		}
	}

	request := func(ctx context.Context, key string) error {
		o := Order{ID: key, Amount: Amount}
		if sc.Name == Mismatch {
			o.Amount = MismatchAmount
		}
		out, err := fn(ctx, o)
		want := Receipt{ID: key, Amount: Amount, Status: "ok"}
		switch sc.Name {
		case New, Duplicate, Cached:
			if err != nil || out != want {
				return fmt.Errorf("%s: got %+v, %v; want %+v", key, out, err, want)
			}
		case InFlight:
			if !errors.Is(err, idempotency.ErrInProgress) {
				return fmt.Errorf("%s: got %+v, %v; want %v", key, out, err, idempotency.ErrInProgress)
			}
		case HandlerError, RetryAfterError, PermanentError:
			if !errors.Is(err, errDeclined) {
				return fmt.Errorf("%s: got %+v, %v; want the handler's error", key, out, err)
			}
		case RetryAfterPermanent:
			if !errors.Is(err, idempotency.ErrStoredFailure) {
				return fmt.Errorf("%s: got %+v, %v; want %v", key, out, err, idempotency.ErrStoredFailure)
			}
		case Mismatch:
			if !errors.Is(err, idempotency.ErrKeyReused) {
				return fmt.Errorf("%s: got %+v, %v; want %v", key, out, err, idempotency.ErrKeyReused)
			}
		}
		return nil
	}

	if _, _, err := measure(ctx, c.Workers, c.Warmup, func(ctx context.Context, i int) error {
		return request(ctx, Key(warm, sc.Pool, c.Pool, i))
	}); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	calls, runs := g.calls.snapshot(), g.runs.Load()
	lat, elapsed, err := measure(ctx, c.Workers, c.Requests, func(ctx context.Context, i int) error {
		return request(ctx, Key(c.Prefix, sc.Pool, c.Pool, i))
	})
	if err != nil {
		return Result{}, err
	}
	return Result{
		Scenario:    c.Scenario,
		LatenciesNs: lat,
		ElapsedNs:   elapsed.Nanoseconds(),
		Calls:       since(calls, g.calls.snapshot()),
		HandlerRuns: g.runs.Load() - runs,
	}, nil
}

// measure sends requests 0 to n-1 from workers closed-loop workers and
// returns each request's latency (in request order) and the wall time
// from the start to the last answer. The first error stops the workers
// and is returned.
func measure(ctx context.Context, workers, n int, request func(ctx context.Context, i int) error) ([]int64, time.Duration, error) {
	lat := make([]int64, n)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for failed.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				if err := request(ctx, i); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				lat[i] = time.Since(t).Nanoseconds()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		return nil, 0, *err
	}
	return lat, elapsed, nil
}
