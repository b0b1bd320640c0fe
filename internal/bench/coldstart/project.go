package coldstart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/worker"
)

// ProjectConfig is where the project's functions find their resources,
// such as those of a running local stack (internal/local/stack): its
// tables, state machine and endpoints.
type ProjectConfig struct {
	// ModuleRoot is the project's root; "" looks for go.mod from the
	// working directory up. Template is the SAM template; "" is
	// template.yaml in ModuleRoot.
	ModuleRoot string
	Template   string
	// Parameters override the template's parameter defaults.
	Parameters map[string]string

	IdempotencyTable, LedgerTable string
	StateMachineARN               string
	// DynamoDBEndpoint and SFNEndpoint are the services' endpoints (on
	// 127.0.0.1 for a local stack), set as AWS_ENDPOINT_URL_DYNAMODB and
	// AWS_ENDPOINT_URL_SFN.
	DynamoDBEndpoint, SFNEndpoint string
	// Region defaults to us-east-1; AccessKeyID and SecretAccessKey to
	// "local". The functions get them as Lambda gives its role's
	// credentials, and the events are prepared with them.
	Region                       string
	AccessKeyID, SecretAccessKey string
}

// caller is the IAM user the orchestrator's requests come from; its
// scope owns the accounts every event moves money between.
const caller = "arn:aws:iam::" + accountID + ":user/coldstart"

// ProjectFunctions returns the template's functions (orchestrator,
// debit, credit, refund, reaper), each with the environment the template
// gives it, pointed at cfg's tables, state machine and endpoints, and a
// first invoke that does the function's real work:
//
//   - orchestrator: POST /transfers with a new Idempotency-Key between two
//     accounts of the caller (a reservation and a StartExecution); its
//     After checks the 202 and waits for the workflow execution to end,
//     so that it does not run during the next start;
//   - debit: the debit of a transfer whose record is IN_PROGRESS, as the
//     workflow hands it;
//   - credit and refund: the credit or refund of a transfer whose debit
//     is posted;
//   - reaper: the scheduled sweep.
//
// Each event is prepared in DynamoDB before its start (outside the
// measured times); the accounts are opened on the first.
func ProjectFunctions(cfg ProjectConfig) ([]Function, error) {
	for name, v := range map[string]string{
		"IdempotencyTable": cfg.IdempotencyTable, "LedgerTable": cfg.LedgerTable, "StateMachineARN": cfg.StateMachineARN,
		"DynamoDBEndpoint": cfg.DynamoDBEndpoint, "SFNEndpoint": cfg.SFNEndpoint,
	} {
		if v == "" {
			return nil, fmt.Errorf("coldstart: ProjectConfig.%s is required", name)
		}
	}
	if cfg.Region == "" {
		cfg.Region = defaultRegion
	}
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID = "local"
	}
	if cfg.SecretAccessKey == "" {
		cfg.SecretAccessKey = "local"
	}
	if cfg.Template == "" {
		root := cfg.ModuleRoot
		if root == "" {
			var err error
			if root, err = moduleRoot(); err != nil {
				return nil, err
			}
		}
		cfg.Template = filepath.Join(root, "template.yaml")
	}
	tpl, err := cfn.Load(cfg.Template)
	if err != nil {
		return nil, fmt.Errorf("coldstart: %w", err)
	}
	tfns, err := tpl.Functions(cfn.Env{Region: cfg.Region, AccountID: accountID, Parameters: cfg.Parameters})
	if err != nil {
		return nil, fmt.Errorf("coldstart: %w", err)
	}
	p := newProject(cfg)
	var fns []Function
	for _, tf := range tfns {
		code := strings.TrimSuffix(filepath.ToSlash(tf.CodeUri), "/")
		f := Function{Name: path.Base(code), Package: "./" + path.Clean(code), Env: map[string]string{}}
		for k, v := range tf.Environment {
			f.Env[k] = v
		}
		for k, v := range map[string]string{
			"IDEMPOTENCY_TABLE":               cfg.IdempotencyTable,
			"LEDGER_TABLE":                    cfg.LedgerTable,
			"AWS_ENDPOINT_URL_DYNAMODB":       cfg.DynamoDBEndpoint,
			"AWS_ENDPOINT_URL_SFN":            cfg.SFNEndpoint,
			"AWS_REGION":                      cfg.Region,
			"AWS_DEFAULT_REGION":              cfg.Region,
			"AWS_ACCESS_KEY_ID":               cfg.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY":           cfg.SecretAccessKey,
			"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(tf.MemorySize),
		} {
			f.Env[k] = v
		}
		if _, ok := f.Env["STATE_MACHINE_ARN"]; ok {
			f.Env["STATE_MACHINE_ARN"] = cfg.StateMachineARN
		}
		switch f.Name {
		case "orchestrator":
			f.Event, f.After = p.transferRequest, p.transferAccepted
		case "debit":
			f.Event, f.After = p.task(ledger.Debit), p.legPosted
		case "credit":
			f.Event, f.After = p.task(ledger.Credit), p.legPosted
		case "refund":
			f.Event, f.After = p.task(ledger.Refund), p.legPosted
		case "reaper":
			f.Event, f.After = p.sweep, p.succeeded
		case "pretraffic":
			// CodeDeploy's hook runs once per deployment, on no request's
			// path: its cold start is no target.
			continue
		default:
			return nil, fmt.Errorf("coldstart: no first event for function %s (%s)", tf.LogicalID, tf.CodeUri)
		}
		fns = append(fns, f)
	}
	return fns, nil
}

// project prepares the functions' events: it opens the accounts once and
// puts each worker's transfer where the workflow would have it.
type project struct {
	cfg      ProjectConfig
	run      string // distinguishes this run's keys, transfers and accounts
	src, dst string
	scope    string

	once   sync.Once
	err    error
	db     *dynamodb.Client
	states *sfn.Client
	ledger *ledger.Ledger
	store  *reservation.Store
}

func newProject(cfg ProjectConfig) *project {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	return &project{
		cfg:   cfg,
		run:   run,
		src:   "coldstart-" + run + "-src",
		dst:   "coldstart-" + run + "-dst",
		scope: api.IAMScope(caller),
	}
}

// open builds the clients and opens the two accounts, once.
func (p *project) open(ctx context.Context) error {
	p.once.Do(func() {
		awsCfg := aws.Config{
			Region:      p.cfg.Region,
			Credentials: credentials.NewStaticCredentialsProvider(p.cfg.AccessKeyID, p.cfg.SecretAccessKey, ""),
		}
		p.db = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.cfg.DynamoDBEndpoint) })
		p.states = sfn.NewFromConfig(awsCfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(p.cfg.SFNEndpoint) })
		p.store = reservation.NewStore(p.db, p.cfg.IdempotencyTable)
		if p.ledger, p.err = ledger.New(p.db, ledger.Config{LedgerTable: p.cfg.LedgerTable, IdempotencyTable: p.cfg.IdempotencyTable}); p.err != nil {
			return
		}
		for _, id := range []string{p.src, p.dst} {
			if _, err := p.ledger.OpenAccount(ctx, id, p.scope, "EUR", 1<<40); err != nil {
				p.err = fmt.Errorf("open account %s: %w", id, err)
				return
			}
		}
	})
	return p.err
}

// transferRequest is API Gateway's event for POST /transfers of one unit
// with a new key, signed by caller.
func (p *project) transferRequest(ctx context.Context, n int) ([]byte, error) {
	if err := p.open(ctx); err != nil {
		return nil, err
	}
	req := events.APIGatewayProxyRequest{
		Resource: "/transfers", Path: "/transfers", HTTPMethod: "POST",
		Headers: map[string]string{
			"Content-Type":    "application/json",
			"Idempotency-Key": fmt.Sprintf("coldstart-%s-%d", p.run, n),
		},
		Body: fmt.Sprintf(`{"sourceAccountId":%q,"destinationAccountId":%q,"amount":1,"currency":"EUR"}`, p.src, p.dst),
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: accountID, Stage: "v1", Path: "/v1/transfers", HTTPMethod: "POST",
			RequestID: randomHex(16),
			Identity:  events.APIGatewayRequestIdentity{UserArn: caller, AccountID: accountID, Caller: "AIDACOLDSTART"},
		},
	}
	return json.Marshal(req)
}

// transferAccepted checks that the orchestrator accepted the transfer
// (202) and waits until its workflow execution has ended.
func (p *project) transferAccepted(ctx context.Context, n int, payload []byte, failed bool) error {
	if failed {
		return fmt.Errorf("orchestrator failed: %s", payload)
	}
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(payload, &resp); err != nil {
		return fmt.Errorf("decode orchestrator response: %w", err)
	}
	if resp.StatusCode != 202 {
		return fmt.Errorf("orchestrator answered %d, want 202: %s", resp.StatusCode, resp.Body)
	}
	var tr struct {
		TransferID string `json:"transferId"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &tr); err != nil || tr.TransferID == "" {
		return fmt.Errorf("no transferId in the orchestrator's answer %s", resp.Body)
	}
	execution := strings.Replace(p.cfg.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + tr.TransferID
	return p.waitExecution(ctx, execution)
}

// waitExecution polls the execution until it is no longer running.
func (p *project) waitExecution(ctx context.Context, arn string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		out, err := p.states.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			return fmt.Errorf("wait for execution %s: %w", arn, err)
		}
		if out.Status != sfntypes.ExecutionStatusRunning {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for execution %s: %w", arn, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// task prepares start n's transfer for a leg of kind, as the workflow
// has it when it invokes that leg, and returns the leg's payload: an
// IN_PROGRESS record, and for a credit or refund the posted debit.
func (p *project) task(kind ledger.Kind) func(ctx context.Context, n int) ([]byte, error) {
	return func(ctx context.Context, n int) ([]byte, error) {
		if err := p.open(ctx); err != nil {
			return nil, err
		}
		leg := strings.ToLower(string(kind))
		key := fmt.Sprintf("coldstart-%s-%s-%d", p.run, leg, n)
		t := worker.Task{
			TransferID:           fmt.Sprintf("coldstart-%s-%s-%d", p.run, leg, n),
			SourceAccountID:      p.src,
			DestinationAccountID: p.dst,
			Amount:               1,
			Currency:             "EUR",
			RetentionSeconds:     86400,
		}
		request := fmt.Appendf(nil, `{"sourceAccountId":%q,"destinationAccountId":%q,"amount":1,"currency":"EUR","reference":""}`, p.src, p.dst)
		rec, created, err := p.store.Reserve(ctx, reservation.Reservation{
			Scope: p.scope, Key: key, Fingerprint: idempotency.Fingerprint(request),
			ResourceID: t.TransferID, Request: request,
			Attributes: ledger.RecordAttributes(t.SourceAccountID, t.DestinationAccountID, t.Amount, t.Currency),
		})
		if err != nil {
			return nil, fmt.Errorf("reserve %s: %w", key, err)
		}
		if !created {
			return nil, fmt.Errorf("reserve %s: the key is taken", key)
		}
		t.RecordKey = rec.Key
		if err := p.markInProgress(ctx, rec.Key); err != nil {
			return nil, err
		}
		if kind != ledger.Refund {
			// The debit and the credit answer for the transfer's caller.
			t.Scope = p.scope
		}
		if kind != ledger.Debit {
			if _, err := p.ledger.Post(ctx, ledger.Leg{
				Kind: ledger.Debit, TransferID: t.TransferID, RecordKey: t.RecordKey,
				AccountID: t.SourceAccountID, CounterpartyAccountID: t.DestinationAccountID,
				Amount: t.Amount, Currency: t.Currency, Owner: p.scope,
			}); err != nil {
				return nil, fmt.Errorf("post the debit of %s: %w", t.TransferID, err)
			}
		}
		return json.Marshal(t)
	}
}

// markInProgress does what the workflow's MarkInProgress state does to a
// reserved record.
func (p *project) markInProgress(ctx context.Context, recordKey string) error {
	inProgress := expression.Value(string(reservation.StatusInProgress))
	update := expression.Set(expression.Name(reservation.AttrStatus), inProgress).
		Set(expression.Name(reservation.AttrPending), inProgress)
	expr, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return fmt.Errorf("mark %s in progress: %w", recordKey, err)
	}
	if _, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.cfg.IdempotencyTable),
		Key:                       reservation.KeyOf(recordKey),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}); err != nil {
		return fmt.Errorf("mark %s in progress: %w", recordKey, err)
	}
	return nil
}

// legPosted checks that a leg answered a posted entry, not an error or
// a rejection.
func (p *project) legPosted(_ context.Context, _ int, payload []byte, failed bool) error {
	if failed {
		return fmt.Errorf("leg failed: %s", payload)
	}
	var res worker.Result
	if err := json.Unmarshal(payload, &res); err != nil {
		return fmt.Errorf("decode leg result %s: %w", payload, err)
	}
	if res.Rejected != nil || res.Entry == nil {
		return fmt.Errorf("leg posted nothing: %s", payload)
	}
	return nil
}

// sweep is the event of the reaper's sweep schedule.
func (p *project) sweep(context.Context, int) ([]byte, error) {
	return json.Marshal(map[string]any{
		"version": "0", "id": randomHex(16), "detail-type": reaper.DetailTypeScheduled, "source": reaper.SourceScheduled,
		"account": accountID, "time": time.Now().UTC().Format(time.RFC3339), "region": p.cfg.Region,
		"resources": []string{"arn:aws:events:" + p.cfg.Region + ":" + accountID + ":rule/ReaperFunctionSweep"},
		"detail":    map[string]any{},
	})
}

// succeeded checks that the invoke did not fail.
func (p *project) succeeded(_ context.Context, _ int, payload []byte, failed bool) error {
	if failed {
		return errors.New("invoke failed: " + string(payload))
	}
	return nil
}
