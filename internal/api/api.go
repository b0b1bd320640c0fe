// Package api is the HTTP edge of the transfers service: the orchestrator
// Lambda's handler for API Gateway REST (Lambda proxy, payload 1.0) events.
package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"golang.org/x/sync/singleflight"

	"github.com/exactlyonce/transfers/internal/cursor"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Records is the part of the idempotency store the API uses.
type Records interface {
	Reserve(ctx context.Context, r reservation.Reservation) (reservation.Record, bool, error)
	GetByRecordKey(ctx context.Context, recordKey string) (reservation.Record, error)
	FindByResourceID(ctx context.Context, scope, resourceID string) (reservation.Record, error)
	ListByScope(ctx context.Context, scope string, limit int, after *reservation.Position) ([]reservation.Record, *reservation.Position, error)
	FailReserved(ctx context.Context, recordKey, resourceID, response string) (reservation.Record, bool, error)
}

var _ Records = (*reservation.Store)(nil)

// Executions is the part of the Step Functions client the API uses.
type Executions interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
}

var _ Executions = (*sfn.Client)(nil)

// Config is the API's configuration.
type Config struct {
	StateMachineArn string
	// MaxAmount caps a transfer's amount in minor units.
	MaxAmount int64
	// EnforceOwnership (AccountOwnership=enforce): a transfer is accepted
	// only from the owner of its source account, checked early against
	// the account's owner (remembered for OwnerCacheAge, else read while
	// the key is reserved) and finally by the debit, in the transaction
	// that moves the money; an account is shown to its owner only. Off,
	// any caller may debit and read any account (trusted
	// service-to-service deployments).
	EnforceOwnership bool
	// OwnerCacheAge is how long the container remembers an account's
	// owner once read; zero or less reads it for every new key.
	OwnerCacheAge time.Duration
	// ScopeBySession (ScopeBySession=true): an assumed-role session is
	// its own caller scope (the session ARN) instead of its role's.
	ScopeBySession bool
	// Cursors seals and opens the lists' page cursors (CURSOR_KEY).
	Cursors *cursor.Sealer
}

// answerReserve is the time kept before the function's deadline to answer.
const answerReserve = 500 * time.Millisecond

// Handler serves the API.
type Handler struct {
	cfg        Config
	records    Records
	executions Executions
	accounts   Accounts
	newID      func() string
	log        *slog.Logger
	owners     *ownerCache
	ownerReads singleflight.Group
}

// ownerCacheSize is how many accounts' owners a container remembers.
const ownerCacheSize = 4096

// New returns the API handler.
func New(cfg Config, records Records, executions Executions, accounts Accounts, newID func() string, log *slog.Logger) *Handler {
	return &Handler{cfg: cfg, records: records, executions: executions, accounts: accounts, newID: newID, log: log,
		owners: newOwnerCache(cfg.OwnerCacheAge, ownerCacheSize, time.Now)}
}

// Handle serves one API Gateway request.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	if deadline, ok := ctx.Deadline(); ok {
		// Keep time to answer: a call still waiting when the function's
		// own timeout strikes would leave the client a 502, not a 503
		// it knows to retry.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-answerReserve))
		defer cancel()
	}
	instance := req.Path
	scope, ok := callerScope(req.RequestContext, h.cfg.ScopeBySession)
	if !ok {
		return problemResponse(problemFor(errNoCaller), instance, nil), nil
	}
	var resp events.APIGatewayProxyResponse
	switch route := req.HTTPMethod + " " + req.Resource; route {
	case "POST /transfers":
		resp = h.postTransfer(ctx, scope, req)
	case "GET /transfers/{transferId}":
		resp = h.getTransfer(ctx, scope, req)
	case "GET /accounts/{accountId}":
		resp = h.getAccount(ctx, scope, req)
	case "GET /transfers":
		resp = h.listTransfers(ctx, scope, req)
	case "GET /accounts/{accountId}/entries":
		resp = h.listEntries(ctx, scope, req)
	default:
		resp = problemResponse(newProblem(http.StatusNotFound, CodeNotFound, "No such route", route), instance, nil)
	}
	return resp, nil
}

// header returns the single value of a header, matched case-insensitively,
// and whether it was sent more than once with different values.
func header(req events.APIGatewayProxyRequest, name string) (value string, conflicting bool) {
	for k, vs := range req.MultiValueHeaders {
		if !strings.EqualFold(k, name) || len(vs) == 0 {
			continue
		}
		for _, v := range vs[1:] {
			if v != vs[0] {
				return "", true
			}
		}
		return vs[0], false
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v, false
		}
	}
	return "", false
}

// jsonBody reports whether the request's body may be read as JSON: its
// Content-Type is application/json (any parameters), or absent, which API
// Gateway also reads as application/json.
func jsonBody(req events.APIGatewayProxyRequest) bool {
	ct, conflicting := header(req, "Content-Type")
	if conflicting {
		return false
	}
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

func body(req events.APIGatewayProxyRequest) ([]byte, error) {
	if req.IsBase64Encoded {
		return base64.StdEncoding.DecodeString(req.Body)
	}
	return []byte(req.Body), nil
}

// basePath is the part of the public URL before the route, such as the
// stage ("/v1") when the API is called on its execute-api URL.
func basePath(req events.APIGatewayProxyRequest) string {
	if p, ok := strings.CutSuffix(req.RequestContext.Path, req.Path); ok {
		return strings.TrimSuffix(p, "/")
	}
	return ""
}

func jsonResponse(status int, v any, headers map[string]string) events.APIGatewayProxyResponse {
	var b []byte
	if t, ok := v.(transfer.Transfer); ok {
		// The answer of every POST: as json.Marshal writes it, without
		// reflection.
		b = t.JSON()
	} else {
		b, _ = json.Marshal(v) // resources are plain structs and always marshal
	}
	hs := make(map[string]string, 1+len(headers))
	hs["Content-Type"] = "application/json"
	for k, v := range headers {
		hs[k] = v
	}
	return events.APIGatewayProxyResponse{StatusCode: status, Headers: hs, Body: string(b)}
}
