package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/worker"
)

// Debit builds the debit leg's handler. Environment: IDEMPOTENCY_TABLE,
// LEDGER_TABLE.
func Debit(ctx context.Context, env Env, awsCfg aws.Config, log *slog.Logger) (any, error) {
	return leg(ledger.Debit, env, awsCfg, log)
}

// Credit builds the credit leg's handler.
func Credit(ctx context.Context, env Env, awsCfg aws.Config, log *slog.Logger) (any, error) {
	return leg(ledger.Credit, env, awsCfg, log)
}

// Refund builds the refund leg's handler.
func Refund(ctx context.Context, env Env, awsCfg aws.Config, log *slog.Logger) (any, error) {
	return leg(ledger.Refund, env, awsCfg, log)
}

func leg(kind ledger.Kind, env Env, awsCfg aws.Config, log *slog.Logger) (any, error) {
	led, err := newLedger(env, dynamodb.NewFromConfig(awsCfg))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	w, err := worker.New(kind, led, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return w, nil
}

// newLedger builds the ledger on the tables the environment names.
func newLedger(env Env, db *dynamodb.Client) (*ledger.Ledger, error) {
	idemTable, err := required(env, "IDEMPOTENCY_TABLE")
	if err != nil {
		return nil, err
	}
	ledgerTable, err := required(env, "LEDGER_TABLE")
	if err != nil {
		return nil, err
	}
	return ledger.New(db, ledger.Config{LedgerTable: ledgerTable, IdempotencyTable: idemTable})
}
