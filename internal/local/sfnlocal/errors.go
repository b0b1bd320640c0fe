package sfnlocal

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Error types of the Step Functions API, as sent in "__type".
const (
	errExecutionAlreadyExists   = "ExecutionAlreadyExists"
	errExecutionDoesNotExist    = "ExecutionDoesNotExist"
	errStateMachineDoesNotExist = "StateMachineDoesNotExist"
	errInvalidName              = "InvalidName"
	errInvalidArn               = "InvalidArn"
	errInvalidExecutionInput    = "InvalidExecutionInput"
	errInvalidToken             = "InvalidToken"
	errValidation               = "ValidationException"
	errUnknownOperation         = "UnknownOperationException"
	errSerialization            = "SerializationException"
	errMissingParameter         = "MissingRequiredParameter"
	errServiceUnavailable       = "ServiceUnavailable"
)

// APIError is a Step Functions API error: its Type is the error code the
// SDK maps to a typed exception (e.g. "ExecutionAlreadyExists").
type APIError struct {
	Type    string
	Message string
	// Status is the HTTP status code; 0 means 400.
	Status int
}

func (e *APIError) Error() string { return e.Type + ": " + e.Message }

func apiErrorf(typ, format string, args ...any) *APIError {
	return &APIError{Type: typ, Message: fmt.Sprintf(format, args...)}
}

func invalidArn(format string, args ...any) *APIError {
	return apiErrorf(errInvalidArn, format, args...)
}

// marshalJSON encodes v like json.Marshal but leaves <, > and & as they
// are, as AWS services do.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
