//go:build race

package idempotency_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
