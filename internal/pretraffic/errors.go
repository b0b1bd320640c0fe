package pretraffic

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors a probe fails with, matched with errors.Is; each comes wrapped in
// a *ProbeError that names the probe and the function version.
var (
	// ErrInvoke: the Invoke call itself failed (the Lambda service
	// refused it, the network failed, or the probes' deadline passed), so
	// the version gave no answer.
	ErrInvoke = errors.New("invocation failed")
	// ErrFunctionError: the version answered with a function error that
	// the probe does not expect (*FunctionError).
	ErrFunctionError = errors.New("function error")
	// ErrUnexpectedAnswer: the version answered, but not as the probe
	// expects (*StatusError for an API answer of another status).
	ErrUnexpectedAnswer = errors.New("unexpected answer")
	// ErrLegAccepted: a leg version accepted the probe's task instead of
	// refusing it with TransferFenced, so its fence let a transfer that
	// does not exist through.
	ErrLegAccepted = errors.New("leg accepted a task of a transfer that does not exist")
)

// ErrInvalidEvent reports a hook event without its deployment or its
// lifecycle hook execution id: there is nothing to report a status for.
var ErrInvalidEvent = errors.New("pretraffic: the event names no deployment or no lifecycle hook execution")

// ConfigError is a missing or malformed environment variable.
type ConfigError struct {
	Variable string
	Problem  string
}

func (e *ConfigError) Error() string {
	return "environment variable " + e.Variable + " " + e.Problem
}

// ProbeError is the failure of one probe.
type ProbeError struct {
	// Probe is the probe's name (orchestrator, debit, credit, refund,
	// reaper).
	Probe string
	// Function is the version invoked (the qualified function ARN).
	Function string
	Err      error
}

func (e *ProbeError) Error() string {
	return "probe " + e.Probe + " of " + e.Function + ": " + e.Err.Error()
}

func (e *ProbeError) Unwrap() error { return e.Err }

// FunctionError is a function error a version answered with: the
// errorType and errorMessage of Lambda's error document. It matches
// ErrFunctionError.
type FunctionError struct {
	// Kind is the X-Amz-Function-Error header (Unhandled).
	Kind    string
	Type    string
	Message string
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("%s function error %s: %s", e.Kind, e.Type, e.Message)
}

// Is reports whether target is ErrFunctionError.
func (e *FunctionError) Is(target error) bool { return target == ErrFunctionError }

// StatusError is an API answer of another status than the probe expects,
// with its body (cut to maxShown bytes). It matches ErrUnexpectedAnswer.
type StatusError struct {
	StatusCode int
	Body       string
}

func (e *StatusError) Error() string {
	return "status " + strconv.Itoa(e.StatusCode) + ", body " + e.Body
}

// Is reports whether target is ErrUnexpectedAnswer.
func (e *StatusError) Is(target error) bool { return target == ErrUnexpectedAnswer }

// ReportError is the failure of the report of the hook's status to
// CodeDeploy. The handler returns it: CodeDeploy then waits for a status
// until the hook times out, and rolls the deployment back.
type ReportError struct {
	DeploymentID string
	ExecutionID  string
	Status       string
	Err          error
}

func (e *ReportError) Error() string {
	return "pretraffic: report " + e.Status + " for deployment " + e.DeploymentID +
		" (lifecycle hook execution " + e.ExecutionID + "): " + e.Err.Error()
}

func (e *ReportError) Unwrap() error { return e.Err }

// maxShown bounds the part of an answer quoted in an error.
const maxShown = 512

// shown is an answer as quoted in an error: cut to maxShown bytes.
func shown(b []byte) string {
	if len(b) <= maxShown {
		return string(b)
	}
	return string(b[:maxShown]) + "..."
}
