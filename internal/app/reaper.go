package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/exactlyonce/transfers/internal/reaper"
)

// Reaper builds the reaper's handler: it settles transfers on execution
// status-change events and sweeps stuck ones on schedule. Environment:
// IDEMPOTENCY_TABLE, LEDGER_TABLE, STATE_MACHINE_ARN, STUCK_AFTER_SECONDS, NOT_FOUND_GRACE_SECONDS.
func Reaper(_ context.Context, env Env, clients AWS, log *slog.Logger) (any, error) {
	r, err := reaper.FromEnv(env, clients.DynamoDB(), clients.SFN(), log)
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	return r.Handle, nil
}
