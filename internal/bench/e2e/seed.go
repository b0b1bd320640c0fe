package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// DefaultCaller is the local API's caller when Config names none: the
// local API's default caller.
const DefaultCaller = apigw.DefaultCaller

// DefaultCurrency is the currency of the seeded accounts and transfers.
const DefaultCurrency = "EUR"

// Pair is two accounts of one caller a client moves money between.
type Pair struct {
	Source, Destination string
}

// Scope is the idempotency scope (and account owner) of a local caller,
// the bearer name the local API knows it by.
func Scope(caller string) string {
	return api.IAMScope(apigw.NewCaller(stack.AccountID, caller).ARN)
}

// SeedPairs opens n pairs of accounts owned by caller, each with balance
// minor units of DefaultCurrency, in the stack's ledger. The ids are new
// for every call ("e2e-<time>-p007-src") and none is part of another, so
// Replay can rewrite them in the captured requests.
func SeedPairs(ctx context.Context, st *stack.Stack, n int, caller string, balance int64) ([]Pair, error) {
	if n < 1 {
		return nil, fmt.Errorf("e2e: seed %d pairs: want at least one", n)
	}
	// A client of its own: the functions' configuration carries the
	// probe's and the faults' middleware.
	cfg := st.AWS.Copy()
	cfg.APIOptions = nil
	led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{
		LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"],
	})
	if err != nil {
		return nil, fmt.Errorf("e2e: seed: %w", err)
	}
	prefix := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	owner := Scope(caller)
	pairs := make([]Pair, n)
	for i := range pairs {
		p := Pair{Source: fmt.Sprintf("%s-p%03d-src", prefix, i), Destination: fmt.Sprintf("%s-p%03d-dst", prefix, i)}
		for _, id := range []string{p.Source, p.Destination} {
			created, err := led.OpenAccount(ctx, id, owner, DefaultCurrency, balance)
			if err != nil {
				return nil, fmt.Errorf("e2e: seed: %w", err)
			}
			if !created {
				return nil, fmt.Errorf("e2e: seed: account %s exists already", id)
			}
		}
		pairs[i] = p
	}
	return pairs, nil
}
