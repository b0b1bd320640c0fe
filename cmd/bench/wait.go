package main

import (
	"context"
	"io"
	"time"

	"github.com/exactlyonce/transfers/internal/bench/e2e"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// Prefer: wait figures: 8 clients, wait=5, for waitDuration.
const (
	waitClients  = 8
	waitSeconds  = 5
	waitDuration = 5 * time.Second
)

// measureWait runs the Prefer: wait measurement on st and returns the
// report section it writes.
func measureWait(ctx context.Context, st *stack.Stack) (func(io.Writer) error, error) {
	pairs, err := e2e.SeedPairs(ctx, st, waitClients, e2e.DefaultCaller, 1<<50)
	if err != nil {
		return nil, err
	}
	r, err := e2e.MeasureWait(ctx, st, e2e.WaitConfig{Clients: waitClients, Wait: waitSeconds, Duration: waitDuration, Pairs: pairs, Caller: e2e.DefaultCaller})
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error { return e2e.WaitMarkdown(w, r, waitDuration) }, nil
}
