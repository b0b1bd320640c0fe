package app

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Reaper builds the reaper's handler.
func Reaper(ctx context.Context, env Env, awsCfg aws.Config, log *slog.Logger) (any, error) {
	return func(ctx context.Context, event json.RawMessage) error {
		log.InfoContext(ctx, "reaper event", "event", string(event))
		return nil
	}, nil
}
