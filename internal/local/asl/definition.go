package asl

import (
	"context"
	"time"
)

// definition is a loaded, validated state machine. It is never modified
// after load, so one definition serves any number of concurrent runs.
type definition struct {
	startAt        string
	states         map[string]*state
	order          []string // state names in document order
	timeoutSeconds int64    // 0: no machine timeout

	// sleep waits d (already scaled) between retry attempts, returning
	// ctx's error if it ends first. nil means a real timer; tests replace
	// it to observe the computed intervals without sleeping.
	sleep func(ctx context.Context, d time.Duration) error
}

// State types.
const (
	typeTask     = "Task"
	typePass     = "Pass"
	typeChoice   = "Choice"
	typeSucceed  = "Succeed"
	typeFail     = "Fail"
	typeWait     = "Wait"
	typeParallel = "Parallel"
	typeMap      = "Map"
)

// state is one compiled state. Fields not used by its type stay zero.
type state struct {
	name string
	typ  string

	// Transition (Task, Pass): exactly one of next and end.
	next string
	end  bool

	// Paths: nil means the field was given as null. An absent field is the
	// path "$".
	inputPath  *refPath
	outputPath *refPath
	resultPath *refPath

	assign         template // Assign; nil when absent
	parameters     template // Task, Pass; nil when absent
	resultSelector template // Task; nil when absent

	result    any // Pass
	hasResult bool

	// Task.
	resource             string
	timeoutSeconds       int64 // 0: none
	timeoutSecondsPath   *refPath
	heartbeatSeconds     int64 // 0: none
	heartbeatSecondsPath *refPath
	retry                []retrier
	catch                []catcher

	// Choice.
	choices     []*choiceRule
	defaultNext string

	// Wait: exactly one of the four.
	waitSeconds       int64
	hasWaitSeconds    bool
	waitSecondsPath   *refPath
	waitTimestamp     time.Time
	hasWaitTimestamp  bool
	waitTimestampPath *refPath

	// Parallel.
	branches []*definition

	// Map (inline).
	processor            *definition
	itemsPath            *refPath // nil: "$"
	itemSelector         template // ItemSelector or the legacy Parameters
	maxConcurrency       int64    // 0: no limit
	maxConcurrencyPath   *refPath
	tolerance            bool // a ToleratedFailure field is set
	toleratedPercent     float64
	hasToleratedPercent  bool
	toleratedPercentPath *refPath
	toleratedCount       int64
	hasToleratedCount    bool
	toleratedCountPath   *refPath

	// Fail: a constant, a path/intrinsic, or neither.
	errorName string
	cause     string
	errorPath template
	causePath template
}

// retrier is one element of a Task's Retry.
type retrier struct {
	errorEquals     []string
	intervalSeconds int64
	maxAttempts     int64
	backoffRate     float64
	maxDelaySeconds int64 // 0: no cap
	fullJitter      bool  // JitterStrategy FULL: wait a random part of the delay
}

// Retry defaults from the Amazon States Language.
const (
	defaultIntervalSeconds = 1
	defaultMaxAttempts     = 3
	defaultBackoffRate     = 2.0
)

// catcher is one element of a Task's Catch.
type catcher struct {
	errorEquals []string
	next        string
	resultPath  *refPath // nil: discard the error output
	assign      template // nil when absent
}

// transitions lists the states a state may go to next.
func (s *state) transitions() []string {
	var out []string
	if s.next != "" {
		out = append(out, s.next)
	}
	for _, c := range s.catch {
		out = append(out, c.next)
	}
	for _, r := range s.choices {
		out = append(out, r.next)
	}
	if s.defaultNext != "" {
		out = append(out, s.defaultNext)
	}
	return out
}
