package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/worker"
)

// Debit builds the debit leg's handler. Environment: IDEMPOTENCY_TABLE,
// LEDGER_TABLE, ACCOUNT_OWNERSHIP (enforce or off, default enforce): with
// enforce, a debit of an account that is not the transfer's caller's is
// rejected (Forbidden).
func Debit(ctx context.Context, env Env, clients AWS, log *slog.Logger) (any, error) {
	return leg(ledger.Debit, env, clients, log)
}

// Credit builds the credit leg's handler. Environment: as Debit's; with
// ACCOUNT_OWNERSHIP=enforce, a credit refused on an account that is not
// the transfer's caller's is DestinationUnavailable, whatever the rule.
func Credit(ctx context.Context, env Env, clients AWS, log *slog.Logger) (any, error) {
	return leg(ledger.Credit, env, clients, log)
}

// Refund builds the refund leg's handler.
func Refund(ctx context.Context, env Env, clients AWS, log *slog.Logger) (any, error) {
	return leg(ledger.Refund, env, clients, log)
}

func leg(kind ledger.Kind, env Env, clients AWS, log *slog.Logger) (any, error) {
	led, err := newLedger(env, clients.DynamoDB())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	var opts []worker.Option
	if kind != ledger.Refund {
		enforce, err := accountOwnership(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		if enforce {
			opts = append(opts, worker.EnforceOwnership())
		}
	}
	w, err := worker.New(kind, led, log, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return w, nil
}

// accountOwnership reads ACCOUNT_OWNERSHIP: enforce (the default) or off.
func accountOwnership(env Env) (bool, error) {
	switch v := env("ACCOUNT_OWNERSHIP"); v {
	case "", "enforce":
		return true, nil
	case "off":
		return false, nil
	default:
		return false, fmt.Errorf("environment variable ACCOUNT_OWNERSHIP must be enforce or off, got %q", v)
	}
}

// boolean reads a true/false environment variable.
func boolean(env Env, name string, def bool) (bool, error) {
	switch v := env(name); v {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, fmt.Errorf("environment variable %s must be true or false, got %q", name, v)
	}
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
