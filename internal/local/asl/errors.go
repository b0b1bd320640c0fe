package asl

import (
	"fmt"
	"strings"
)

// Predefined ASL error names this runtime raises or matches specially.
const (
	ErrAll                    = "States.ALL"
	ErrTaskFailed             = "States.TaskFailed"
	ErrTimeout                = "States.Timeout"
	ErrHeartbeatTimeout       = "States.HeartbeatTimeout"
	ErrRuntime                = "States.Runtime"
	ErrResultPathMatchFailure = "States.ResultPathMatchFailure"
	ErrIntrinsicFailure       = "States.IntrinsicFailure"
	ErrNoChoiceMatched        = "States.NoChoiceMatched"
	ErrDataLimitExceeded      = "States.DataLimitExceeded"
)

// knownStatesErrors are the "States." names an ErrorEquals may list; any
// other "States." name is a typo that would never match.
var knownStatesErrors = map[string]bool{
	ErrAll: true, ErrTaskFailed: true, ErrTimeout: true, ErrRuntime: true,
	ErrResultPathMatchFailure: true, ErrIntrinsicFailure: true,
	ErrNoChoiceMatched: true, ErrDataLimitExceeded: true,
	"States.ParameterPathFailure": true, "States.Permissions": true,
	ErrHeartbeatTimeout: true, "States.BranchFailed": true,
	"States.ExceedToleratedFailureThreshold": true, "States.ItemReaderFailed": true,
	"States.ResultWriterFailed": true, "States.QueryEvaluationError": true,
	"States.Http.Socket": true,
}

// newError builds a runtime error with a formatted cause.
func newError(name, format string, args ...any) *Error {
	return &Error{Name: name, Cause: fmt.Sprintf(format, args...)}
}

// errorMatches reports whether an ErrorEquals list matches an error name.
// States.Runtime is never matched (it always fails the execution);
// States.ALL matches every other error; States.TaskFailed excludes
// States.Timeout and States.DataLimitExceeded. States.Timeout also matches
// States.HeartbeatTimeout: the developer guide ("Error names" in
// https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html)
// raises States.Timeout for a task that "ran longer than the
// TimeoutSeconds value, or failed to send a heartbeat for a period longer
// than the HeartbeatSeconds value", and States.HeartbeatTimeout names the
// heartbeat case alone. A heartbeat timeout is a timeout, so
// States.TaskFailed does not match it either.
//
// The developer guide ("Handling errors in Step Functions workflows") says
// States.ALL does not match States.DataLimitExceeded. Executions recorded
// on AWS show otherwise: a States.ALL catcher of a Lambda task catches the
// States.DataLimitExceeded of a result over the payload limit. The runtime
// follows the recording.
func errorMatches(errorEquals []string, name string) bool {
	if name == ErrRuntime {
		return false
	}
	for _, e := range errorEquals {
		switch {
		case e == name:
			return true
		case e == ErrAll:
			return true
		case e == ErrTimeout && name == ErrHeartbeatTimeout:
			return true
		case e == ErrTaskFailed && name != ErrTimeout && name != ErrHeartbeatTimeout && name != ErrDataLimitExceeded:
			return true
		}
	}
	return false
}

// loadError is a definition error at a JSON place such as
// "States.Debit.Retry[0].BackoffRate".
type loadError struct {
	place string
	msg   string
	err   error
}

func (e *loadError) Error() string {
	var b strings.Builder
	if e.place != "" {
		b.WriteString(e.place)
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	if e.err != nil {
		if e.msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.err.Error())
	}
	return b.String()
}

func (e *loadError) Unwrap() error { return e.err }

// errAt builds a loadError with a formatted message.
func errAt(place, format string, args ...any) error {
	return &loadError{place: place, msg: fmt.Sprintf(format, args...)}
}

// wrapAt wraps an error with a place.
func wrapAt(place string, err error) error {
	return &loadError{place: place, err: err}
}

// join builds a child place: join("States", "Debit") = "States.Debit".
func join(place, key string) string {
	if place == "" {
		return key
	}
	return place + "." + key
}

// index builds an array element place: index("Retry", 0) = "Retry[0]".
func index(place string, i int) string {
	return fmt.Sprintf("%s[%d]", place, i)
}
