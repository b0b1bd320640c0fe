// Package bench measures the orchestrator's critical path against DynamoDB
// Local and the local Step Functions endpoint: remote calls per request,
// counted by SDK middleware, and latency percentiles. A benchmark fails
// when a request kind makes more remote calls than its budget.
package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

var st *stack.Stack

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		// No benchmark asked for (a plain go test ./...): no stack to start.
		return m.Run()
	}
	var err error
	st, err = stack.Start(context.Background(), stack.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: start local stack:", err)
		return 1
	}
	defer st.Close(context.Background())
	return m.Run()
}

// calls counts remote calls: one per attempt that reaches the transport.
type calls struct{ n atomic.Int64 }

func (c *calls) add(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("countCalls",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.n.Add(1)
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

type fixture struct {
	handler *api.Handler
	calls   *calls
	store   *idempotency.Store
	db      *dynamodb.Client
}

func newFixture(b *testing.B) *fixture {
	b.Helper()
	c := &calls{}
	cfg := st.AWS.Copy()
	cfg.APIOptions = append(cfg.APIOptions, c.add)
	db := dynamodb.NewFromConfig(cfg)
	env := map[string]string{
		"IDEMPOTENCY_TABLE": st.Tables["IdempotencyTable"],
		"LEDGER_TABLE":      st.Tables["LedgerTable"],
		"STATE_MACHINE_ARN": st.StateMachines["TransferStateMachine"],
	}
	h, err := app.NewOrchestrator(func(k string) string { return env[k] }, db, sfn.NewFromConfig(cfg), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	led, err := ledger.New(dynamodb.NewFromConfig(st.AWS), ledger.Config{LedgerTable: env["LEDGER_TABLE"], IdempotencyTable: env["IDEMPOTENCY_TABLE"]})
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"bench-src", "bench-dst"} {
		// The caller's own accounts: ownership is enforced, as deployed.
		if _, err := led.OpenAccount(context.Background(), id, "iam:"+caller, "EUR", 1<<40); err != nil {
			b.Fatal(err)
		}
	}
	return &fixture{handler: h, calls: c, store: idempotency.NewStore(dynamodb.NewFromConfig(st.AWS), env["IDEMPOTENCY_TABLE"]), db: db}
}

const caller = "arn:aws:iam::123456789012:user/bench"

func request(key string, amount int) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		Resource: "/transfers", Path: "/transfers", HTTPMethod: "POST",
		Headers: map[string]string{"Idempotency-Key": key},
		Body:    fmt.Sprintf(`{"sourceAccountId":"bench-src","destinationAccountId":"bench-dst","amount":%d,"currency":"EUR"}`, amount),
		RequestContext: events.APIGatewayProxyRequestContext{
			Path:     "/transfers",
			Identity: events.APIGatewayRequestIdentity{UserArn: caller},
		},
	}
}

// measure runs b.N requests and reports calls per request and latency
// percentiles; it fails the benchmark when calls per request exceed
// budget or a response has an unexpected status.
func (f *fixture) measure(b *testing.B, budget int64, wantStatus int, req func(i int) events.APIGatewayProxyRequest) {
	b.Helper()
	lat := make([]time.Duration, b.N)
	f.calls.n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		r := req(i)
		start := time.Now()
		resp, err := f.handler.Handle(context.Background(), r)
		lat[i] = time.Since(start)
		if err != nil || resp.StatusCode != wantStatus {
			b.Fatalf("request %d: status %d, err %v, body %s", i, resp.StatusCode, err, resp.Body)
		}
	}
	b.StopTimer()
	perOp := float64(f.calls.n.Load()) / float64(b.N)
	slices.Sort(lat)
	b.ReportMetric(perOp, "calls/op")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if perOp > float64(budget) {
		b.Fatalf("%.2f remote calls per request, budget %d", perOp, budget)
	}
}

// settle puts a reserved record into status (with a response when
// terminal), as the workflow would.
func (f *fixture) settle(b *testing.B, key string, status idempotency.Status) {
	b.Helper()
	rec, err := f.store.Get(context.Background(), "iam:"+caller, key)
	if err != nil {
		b.Fatal(err)
	}
	response := ""
	if status.Terminal() {
		response = fmt.Sprintf(`{"transferId":%q,"status":%q,"sourceAccountId":"bench-src","destinationAccountId":"bench-dst","amount":1,"currency":"EUR","createdAt":%q}`,
			rec.ResourceID, status, rec.CreatedAt)
	}
	if err := setStatus(context.Background(), dynamodb.NewFromConfig(st.AWS), st.Tables["IdempotencyTable"], rec.Key, status, response); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkOrchestrator(b *testing.B) {
	f := newFixture(b)
	run := time.Now().UnixNano()

	b.Run("new", func(b *testing.B) {
		prefix := fmt.Sprintf("new-%d-%d-", run, b.N)
		f.measure(b, 2, 202, func(i int) events.APIGatewayProxyRequest { return request(prefix+fmt.Sprint(i), 1) })
	})
	b.Run("duplicate-in-progress", func(b *testing.B) {
		key := fmt.Sprintf("inprogress-%d-%d", run, b.N)
		f.reserve(b, key)
		f.settle(b, key, idempotency.StatusInProgress)
		f.measure(b, 1, 202, func(int) events.APIGatewayProxyRequest { return request(key, 1) })
	})
	b.Run("duplicate-completed", func(b *testing.B) {
		key := fmt.Sprintf("completed-%d-%d", run, b.N)
		f.reserve(b, key)
		f.settle(b, key, idempotency.StatusCompleted)
		f.measure(b, 1, 200, func(int) events.APIGatewayProxyRequest { return request(key, 1) })
	})
	b.Run("key-reused", func(b *testing.B) {
		key := fmt.Sprintf("reused-%d-%d", run, b.N)
		f.reserve(b, key)
		f.settle(b, key, idempotency.StatusInProgress)
		f.measure(b, 1, 422, func(int) events.APIGatewayProxyRequest { return request(key, 2) })
	})
}

// reserve takes key for a one-unit transfer without starting its
// execution, so the record stays where settle puts it.
func (f *fixture) reserve(b *testing.B, key string) {
	b.Helper()
	canonical := []byte(`{"sourceAccountId":"bench-src","destinationAccountId":"bench-dst","amount":1,"currency":"EUR","reference":""}`)
	if _, _, err := f.store.Reserve(context.Background(), idempotency.Reservation{
		Scope: "iam:" + caller, Key: key, Fingerprint: idempotency.Fingerprint(canonical),
		ResourceID: fmt.Sprintf("bench-%s", key), Request: canonical,
	}); err != nil {
		b.Fatal(err)
	}
}
