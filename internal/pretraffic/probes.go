package pretraffic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/transfer"
	"github.com/exactlyonce/transfers/internal/worker"
)

// The probes' synthetic transfer and caller. No account, record or entry
// of the stack has these ids: the transfer ids of the API are UUIDs, its
// record keys hex digests, and the probe role owns no account.
const (
	// TransferIDPrefix, followed by the deployment id, is the probes'
	// transfer id (and, for the reaper, execution name).
	TransferIDPrefix = "pretraffic-"
	// RecordKeyPrefix, followed by the deployment id, is the probes'
	// idempotency record key, which names no record.
	RecordKeyPrefix = "pretraffic-record-"
	// SourceAccount and DestinationAccount are the probe transfer's
	// accounts.
	SourceAccount      = "pretraffic-none-source"
	DestinationAccount = "pretraffic-none-destination"
	// Amount (minor units) and Currency of the probe transfer.
	Amount   = 1
	Currency = "EUR"
	// CallerRole and CallerSession name the orchestrator probe's caller,
	// an assumed-role session of the stack's account
	// (arn:PARTITION:sts::ACCOUNT:assumed-role/pretraffic/probe): its
	// caller scope is the role's (api.IAMScope), which owns nothing.
	CallerRole    = "pretraffic"
	CallerSession = "probe"
	// userAgent is the probe requests' User-Agent.
	userAgent = "codedeploy-pretraffic-hook"
)

// TransferID is the probes' transfer id in a deployment.
func TransferID(deploymentID string) string { return TransferIDPrefix + deploymentID }

// RecordKey is the probes' record key in a deployment.
func RecordKey(deploymentID string) string { return RecordKeyPrefix + deploymentID }

// stateMachine is where the stack runs: the partition, region and
// account of its state machine's ARN.
type stateMachine struct {
	arn, partition, region, account string
}

// parseStateMachineARN reads arn:PARTITION:states:REGION:ACCOUNT:stateMachine:NAME.
func parseStateMachineARN(arn string) (stateMachine, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 7 || parts[0] != "arn" || parts[1] == "" || parts[2] != "states" || parts[3] == "" ||
		parts[4] == "" || parts[5] != "stateMachine" || parts[6] == "" {
		return stateMachine{}, fmt.Errorf("must be a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME), got %q", arn)
	}
	return stateMachine{arn: arn, partition: parts[1], region: parts[3], account: parts[4]}, nil
}

// callerARN is the orchestrator probe's caller.
func (s stateMachine) callerARN() string {
	return "arn:" + s.partition + ":sts::" + s.account + ":assumed-role/" + CallerRole + "/" + CallerSession
}

// executionARN is the ARN of the execution name of the state machine.
func (s stateMachine) executionARN(name string) string {
	return strings.Replace(s.arn, ":stateMachine:", ":execution:", 1) + ":" + name
}

// createdAt is the probe transfer's creation time as the API writes it.
func createdAt(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// orchestratorEvent is GET /transfers?limit=1 as API Gateway's REST proxy
// integration sends it for a SigV4-signed request of the probe's caller.
func (h *Hook) orchestratorEvent(ev Event) ([]byte, error) {
	now := h.now()
	const path = "/transfers"
	headers := map[string]string{"Accept": "application/json", "User-Agent": userAgent}
	multi := map[string][]string{"Accept": {"application/json"}, "User-Agent": {userAgent}}
	req := events.APIGatewayProxyRequest{
		Resource:                        path,
		Path:                            path,
		HTTPMethod:                      http.MethodGet,
		Headers:                         headers,
		MultiValueHeaders:               multi,
		QueryStringParameters:           map[string]string{"limit": "1"},
		MultiValueQueryStringParameters: map[string][]string{"limit": {"1"}},
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID:        h.where.account,
			ResourcePath:     path,
			HTTPMethod:       http.MethodGet,
			Path:             path,
			Protocol:         "HTTP/1.1",
			Stage:            "pretraffic",
			APIID:            "pretraffic",
			RequestID:        TransferID(ev.DeploymentID),
			RequestTime:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			RequestTimeEpoch: now.UnixMilli(),
			Identity: events.APIGatewayRequestIdentity{
				AccountID: h.where.account,
				Caller:    CallerRole + ":" + CallerSession,
				User:      CallerRole + ":" + CallerSession,
				UserArn:   h.where.callerARN(),
				UserAgent: userAgent,
				SourceIP:  "127.0.0.1",
			},
		},
	}
	return json.Marshal(req)
}

// judgeOrchestrator passes a 200 answer whose body is a JSON object with a
// "transfers" array.
func judgeOrchestrator(out *lambda.InvokeOutput) error {
	if fe := functionError(out); fe != nil {
		return fe
	}
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(out.Payload, &resp); err != nil || resp.StatusCode == 0 {
		return fmt.Errorf("%w: not an API Gateway proxy answer: %s", ErrUnexpectedAnswer, shown(out.Payload))
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: body is not base64: %v", ErrUnexpectedAnswer, err)
		}
		body = b
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{StatusCode: resp.StatusCode, Body: shown(body)}
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal(body, &page); err != nil {
		return fmt.Errorf("%w: status 200, body is not a JSON object: %s", ErrUnexpectedAnswer, shown(body))
	}
	if list := bytes.TrimSpace(page["transfers"]); len(list) == 0 || list[0] != '[' {
		return fmt.Errorf("%w: status 200, body has no \"transfers\" array: %s", ErrUnexpectedAnswer, shown(body))
	}
	return nil
}

// legTask is the workflow's task of a leg (the Parameters.Payload of the
// state machine's Debit, Credit or Refund state) for the probe transfer,
// which has no idempotency record.
func (h *Hook) legTask(leg string) func(Event) ([]byte, error) {
	return func(ev Event) ([]byte, error) {
		task := worker.Task{
			TransferID:           TransferID(ev.DeploymentID),
			RecordKey:            RecordKey(ev.DeploymentID),
			CreatedAt:            createdAt(h.now()),
			SourceAccountID:      SourceAccount,
			DestinationAccountID: DestinationAccount,
			Amount:               Amount,
			Currency:             Currency,
			Attempt:              0,
		}
		if leg != ProbeRefund {
			// The workflow sends the caller scope to the DEBIT and the
			// CREDIT only.
			task.Scope = api.IAMScope(h.where.callerARN())
		}
		return json.Marshal(task)
	}
}

// judgeLeg passes a leg's refusal with TransferFenced; an answer without
// a function error is a posted leg.
func judgeLeg(out *lambda.InvokeOutput) error {
	fe := functionError(out)
	switch {
	case fe == nil:
		return fmt.Errorf("%w: answer %s", ErrLegAccepted, shown(out.Payload))
	case fe.Type != worker.TypeTransferFenced:
		return fmt.Errorf("want errorType %s: %w", worker.TypeTransferFenced, fe)
	}
	return nil
}

// statusChangeDetail is the detail of the EventBridge event of a Step
// Functions execution status change (the envelope is aws-lambda-go's
// events.CloudWatchEvent).
type statusChangeDetail struct {
	ExecutionArn    string          `json:"executionArn"`
	StateMachineArn string          `json:"stateMachineArn"`
	Name            string          `json:"name"`
	Status          string          `json:"status"`
	StartDate       int64           `json:"startDate"`
	StopDate        int64           `json:"stopDate"`
	Input           string          `json:"input"`
	InputDetails    map[string]bool `json:"inputDetails"`
	Output          *string         `json:"output"`
	OutputDetails   map[string]bool `json:"outputDetails"`
	Error           string          `json:"error"`
	Cause           string          `json:"cause"`
}

// reaperEvent is the status change (FAILED) of the probe transfer's
// execution: the reaper reads the transfer's record, finds none, and
// answers without writing (reaper.OutcomeNotFound).
func (h *Hook) reaperEvent(ev Event) ([]byte, error) {
	now := h.now()
	id := TransferID(ev.DeploymentID)
	request, err := json.Marshal(map[string]any{
		"sourceAccountId": SourceAccount, "destinationAccountId": DestinationAccount,
		"amount": Amount, "currency": Currency, "reference": "pre-traffic probe of deployment " + ev.DeploymentID,
	})
	if err != nil {
		return nil, err
	}
	input, err := json.Marshal(transfer.WorkflowInput{
		RecordKey:  RecordKey(ev.DeploymentID),
		TransferID: id,
		CreatedAt:  createdAt(now),
		Request:    request,
		Scope:      api.IAMScope(h.where.callerARN()),
		Attempt:    0,
	})
	if err != nil {
		return nil, err
	}
	name := transfer.ExecutionName(id, 0)
	execARN := h.where.executionARN(name)
	detail, err := json.Marshal(statusChangeDetail{
		ExecutionArn:    execARN,
		StateMachineArn: h.where.arn,
		Name:            name,
		Status:          "FAILED",
		StartDate:       now.UnixMilli(),
		StopDate:        now.UnixMilli(),
		Input:           string(input),
		InputDetails:    map[string]bool{"included": true},
		Error:           "PreTraffic.Probe",
		Cause:           "pre-traffic probe of deployment " + ev.DeploymentID + ": no such transfer",
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(events.CloudWatchEvent{
		Version:    "0",
		ID:         id,
		DetailType: reaper.DetailTypeStatusChange,
		Source:     "aws.states",
		AccountID:  h.where.account,
		Time:       now.UTC().Truncate(time.Second),
		Region:     h.where.region,
		Resources:  []string{execARN},
		Detail:     detail,
	})
}

// judgeReaper passes any answer without a function error.
func judgeReaper(out *lambda.InvokeOutput) error {
	if fe := functionError(out); fe != nil {
		return fe
	}
	return nil
}
