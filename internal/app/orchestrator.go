package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/cursor"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// Orchestrator builds the API handler. Environment: IDEMPOTENCY_TABLE,
// LEDGER_TABLE, STATE_MACHINE_ARN, RETENTION_HOURS (default 24),
// MAX_TRANSFER_AMOUNT (default 100000000 minor units), ACCOUNT_OWNERSHIP
// (enforce or off, default enforce), SCOPE_BY_SESSION (true or false,
// default false), CURSOR_KEY (required: the key, at least 32 bytes, that
// signs the lists' page cursors; template.yaml resolves it from the
// stack's generated CursorKey secret).
func Orchestrator(_ context.Context, env Env, clients AWS, log *slog.Logger) (any, error) {
	h, err := NewOrchestrator(env, clients.DynamoDB(), clients.SFN(), log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}

// NewOrchestrator builds the API handler on the given clients.
func NewOrchestrator(env Env, db *dynamodb.Client, executions api.Executions, log *slog.Logger) (*api.Handler, error) {
	led, err := newLedger(env, db)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	machine, err := required(env, "STATE_MACHINE_ARN")
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	hours, err := positiveInt(env, "RETENTION_HOURS", 24)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	maxAmount, err := positiveInt(env, "MAX_TRANSFER_AMOUNT", 100000000)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	enforce, err := accountOwnership(env)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	bySession, err := boolean(env, "SCOPE_BY_SESSION", false)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	key, err := required(env, "CURSOR_KEY")
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	cursors, err := cursor.New([]byte(key))
	if err != nil {
		return nil, fmt.Errorf("orchestrator: CURSOR_KEY: %w", err)
	}
	store := reservation.NewStore(db, env("IDEMPOTENCY_TABLE"), reservation.WithRetention(time.Duration(hours)*time.Hour))
	cfg := api.Config{StateMachineArn: machine, MaxAmount: maxAmount, EnforceOwnership: enforce, ScopeBySession: bySession, Cursors: cursors, OwnerCacheAge: OwnerCacheAge}
	return api.New(cfg, store, executions, led, newTransferID, log), nil
}

// OwnerCacheAge is how long an orchestrator container remembers a source
// account's owner, the early answer to a transfer of ownership enforced:
// a change of owner reaches the early answer within this time, and the
// debit's own check at once (docs/design.md, "The owner check").
const OwnerCacheAge = 30 * time.Second

// newTransferID returns a time-ordered unique id (UUIDv7), a valid
// execution name.
func newTransferID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source does.
		return uuid.NewString()
	}
	return id.String()
}
