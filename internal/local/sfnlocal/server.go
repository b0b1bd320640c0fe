package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactlyonce/transfers/internal/local/asl"
)

// Execution status values, as Step Functions names them.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = asl.StatusSucceeded
	StatusFailed    = asl.StatusFailed
	StatusTimedOut  = asl.StatusTimedOut
	StatusAborted   = asl.StatusAborted
)

// maxInputBytes is the largest execution input Step Functions accepts
// (256 KiB, UTF-8 encoded).
const maxInputBytes = 256 * 1024

// shutdownCause is the cause of executions aborted by Close or Shutdown.
const shutdownCause = "the local Step Functions endpoint shut down"

// publishTimeout bounds one status change event delivery.
const publishTimeout = 10 * time.Second

// StateMachine is a state machine to register with AddStateMachine.
type StateMachine struct {
	// Name of the state machine. Optional when ARN is set.
	Name string
	// ARN of the state machine. Optional: derived from Name, region and
	// account.
	ARN string
	// RoleARN is reported by DescribeStateMachine and in the
	// ExecutionStarted event. Optional.
	RoleARN string
	// Definition is the Amazon States Language JSON.
	Definition []byte
	// FileName names the definition in load errors. Optional.
	FileName string
}

// ExecutionInfo describes an execution, as DescribeExecution does.
type ExecutionInfo struct {
	ExecutionARN    string
	StateMachineARN string
	Name            string
	Status          string // StatusRunning or a terminal status
	StartDate       time.Time
	StopDate        time.Time // zero while running
	Input           string
	Output          string // set when SUCCEEDED
	Error           string // set when FAILED, TIMED_OUT or ABORTED with an error
	Cause           string
}

// Server is a local Step Functions endpoint for Standard workflows. It is
// an http.Handler speaking the Step Functions JSON protocol; Listen serves
// it on a local address.
type Server struct {
	cfg   Config
	log   *slog.Logger
	tasks *Tasks

	mu         sync.Mutex
	machines   map[string]*stateMachine // by ARN
	executions map[string]*execution    // by ARN
	seq        int64                    // start order of executions
	closing    bool
	running    sync.WaitGroup
	httpServer *http.Server
	addr       string        // the listener's address, once listening
	loaded     atomic.Uint64 // state machines loaded, for their jitter sources
}

type stateMachine struct {
	name, arn, roleARN string
	definition         string
	created            time.Time
	machine            *asl.Machine
}

// execution is one run. Fields after done are guarded by Server.mu.
type execution struct {
	seq       int64
	arn, name string
	sm        *stateMachine
	input     string
	startDate time.Time
	cancel    context.CancelFunc
	done      chan struct{} // closed once finished and its event published

	status        string
	stopDate      time.Time
	output        *string
	errorCode     *string
	cause         *string
	stopRequested bool
	// lost: the runtime killed the execution as it stopped (Shutdown's
	// context ended). Its end is not announced: a crash of the runtime
	// loses an execution, which the sweeper resumes, and an ABORTED
	// event with a cause would read as an operator's abort.
	lost    bool
	history []historyEvent
}

type historyEvent struct {
	id, previousID int64
	timestamp      time.Time
	event          asl.HistoryEvent
}

// New returns a Server with no state machines.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	return &Server{
		cfg:        cfg,
		log:        cfg.Logger.With("component", "sfnlocal"),
		tasks:      NewTasks(cfg),
		machines:   map[string]*stateMachine{},
		executions: map[string]*execution{},
	}
}

// StateMachineARN returns the ARN a state machine named name has on this
// server.
func (s *Server) StateMachineARN(name string) string { return s.stateMachineARN(name) }

// AddStateMachine loads and registers a state machine. Load errors name the
// definition's file.
func (s *Server) AddStateMachine(sm StateMachine) error {
	name := sm.Name
	if sm.ARN != "" {
		arnName, apiErr := parseStateMachineARN(sm.ARN)
		if apiErr != nil {
			return fmt.Errorf("add state machine %q: %s", sm.ARN, apiErr.Message)
		}
		if name == "" {
			name = arnName
		}
		if arnName != name {
			return fmt.Errorf("add state machine %s: ARN %s names state machine %s", name, sm.ARN, arnName)
		}
		if want := s.stateMachineARN(name); sm.ARN != want {
			return fmt.Errorf("add state machine %s: ARN %s is not in region %s, account %s", name, sm.ARN, s.cfg.Region, s.cfg.AccountID)
		}
	}
	if err := validateName(name); err != nil {
		return fmt.Errorf("add state machine %q: %w", name, err)
	}
	fileName := sm.FileName
	if fileName == "" {
		fileName = name
	}
	roleARN := sm.RoleARN
	if roleARN == "" {
		roleARN = "arn:aws:iam::" + s.cfg.AccountID + ":role/" + name + "Role"
	}
	opts := asl.Options{Tasks: s.tasks.forRole(roleARN), TimeScale: s.cfg.TimeScale}
	if seed := s.cfg.JitterSeed; seed != 0 {
		opts.Rand = rand.New(rand.NewPCG(seed, s.loaded.Add(1)))
	}
	machine, err := asl.Load(fileName, sm.Definition, opts)
	if err != nil {
		return fmt.Errorf("add state machine %s: %w", name, err)
	}
	entry := &stateMachine{
		name:       name,
		arn:        s.stateMachineARN(name),
		roleARN:    roleARN,
		definition: string(sm.Definition),
		created:    s.cfg.Now(),
		machine:    machine,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.machines[entry.arn]; ok {
		return fmt.Errorf("add state machine %s: already exists", name)
	}
	s.machines[entry.arn] = entry
	s.log.Info("state machine added", "arn", entry.arn, "file", fileName)
	return nil
}

// Listen serves the endpoint on addr ("" means 127.0.0.1:0, a free port)
// until Close or Shutdown, and returns its URL, e.g. http://127.0.0.1:41234.
func (s *Server) Listen(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "", errors.New("listen: server is shut down")
	}
	if s.httpServer != nil {
		return "", errors.New("listen: already listening")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.httpServer = srv
	s.addr = ln.Addr().String()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}()
	endpoint := "http://" + ln.Addr().String()
	s.log.Info("listening", "endpoint", endpoint)
	return endpoint, nil
}

// Addr is the address the endpoint listens on ("" before Listen), as the
// listener reports it: "0.0.0.0:PORT" or "[::]:PORT" when it listens on
// every interface.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close aborts running executions, waits for them to finish and stops
// serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Shutdown stops accepting executions, waits for running executions to
// finish until ctx is done, then aborts those still running, waits for
// them and stops serving. It reports ctx's error when it had to abort
// executions.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	srv := s.httpServer
	s.mu.Unlock()

	finished := make(chan struct{})
	go func() {
		s.running.Wait()
		close(finished)
	}()
	var result error
	select {
	case <-finished:
	case <-ctx.Done():
		s.mu.Lock()
		aborted := 0
		for _, e := range s.executions {
			if e.status == StatusRunning {
				e.lost = true
				s.stopLocked(e, nil, ptr(shutdownCause))
				aborted++
			}
		}
		s.mu.Unlock()
		<-finished
		if aborted > 0 {
			result = fmt.Errorf("shutdown: aborted %d running executions: %w", aborted, ctx.Err())
		}
	}
	if srv != nil {
		if err := srv.Close(); err != nil {
			result = errors.Join(result, fmt.Errorf("shutdown: close listener: %w", err))
		}
	}
	return result
}

// startRequest is a validated StartExecution.
type startRequest struct {
	stateMachineARN string
	name            *string
	input           *string
}

// startExecution starts (or, for an identical request while running,
// returns) an execution.
func (s *Server) startExecution(req startRequest) (*execution, *APIError) {
	smName, apiErr := parseStateMachineARN(req.stateMachineARN)
	if apiErr != nil {
		return nil, apiErr
	}
	name := newUUID()
	if req.name != nil {
		name = *req.name
		if err := validateName(name); err != nil {
			return nil, apiErrorf(errInvalidName, "Invalid Name: '%s' (%v)", name, err)
		}
	}
	input := "{}"
	if req.input != nil {
		input = *req.input
		if len(input) > maxInputBytes {
			return nil, apiErrorf(errInvalidExecutionInput, "Invalid State Machine Execution Input: input is %d bytes, the maximum is %d bytes", len(input), maxInputBytes)
		}
		if !json.Valid([]byte(input)) {
			return nil, apiErrorf(errInvalidExecutionInput, "Invalid State Machine Execution Input: '%s' is not valid JSON", truncate(input, 200))
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, &APIError{Type: errServiceUnavailable, Message: "the local Step Functions endpoint is shutting down", Status: http.StatusServiceUnavailable}
	}
	sm, ok := s.machines[req.stateMachineARN]
	if !ok {
		return nil, apiErrorf(errStateMachineDoesNotExist, "State Machine Does Not Exist: '%s'", req.stateMachineARN)
	}
	arn := s.executionARN(smName, name)
	if prev, ok := s.executions[arn]; ok {
		if prev.status == StatusRunning && prev.input == input {
			return prev, nil
		}
		return nil, apiErrorf(errExecutionAlreadyExists, "Execution Already Exists: '%s'", arn)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.seq++
	e := &execution{
		seq:       s.seq,
		arn:       arn,
		name:      name,
		sm:        sm,
		input:     input,
		startDate: s.cfg.Now(),
		cancel:    cancel,
		done:      make(chan struct{}),
		status:    StatusRunning,
	}
	s.executions[arn] = e
	s.running.Add(1)
	go s.run(ctx, e)
	s.log.Debug("execution started", "execution", arn)
	return e, nil
}

// run executes e to completion, records the outcome and publishes the
// status change events.
func (s *Server) run(ctx context.Context, e *execution) {
	defer s.running.Done()
	defer close(e.done)
	defer e.cancel()

	s.mu.Lock()
	started := e.infoLocked()
	s.mu.Unlock()
	started.Status, started.StopDate = StatusRunning, time.Time{}
	started.Output, started.Error, started.Cause = "", "", ""
	s.publishStatus(started)

	res := s.runMachine(ctx, e)

	s.mu.Lock()
	if !e.stopRequested {
		s.finishLocked(e, res)
	}
	finished, lost := e.infoLocked(), e.lost
	s.mu.Unlock()
	if lost {
		s.log.Warn("execution lost as the runtime stopped: its end is not announced", "execution", e.arn)
		return
	}
	s.log.Debug("execution finished", "execution", e.arn, "status", finished.Status)
	s.publishStatus(finished)
}

// runMachine runs the engine, turning a panic into a failed execution so
// one bad run cannot take the whole local stack down.
func (s *Server) runMachine(ctx context.Context, e *execution) (res asl.Result) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("execution panicked", "execution", e.arn, "panic", p)
			res = asl.Result{Status: asl.StatusFailed, Error: "States.Runtime", Cause: fmt.Sprintf("internal error in the local engine: %v", p)}
		}
	}()
	meta := asl.Execution{
		ID:               e.arn,
		Name:             e.name,
		StartTime:        e.startDate,
		RoleArn:          e.sm.roleARN,
		StateMachineID:   e.sm.arn,
		StateMachineName: e.sm.name,
	}
	return e.sm.machine.Run(ctx, meta, json.RawMessage(e.input), asl.RunOptions{
		OnEvent: func(ev asl.HistoryEvent) { s.recordEvent(e, ev) },
	})
}

// recordEvent appends an engine event to e's history. Events after a stop
// request are dropped: the history already ends with ExecutionAborted.
func (s *Server) recordEvent(e *execution, ev asl.HistoryEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.status != StatusRunning {
		return
	}
	if ev.Type == "ExecutionStarted" && len(ev.Input) == 0 {
		ev.Input = json.RawMessage(e.input)
	}
	s.appendEventLocked(e, ev)
}

func (s *Server) appendEventLocked(e *execution, ev asl.HistoryEvent) {
	id := int64(len(e.history)) + 1
	e.history = append(e.history, historyEvent{id: id, previousID: id - 1, timestamp: s.cfg.Now(), event: ev})
}

// terminalEventTypes maps terminal statuses to their history event type.
var terminalEventTypes = map[string]string{
	StatusSucceeded: "ExecutionSucceeded",
	StatusFailed:    "ExecutionFailed",
	StatusTimedOut:  "ExecutionTimedOut",
	StatusAborted:   "ExecutionAborted",
}

// finishLocked records the engine's result on e.
func (s *Server) finishLocked(e *execution, res asl.Result) {
	if _, ok := terminalEventTypes[res.Status]; !ok {
		s.log.Error("engine returned an unknown status", "execution", e.arn, "status", res.Status)
		res = asl.Result{Status: StatusFailed, Error: "States.Runtime", Cause: fmt.Sprintf("the local engine returned unknown status %q", res.Status)}
	}
	e.status = res.Status
	e.stopDate = s.cfg.Now()
	if res.Status == StatusSucceeded {
		out := string(res.Output)
		if out == "" {
			out = "null"
		}
		e.output = &out
	}
	e.errorCode = nonEmpty(res.Error)
	e.cause = nonEmpty(res.Cause)
	if res.Status == StatusTimedOut && e.errorCode == nil {
		e.errorCode = ptr("States.Timeout")
	}
	want := terminalEventTypes[res.Status]
	if n := len(e.history); n == 0 || e.history[n-1].event.Type != want {
		ev := asl.HistoryEvent{Type: want, Error: deref(e.errorCode), Cause: deref(e.cause)}
		if e.output != nil {
			ev.Output = json.RawMessage(*e.output)
		}
		s.appendEventLocked(e, ev)
	}
}

// stopLocked aborts a running execution: it is ABORTED from now on, with
// errorCode and cause, and its engine run is cancelled.
func (s *Server) stopLocked(e *execution, errorCode, cause *string) {
	e.stopRequested = true
	e.status = StatusAborted
	e.stopDate = s.cfg.Now()
	e.errorCode = errorCode
	e.cause = cause
	s.appendEventLocked(e, asl.HistoryEvent{Type: "ExecutionAborted", Error: deref(errorCode), Cause: deref(cause)})
	e.cancel()
	s.log.Info("execution stopped", "execution", e.arn)
}

// stopExecution stops a running execution. Stopping a closed execution
// changes nothing and reports its stop date.
func (s *Server) stopExecution(arn string, errorCode, cause *string) (time.Time, *APIError) {
	if apiErr := checkExecutionARN(arn); apiErr != nil {
		return time.Time{}, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.executions[arn]
	if !ok {
		return time.Time{}, apiErrorf(errExecutionDoesNotExist, "Execution Does Not Exist: '%s'", arn)
	}
	if e.status == StatusRunning {
		s.stopLocked(e, errorCode, cause)
	}
	return e.stopDate, nil
}

// lookup finds an execution by ARN.
func (s *Server) lookup(arn string) (*execution, *APIError) {
	if apiErr := checkExecutionARN(arn); apiErr != nil {
		return nil, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.executions[arn]
	if !ok {
		return nil, apiErrorf(errExecutionDoesNotExist, "Execution Does Not Exist: '%s'", arn)
	}
	return e, nil
}

// Describe reports the current state of an execution.
func (s *Server) Describe(executionARN string) (ExecutionInfo, error) {
	e, apiErr := s.lookup(executionARN)
	if apiErr != nil {
		return ExecutionInfo{}, fmt.Errorf("describe execution %s: %w", executionARN, apiErr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.infoLocked(), nil
}

// Wait blocks until the execution has finished and its status change event
// has been published, then describes it.
func (s *Server) Wait(ctx context.Context, executionARN string) (ExecutionInfo, error) {
	e, apiErr := s.lookup(executionARN)
	if apiErr != nil {
		return ExecutionInfo{}, fmt.Errorf("wait for execution %s: %w", executionARN, apiErr)
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return ExecutionInfo{}, fmt.Errorf("wait for execution %s: %w", executionARN, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.infoLocked(), nil
}

func (e *execution) infoLocked() ExecutionInfo {
	return ExecutionInfo{
		ExecutionARN:    e.arn,
		StateMachineARN: e.sm.arn,
		Name:            e.name,
		Status:          e.status,
		StartDate:       e.startDate,
		StopDate:        e.stopDate,
		Input:           e.input,
		Output:          deref(e.output),
		Error:           deref(e.errorCode),
		Cause:           deref(e.cause),
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
