package main

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/internal/bench/e2e"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// Prefer: wait figures: 8 clients, wait=5, for waitDuration, and the
// same clients without the header.
const (
	waitClients  = 8
	waitSeconds  = 5
	waitDuration = 5 * time.Second
)

// getItems counts the stack's DynamoDB GetItem calls (countGetItems).
var getItems atomic.Int64

// countGetItems is SDK middleware, for the stack's clients, that counts
// GetItem calls.
func countGetItems(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("countGetItems",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if awsmiddleware.GetServiceID(ctx) == "DynamoDB" && awsmiddleware.GetOperationName(ctx) == "GetItem" {
				getItems.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// measureWait runs the Prefer: wait measurement on st, a stack started
// with countGetItems, and returns the report section it writes.
func measureWait(ctx context.Context, st *stack.Stack) (func(io.Writer) error, error) {
	pairs, err := e2e.SeedPairs(ctx, st, waitClients, e2e.DefaultCaller, 1<<50)
	if err != nil {
		return nil, err
	}
	var results []e2e.WaitResult
	for _, wait := range []int{0, waitSeconds} {
		before := getItems.Load()
		r, err := e2e.MeasureWait(ctx, st, e2e.WaitConfig{Clients: waitClients, Wait: wait, Duration: waitDuration, Pairs: pairs, Caller: e2e.DefaultCaller})
		if err != nil {
			return nil, err
		}
		r.Reads = getItems.Load() - before
		results = append(results, r)
	}
	return func(w io.Writer) error { return e2e.WaitMarkdown(w, waitDuration, results...) }, nil
}
