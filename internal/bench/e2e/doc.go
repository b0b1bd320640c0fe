// Package e2e measures what a completed transfer costs on the local stack,
// end to end, against what its DynamoDB operations alone cost.
//
// Run drives the REST API with Clients concurrent clients, each running
// one transfer at a time: POST /transfers, expect 202, wait until the
// transfer's idempotency record turns COMPLETED, then the next. A
// transfer's latency runs from its request to the moment the workflow's
// UpdateItem that settles the record succeeded, as the Probe sees it on
// the Step Functions endpoint's DynamoDB transport; nothing polls.
// Throughput is completed transfers over the wall time.
//
// Capture records the DynamoDB operations of one real transfer, as they
// were sent: the functions' SDK calls (the reservation, the legs'
// transactions) and the workflow's integration calls (MarkInProgress,
// MarkCompleted). Replay issues that sequence again, directly against
// DynamoDB Local from a plain loop at the same concurrency, with fresh
// identifiers, one pass per transfer: no Lambda, no Step Functions, no
// HTTP API. The ratio of the two throughputs is what the Go code and the
// local runtime add on top of the database.
//
// The benchmark program wires the probe into the stack and seeds the
// accounts:
//
//	probe := e2e.NewProbe()
//	st, err := stack.Start(ctx, probe.Options(stack.Options{}))
//	pairs, err := e2e.SeedPairs(ctx, st, 32, e2e.DefaultCaller, 1<<40)
//	res, err := probe.Run(ctx, st, e2e.Config{Clients: 8, Duration: 10 * time.Second, Pairs: pairs})
//	mix, err := probe.Capture(ctx, st, e2e.CaptureConfig{Pair: pairs[0]})
//	rep, err := e2e.Replay(ctx, st, mix, e2e.ReplayConfig{Clients: 8, Duration: 10 * time.Second, Pairs: pairs})
//	ratio := res.PerSecond / rep.PerSecond
//
// On a machine shared with other work, Compare runs both in short
// interleaved slices and adds them up, which keeps the ratio steadier
// than one long run of each. BenchmarkCompare measures 1, 8 and 32
// clients that way, with the CPU time each side cost:
//
//	go test -run '^$' -bench Compare -benchtime 1x ./internal/bench/e2e/
//
// Account pairs: client i (and replay worker i) moves money from
// Pairs[i%len(Pairs)].Source to its Destination. DynamoDB serialises
// writes to one item: two transfers in flight on the same account make
// their transactions conflict (TransactionConflict, then the legs' jittered
// retries and the reservation's 503), which measures contention on one
// account, not the cost of the path. So the benchmark seeds one pair per
// client of its largest concurrency (32): no two transfers in flight touch
// the same account item, in the end-to-end run as in the replay.
package e2e
