package pretraffic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/pretraffic"
	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/worker"
)

// probePayloads runs the hook against healthy versions and returns what
// each version was invoked with.
func probePayloads(t *testing.T) map[string][]byte {
	t.Helper()
	h, fl := newHook(t, healthy(), &fakeCodeDeploy{}, nil)
	if res, err := h.Handle(context.Background(), testEvent); err != nil || res.Status != pretraffic.StatusSucceeded {
		t.Fatalf("%+v, %v", res, err)
	}
	out := map[string][]byte{}
	for probe, fn := range probeFunctions {
		out[probe] = fl.payload(t, fn)
	}
	return out
}

// TestOrchestratorEvent: the orchestrator is asked GET /transfers?limit=1
// by an IAM caller whose scope is the probe role's.
func TestOrchestratorEvent(t *testing.T) {
	var req events.APIGatewayProxyRequest
	if err := json.Unmarshal(probePayloads(t)[pretraffic.ProbeOrchestrator], &req); err != nil {
		t.Fatal(err)
	}
	if req.HTTPMethod != "GET" || req.Resource != "/transfers" || req.Path != "/transfers" ||
		req.QueryStringParameters["limit"] != "1" || len(req.MultiValueQueryStringParameters["limit"]) != 1 {
		t.Errorf("request %s %s (%s) %v", req.HTTPMethod, req.Path, req.Resource, req.QueryStringParameters)
	}
	id := req.RequestContext.Identity
	const wantARN = "arn:aws:sts::123456789012:assumed-role/pretraffic/probe"
	if id.UserArn != wantARN || id.Caller == "" || id.AccountID != "123456789012" || id.CognitoIdentityID != "" {
		t.Errorf("identity %+v", id)
	}
	if req.RequestContext.Authorizer != nil {
		t.Errorf("authorizer %v: the scope would come from it", req.RequestContext.Authorizer)
	}
	if got := api.IAMScope(id.UserArn); got != "iam:arn:aws:iam::123456789012:role/pretraffic" {
		t.Errorf("caller scope %s", got)
	}
}

// poster is a ledger that refuses every leg as the DynamoDB fence of a
// missing record does, and keeps the legs.
type poster struct{ legs []ledger.Leg }

func (p *poster) Post(_ context.Context, leg ledger.Leg) (ledger.Entry, error) {
	p.legs = append(p.legs, leg)
	if err := leg.Validate(); err != nil {
		return ledger.Entry{}, err
	}
	return ledger.Entry{}, fmt.Errorf("%s %s: %w: idempotency record not found", leg.Kind, leg.TransferID, ledger.ErrFenced)
}

func (p *poster) Void(context.Context, ledger.Leg, string, string) (ledger.VoidResult, error) {
	return ledger.VoidResult{}, errors.New("a fenced leg is never voided")
}

// TestLegTasks: each leg's task is one the worker accepts as a task (with
// ownership enforced), so that only the fence refuses it.
func TestLegTasks(t *testing.T) {
	payloads := probePayloads(t)
	for _, tt := range []struct {
		probe string
		kind  ledger.Kind
	}{
		{pretraffic.ProbeDebit, ledger.Debit},
		{pretraffic.ProbeCredit, ledger.Credit},
		{pretraffic.ProbeRefund, ledger.Refund},
	} {
		t.Run(tt.probe, func(t *testing.T) {
			p := &poster{}
			w, err := worker.New(tt.kind, p, slog.New(slog.DiscardHandler), worker.EnforceOwnership())
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Invoke(context.Background(), payloads[tt.probe])
			var ire messages.InvokeResponse_Error
			if !errors.As(err, &ire) || ire.Type != worker.TypeTransferFenced {
				t.Fatalf("worker answered %v, want %s", err, worker.TypeTransferFenced)
			}
			if len(p.legs) != 1 {
				t.Fatalf("%d legs posted", len(p.legs))
			}
			leg := p.legs[0]
			if leg.TransferID != pretraffic.TransferID(testEvent.DeploymentID) || leg.RecordKey != pretraffic.RecordKey(testEvent.DeploymentID) ||
				leg.Amount != 1 || leg.Currency != "EUR" || leg.Attempt != 0 {
				t.Errorf("leg %+v", leg)
			}
			var task map[string]any
			if err := json.Unmarshal(payloads[tt.probe], &task); err != nil {
				t.Fatal(err)
			}
			// The fields of the state machine's Parameters.Payload.
			for _, k := range []string{"transferId", "recordKey", "createdAt", "sourceAccountId", "destinationAccountId", "amount", "currency", "attempt"} {
				if _, ok := task[k]; !ok {
					t.Errorf("task without %s: %v", k, task)
				}
			}
			if _, ok := task["scope"]; ok != (tt.kind != ledger.Refund) {
				t.Errorf("task scope %v: the workflow sends it to the DEBIT and the CREDIT only", task["scope"])
			}
		})
	}
}

// readOnlyDB answers GetItem with no item and fails the test on any write.
type readOnlyDB struct {
	t     *testing.T
	reads []string
}

func (d *readOnlyDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.reads = append(d.reads, aws.ToString(in.TableName))
	return &dynamodb.GetItemOutput{}, nil
}

func (d *readOnlyDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.t.Error("the reaper wrote a record")
	return nil, errors.New("no writes")
}

func (d *readOnlyDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.t.Error("the reaper swept")
	return nil, errors.New("no queries")
}

type noSFN struct{ t *testing.T }

func (s noSFN) DescribeExecution(context.Context, *sfn.DescribeExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	s.t.Error("the reaper described an execution")
	return nil, errors.New("no executions")
}

func (s noSFN) StartExecution(context.Context, *sfn.StartExecutionInput, ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	s.t.Error("the reaper started an execution")
	return nil, errors.New("no executions")
}

type noLedger struct{ t *testing.T }

func (l noLedger) TransferEntries(context.Context, string, string, string) (map[ledger.Kind]ledger.Entry, error) {
	l.t.Error("the reaper read the ledger")
	return nil, errors.New("no ledger")
}

func (l noLedger) Rejection(context.Context, string, string) (*ledger.VoidedError, error) {
	l.t.Error("the reaper read the ledger")
	return nil, errors.New("no ledger")
}

func (l noLedger) Post(context.Context, ledger.Leg) (ledger.Entry, error) {
	l.t.Error("the reaper posted a leg")
	return ledger.Entry{}, errors.New("no ledger")
}

// TestReaperEvent: the reaper takes the status change for one of the
// transfer state machine's, reads the transfer's record, finds none and
// does nothing else.
func TestReaperEvent(t *testing.T) {
	db := &readOnlyDB{t: t}
	var logs bytes.Buffer
	r, err := reaper.New(reaper.Config{IdempotencyTable: "idem", LedgerTable: "ledger", StateMachineARN: machineARN},
		db, noSFN{t}, noLedger{t}, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Handle(context.Background(), probePayloads(t)[pretraffic.ProbeReaper]); err != nil {
		t.Fatalf("reaper: %v", err)
	}
	if len(db.reads) != 1 || db.reads[0] != "idem" {
		t.Errorf("reads %v, want the idempotency record once", db.reads)
	}
	if !strings.Contains(logs.String(), string(reaper.OutcomeNotFound)) {
		t.Errorf("the reaper did not decide %s:\n%s", reaper.OutcomeNotFound, logs.String())
	}
	if strings.Contains(logs.String(), "another state machine") {
		t.Errorf("the event is not one of the transfer state machine's:\n%s", logs.String())
	}
}
