// Package asl executes Amazon States Language definitions: the subset of the
// language this project's state machines use, faithfully, and nothing more.
// Loading a definition that uses anything outside that subset fails with the
// feature named.
package asl

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"
)

// Error is a named ASL error, as matched by Retry and Catch ErrorEquals.
// Task invokers return it for errors the state machine may handle by name
// (for example "Lambda.ServiceException", "InsufficientFunds",
// "DynamoDB.ConditionalCheckFailedException").
type Error struct {
	Name  string
	Cause string
}

func (e *Error) Error() string { return e.Name + ": " + e.Cause }

// TaskInvoker runs the resources of Task states.
type TaskInvoker interface {
	// CheckResource reports an error when the resource ARN is not supported.
	// Load calls it for every Task state, so an unknown resource fails at
	// load time, not mid-execution.
	CheckResource(resource string) error
	// Invoke runs one attempt of a task with its effective parameters (the
	// state input after InputPath and Parameters). An *Error is matched by
	// name by Retry and Catch; any other error is treated as
	// States.TaskFailed with the error text as cause. ctx carries the task's
	// TimeoutSeconds deadline, or its earlier HeartbeatSeconds one, when
	// the state sets them.
	Invoke(ctx context.Context, resource string, parameters json.RawMessage) (json.RawMessage, error)
}

// Options configure a loaded machine.
type Options struct {
	// Tasks runs Task states. Required when the definition has Task states.
	Tasks TaskInvoker
	// TimeScale multiplies every duration the definition names: Retry
	// intervals (and MaxDelaySeconds), task TimeoutSeconds and
	// HeartbeatSeconds, Wait durations and the machine's TimeoutSeconds. 0 means 1. Tests use a small scale so they never sleep
	// for the real intervals.
	TimeScale float64
	// Rand draws the random waits of retriers with JitterStrategy FULL
	// and the numbers of States.MathRandom without a seed.
	// The machine uses it under its own lock, so it must not be shared with
	// anything else. nil means a source seeded from the process's random
	// source.
	Rand *rand.Rand
}

// Execution identifies one run for the $$ context object.
type Execution struct {
	ID               string // execution ARN ($$.Execution.Id)
	Name             string // $$.Execution.Name
	StartTime        time.Time
	RoleArn          string
	StateMachineID   string // state machine ARN ($$.StateMachine.Id)
	StateMachineName string
}

// Status values of a finished run, as Step Functions names them.
const (
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusTimedOut  = "TIMED_OUT"
	StatusAborted   = "ABORTED"
)

// Result is the outcome of a run.
type Result struct {
	Status string          // one of the Status constants
	Output json.RawMessage // set when SUCCEEDED
	Error  string          // set when FAILED or TIMED_OUT (States.Timeout)
	Cause  string
}

// HistoryEvent is one step of an execution, reported as it happens, named
// as Step Functions' GetExecutionHistory names them ("ExecutionStarted",
// "TaskStateEntered", "TaskScheduled", "TaskSucceeded", "TaskFailed",
// "TaskStateExited", "PassStateEntered", "ChoiceStateEntered",
// "FailStateEntered", "SucceedStateEntered", "ExecutionSucceeded",
// "ExecutionFailed", "ExecutionTimedOut", "ExecutionAborted", ...).
type HistoryEvent struct {
	Type      string
	StateName string          // for state events
	Resource  string          // for task events
	Input     json.RawMessage // entered events, ExecutionStarted, TaskScheduled (parameters)
	Output    json.RawMessage // exited / succeeded events
	Error     string          // failed events
	Cause     string
}

// RunOptions are per-run hooks.
type RunOptions struct {
	// OnEvent, when set, receives every history event in order.
	OnEvent func(HistoryEvent)
}

// Machine is a loaded, validated state machine definition.
type Machine struct {
	def  *definition
	opts Options

	randMu sync.Mutex // guards opts.Rand
}

// jitter returns a uniformly random duration in [0, d], for JitterStrategy
// FULL.
func (m *Machine) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	m.randMu.Lock()
	defer m.randMu.Unlock()
	return time.Duration(m.opts.Rand.Int64N(int64(d) + 1))
}

// randInt64N draws from [0, n) with the machine's random source.
func (m *Machine) randInt64N(n int64) int64 {
	m.randMu.Lock()
	defer m.randMu.Unlock()
	return m.opts.Rand.Int64N(n)
}

// Load parses and validates a definition. name (usually the file name)
// prefixes every error, with the JSON path of the offending place, e.g.
// `statemachine/transfer.asl.json: States.Debit.Retry[0].BackoffRate: must be >= 1`.
func Load(name string, definition []byte, opts Options) (*Machine, error) {
	return load(name, definition, opts)
}

// Run executes the machine to completion on input. Cancelling ctx aborts
// the run (Status ABORTED). Machine-level TimeoutSeconds gives TIMED_OUT
// with Error "States.Timeout".
func (m *Machine) Run(ctx context.Context, exec Execution, input json.RawMessage, ro RunOptions) Result {
	return m.run(ctx, exec, input, ro)
}
