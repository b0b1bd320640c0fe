package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/reaper"
)

// Reaper builds the reaper's handler: it settles transfers on execution
// status-change events and sweeps stuck ones on schedule. Environment:
// IDEMPOTENCY_TABLE, LEDGER_TABLE, STATE_MACHINE_ARN, STUCK_AFTER_SECONDS, NOT_FOUND_GRACE_SECONDS.
func Reaper(_ context.Context, env Env, awsCfg aws.Config, log *slog.Logger) (any, error) {
	r, err := reaper.FromEnv(env, dynamodb.NewFromConfig(awsCfg), sfn.NewFromConfig(awsCfg), log)
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	return r.Handle, nil
}
