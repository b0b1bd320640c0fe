package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// Request kinds.
const (
	New       = "new"
	Duplicate = "duplicate"
)

// Implementations compared on the request path.
const (
	Ours     = "ours"
	Baseline = "baseline"
	Raw      = "raw"
	// Calls is measured for CPU only: ours's remote calls alone (the
	// reservation, and StartExecution for a new key), captured from the
	// orchestrator and sent by plain clients: the SDK's own share.
	Calls = "calls"
)

// caller is the benchmark's IAM identity; its scope owns the accounts.
const caller = "arn:aws:iam::123456789012:user/bench"

const scope = "iam:" + caller

// maxClients is the most clients a run may use: each has a source
// account of its own, so that no two clients' requests touch one account
// (the baseline's owner reads, the orchestrator's when it does not
// remember the owner).
const maxClients = 64

// duplicates is how many settled keys the duplicate requests cycle over.
const duplicates = 64

// noopDefinition is the workflow the request-path benchmarks start: one
// state that succeeds. The critical path is measured alone; the real
// workflow runs in the end-to-end benchmark.
const noopDefinition = `{"Comment":"Succeeds at once: the request path is measured alone.","StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}`

// impl is one implementation of the transfer endpoint, or the database
// call it stands on, with its calls counted.
type impl struct {
	name      string
	ownership bool
	calls     *calls
	// budget is the exact number of remote calls of each request kind.
	budget map[string]int
	op     map[string]Op
	// opsOn, for the raw calls, builds op on another client.
	opsOn func(*dynamodb.Client) map[string]Op
}

// paths builds the implementations over st: the project's orchestrator
// with and without ownership, the conventional pattern with and without,
// and the raw DynamoDB call each of the project's reservations makes.
type paths struct {
	st      *stack.Stack
	machine string
	led     *ledger.Ledger
	store   *reservation.Store
	db      *dynamodb.Client
	impls   []*impl
	// keys numbers the new keys of the whole run.
	keys atomic.Int64
	// pool holds the settled keys duplicates are sent for, by
	// implementation family (ours, baseline).
	pool map[string][]pooled
	// start is the StartExecution ours makes for a new key, captured
	// with the reservation, by ownership.
	start map[bool]*sfn.StartExecutionInput
}

type pooled struct {
	key    string
	client int
}

// clientConfig is the AWS configuration every implementation's clients
// use: the stack's endpoints, and enough idle connections that no client
// opens a connection per request at the highest concurrency. Each of
// with (counting or capturing calls) is added to every client's stack.
func clientConfig(st *stack.Stack, with ...func(*middleware.Stack) error) aws.Config {
	cfg := st.AWS.Copy()
	// A new slice: Copy shares the stack's.
	cfg.APIOptions = slices.Concat(cfg.APIOptions, with)
	cfg.Logger = nil
	cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 4 * maxClients
		t.MaxIdleConnsPerHost = 2 * maxClients
	})
	return cfg
}

func newPaths(ctx context.Context, st *stack.Stack) (*paths, error) {
	p := &paths{st: st, pool: map[string][]pooled{}, start: map[bool]*sfn.StartExecutionInput{}}
	p.machine = fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:BenchNoop", stack.Region, stack.AccountID)
	if err := st.SFN.AddStateMachine(sfnlocal.StateMachine{ARN: p.machine, Definition: []byte(noopDefinition)}); err != nil {
		return nil, fmt.Errorf("add the no-op workflow: %w", err)
	}
	cfg := clientConfig(st)
	p.db = dynamodb.NewFromConfig(cfg)
	var err error
	if p.led, err = ledger.New(p.db, ledger.Config{LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"]}); err != nil {
		return nil, err
	}
	p.store = reservation.NewStore(p.db, st.Tables["IdempotencyTable"])
	for c := range maxClients {
		if _, err := p.led.OpenAccount(ctx, source(c), scope, "EUR", 1<<50); err != nil {
			return nil, fmt.Errorf("open accounts: %w", err)
		}
	}
	if _, err := p.led.OpenAccount(ctx, "bench-dst", "iam:arn:aws:iam::123456789012:user/payee", "EUR", 0); err != nil {
		return nil, fmt.Errorf("open accounts: %w", err)
	}
	for _, ownership := range []bool{true, false} {
		ours, err := p.ours(ctx, ownership)
		if err != nil {
			return nil, err
		}
		raw, err := p.raw(ctx, ownership)
		if err != nil {
			return nil, err
		}
		base, err := p.baseline(ctx, ownership)
		if err != nil {
			return nil, err
		}
		p.impls = append(p.impls, ours, base, raw)
	}
	return p, nil
}

func source(client int) string { return fmt.Sprintf("bench-src-%02d", client%maxClients) }

func request(key string, client int) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		Resource: "/transfers", Path: "/transfers", HTTPMethod: "POST",
		Headers: map[string]string{"Idempotency-Key": key, "Content-Type": "application/json"},
		Body:    fmt.Sprintf(`{"sourceAccountId":%q,"destinationAccountId":"bench-dst","amount":1,"currency":"EUR","reference":"benchmark"}`, source(client)),
		RequestContext: events.APIGatewayProxyRequestContext{
			Path:     "/transfers",
			Identity: events.APIGatewayRequestIdentity{UserArn: caller},
		},
	}
}

type handler interface {
	Handle(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)
}

// expect sends req to h and checks the answer's status.
func expect(ctx context.Context, h handler, req events.APIGatewayProxyRequest, status int) error {
	resp, err := h.Handle(ctx, req)
	if err != nil {
		return err
	}
	if resp.StatusCode != status {
		return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, status, resp.Body)
	}
	return nil
}

// cursorKey signs the measured orchestrators' page cursors.
var cursorKey = rand.Text() + rand.Text()

func env(st *stack.Stack, machine string, ownership bool) app.Env {
	vars := map[string]string{
		"IDEMPOTENCY_TABLE": st.Tables["IdempotencyTable"],
		"LEDGER_TABLE":      st.Tables["LedgerTable"],
		"STATE_MACHINE_ARN": machine,
		"ACCOUNT_OWNERSHIP": map[bool]string{true: "enforce", false: "off"}[ownership],
		"CURSOR_KEY":        cursorKey,
	}
	return func(k string) string { return vars[k] }
}

// orchestrator builds the project's API handler on clients that count
// their calls into c, and pass through the extra API options.
func (p *paths) orchestrator(cfg aws.Config, ownership bool) (handler, error) {
	// The handler logs as deployed: JSON lines, here written nowhere.
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	return app.NewOrchestrator(env(p.st, p.machine, ownership), dynamodb.NewFromConfig(cfg), sfn.NewFromConfig(cfg), log)
}

func (p *paths) ours(ctx context.Context, ownership bool) (*impl, error) {
	c := &calls{ownerTable: p.st.Tables["LedgerTable"]}
	cfg := clientConfig(p.st, c.add)
	h, err := p.orchestrator(cfg, ownership)
	if err != nil {
		return nil, err
	}
	if err := p.settle(ctx, Ours, h); err != nil {
		return nil, err
	}
	return &impl{name: Ours, ownership: ownership, calls: c, budget: map[string]int{New: 2, Duplicate: 1},
		op: p.requests(h, Ours, ownership)}, nil
}

// conventional builds the baseline on cfg's clients.
func (p *paths) conventional(cfg aws.Config, ownership bool) (*conventional, error) {
	db := dynamodb.NewFromConfig(cfg)
	led, err := ledger.New(db, ledger.Config{LedgerTable: p.st.Tables["LedgerTable"], IdempotencyTable: p.st.Tables["IdempotencyTable"]})
	if err != nil {
		return nil, err
	}
	return &conventional{db: db, exec: sfn.NewFromConfig(cfg), accounts: led, table: p.st.Tables["IdempotencyTable"],
		machine: p.machine, maxAmount: 100000000, ownership: ownership}, nil
}

func (p *paths) baseline(ctx context.Context, ownership bool) (*impl, error) {
	c := &calls{}
	cfg := clientConfig(p.st, c.add)
	h, err := p.conventional(cfg, ownership)
	if err != nil {
		return nil, err
	}
	if err := p.settle(ctx, Baseline, h); err != nil {
		return nil, err
	}
	extra := 0
	if ownership {
		extra = 1
	}
	return &impl{name: Baseline, ownership: ownership, calls: c, budget: map[string]int{New: 3 + extra, Duplicate: 2 + extra},
		op: p.requests(h, Baseline, ownership)}, nil
}

// requests are the two request kinds sent to h: a new key each time, and
// the settled keys of family's pool in turn.
func (p *paths) requests(h handler, family string, ownership bool) map[string]Op {
	prefix := fmt.Sprintf("%s-%t-", family, ownership)
	pool := p.pool[family]
	return map[string]Op{
		New: func(ctx context.Context, client, _ int) error {
			n := p.keys.Add(1)
			return expect(ctx, h, request(fmt.Sprintf("%snew-%d", prefix, n), client), http.StatusAccepted)
		},
		Duplicate: func(ctx context.Context, client, seq int) error {
			d := pool[seq%len(pool)]
			return expect(ctx, h, request(d.key, d.client), http.StatusOK)
		},
	}
}

// settle creates the pool of keys family's duplicates are sent for, once
// per family: each key's transfer accepted by h, then its record
// completed with a stored response, as the workflow leaves it.
func (p *paths) settle(ctx context.Context, family string, h handler) error {
	if _, ok := p.pool[family]; ok {
		return nil
	}
	for i := range duplicates {
		d := pooled{key: fmt.Sprintf("%s-settled-%d", family, i), client: i}
		if err := expect(ctx, h, request(d.key, d.client), http.StatusAccepted); err != nil {
			return fmt.Errorf("%s: settle %s: %w", family, d.key, err)
		}
		rec, err := p.store.Get(ctx, scope, d.key)
		if err != nil {
			return err
		}
		response := fmt.Sprintf(`{"transferId":%q,"status":"COMPLETED","sourceAccountId":%q,"destinationAccountId":"bench-dst","amount":1,"currency":"EUR","reference":"benchmark","createdAt":%q}`,
			rec.ResourceID, source(d.client), rec.CreatedAt)
		if err := setStatus(ctx, p.db, p.st.Tables["IdempotencyTable"], rec.Key, reservation.StatusCompleted, response); err != nil {
			return err
		}
		p.pool[family] = append(p.pool[family], d)
	}
	return nil
}

// raw is the database alone: the very call the project's reservation
// makes (a PutItem), captured from
// the orchestrator and sent again with a plain client, for a new key and
// for a settled one.
func (p *paths) raw(ctx context.Context, ownership bool) (*impl, error) {
	cp := &capture{}
	cfg := clientConfig(p.st, cp.add)
	h, err := p.orchestrator(cfg, ownership)
	if err != nil {
		return nil, err
	}
	probe := fmt.Sprintf("raw-probe-%t", ownership)
	if err := expect(ctx, h, request(probe, 0), http.StatusAccepted); err != nil {
		return nil, fmt.Errorf("raw: capture the reservation: %w", err)
	}
	newIn := cp.take()
	start, ok := newIn["StartExecution"].(*sfn.StartExecutionInput)
	if !ok {
		return nil, fmt.Errorf("raw: a new key's request made no StartExecution: %v", newIn)
	}
	p.start[ownership] = start
	d := p.pool[Ours][0]
	if err := expect(ctx, h, request(d.key, d.client), http.StatusOK); err != nil {
		return nil, fmt.Errorf("raw: capture a duplicate's reservation: %w", err)
	}
	dupIn := cp.take()
	probeRec, err := p.store.Get(ctx, scope, probe)
	if err != nil {
		return nil, err
	}
	dupKey := idempotency.RecordKey(scope, d.key)
	c := &calls{}
	plain := clientConfig(p.st, c.add)
	pool := p.pool[Ours]
	prefix := fmt.Sprintf("raw-%t-", ownership)
	im := &impl{name: Raw, ownership: ownership, calls: c, budget: map[string]int{New: 1, Duplicate: 1}}
	ops, err := p.rawOps(ownership, newIn, dupIn, probeRec, dupKey, pool, prefix)
	if err != nil {
		return nil, err
	}
	im.op = ops(dynamodb.NewFromConfig(plain))
	im.opsOn = ops
	return im, nil
}

// rawOps returns the raw calls' requests on a client of the caller's:
// the reservation's PutItem, which is the same call whatever the
// ownership setting (with ownership enforced the orchestrator checks the
// owner beside it, not in it).
func (p *paths) rawOps(ownership bool, newIn, dupIn map[string]any, probeRec reservation.Record, dupKey string, pool []pooled, prefix string) (func(*dynamodb.Client) map[string]Op, error) {
	newPut, ok1 := newIn["PutItem"].(*dynamodb.PutItemInput)
	dupPut, ok2 := dupIn["PutItem"].(*dynamodb.PutItemInput)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("raw: the reservation (ownership %t) is not one PutItem: %v, %v", ownership, newIn, dupIn)
	}
	return func(db *dynamodb.Client) map[string]Op {
		return map[string]Op{
			New: func(ctx context.Context, client, _ int) error {
				n := p.keys.Add(1)
				in := *newPut
				in.Item = rewrite(newPut.Item, map[string]string{
					probeRec.Key:        idempotency.RecordKey(scope, fmt.Sprintf("%snew-%d", prefix, n)),
					probeRec.ResourceID: fmt.Sprintf("%s%d", prefix, n),
					source(0):           source(client),
				})
				_, err := db.PutItem(ctx, &in)
				return err
			},
			Duplicate: func(ctx context.Context, client, seq int) error {
				d := pool[seq%len(pool)]
				in := *dupPut
				in.Item = rewrite(dupPut.Item, map[string]string{dupKey: idempotency.RecordKey(scope, d.key), source(0): source(d.client)})
				_, err := db.PutItem(ctx, &in)
				var ccf *types.ConditionalCheckFailedException
				if !errors.As(err, &ccf) || len(ccf.Item) == 0 {
					return fmt.Errorf("raw duplicate: want a failed condition returning the item, got %v", err)
				}
				return nil
			},
		}
	}, nil
}
