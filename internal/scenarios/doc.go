// Package scenarios holds deterministic fault scenarios for the transfer
// workflow (build tag integration): each test runs the local stack, drives
// the API over HTTP, injects one precisely placed fault (a Lambda attempt
// that commits late, a lost or duplicated status event, a reaper that
// stops between two writes, ...), waits for the outcome, brings the stack
// to rest and then checks the money invariants of internal/chaos together
// with the outcome the scenario must have: final status, reversal, the
// ledger entries of each leg, the number of executions and the answer a
// replay of the request gets.
package scenarios
