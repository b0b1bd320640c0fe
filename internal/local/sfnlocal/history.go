package sfnlocal

import "strings"

// historyEventJSON is a GetExecutionHistory event as the service encodes
// it: the common members plus the details member of its type.
type historyEventJSON struct {
	ID              int64        `json:"id"`
	PreviousEventID int64        `json:"previousEventId"`
	Timestamp       epochSeconds `json:"timestamp"`
	Type            string       `json:"type"`

	ExecutionStartedEventDetails   *executionStartedDetails `json:"executionStartedEventDetails,omitempty"`
	ExecutionSucceededEventDetails *outputDetails           `json:"executionSucceededEventDetails,omitempty"`
	ExecutionFailedEventDetails    *errorDetails            `json:"executionFailedEventDetails,omitempty"`
	ExecutionAbortedEventDetails   *errorDetails            `json:"executionAbortedEventDetails,omitempty"`
	ExecutionTimedOutEventDetails  *errorDetails            `json:"executionTimedOutEventDetails,omitempty"`
	StateEnteredEventDetails       *stateEnteredDetails     `json:"stateEnteredEventDetails,omitempty"`
	StateExitedEventDetails        *stateExitedDetails      `json:"stateExitedEventDetails,omitempty"`
	TaskScheduledEventDetails      *taskScheduledDetails    `json:"taskScheduledEventDetails,omitempty"`
	TaskStartedEventDetails        *taskDetails             `json:"taskStartedEventDetails,omitempty"`
	TaskSucceededEventDetails      *taskSucceededDetails    `json:"taskSucceededEventDetails,omitempty"`
	TaskFailedEventDetails         *taskErrorDetails        `json:"taskFailedEventDetails,omitempty"`
	TaskTimedOutEventDetails       *taskErrorDetails        `json:"taskTimedOutEventDetails,omitempty"`
	TaskStartFailedEventDetails    *taskErrorDetails        `json:"taskStartFailedEventDetails,omitempty"`
	TaskSubmitFailedEventDetails   *taskErrorDetails        `json:"taskSubmitFailedEventDetails,omitempty"`
}

// truncatedDetails is the inputDetails / outputDetails object of history
// events.
type truncatedDetails struct {
	Truncated bool `json:"truncated"`
}

type executionStartedDetails struct {
	Input        *string           `json:"input,omitempty"`
	InputDetails *truncatedDetails `json:"inputDetails,omitempty"`
	RoleArn      string            `json:"roleArn,omitempty"`
}

type outputDetails struct {
	Output        *string           `json:"output,omitempty"`
	OutputDetails *truncatedDetails `json:"outputDetails,omitempty"`
}

type errorDetails struct {
	Error *string `json:"error,omitempty"`
	Cause *string `json:"cause,omitempty"`
}

type stateEnteredDetails struct {
	Name         string            `json:"name"`
	Input        *string           `json:"input,omitempty"`
	InputDetails *truncatedDetails `json:"inputDetails,omitempty"`
}

type stateExitedDetails struct {
	Name          string            `json:"name"`
	Output        *string           `json:"output,omitempty"`
	OutputDetails *truncatedDetails `json:"outputDetails,omitempty"`
}

type taskDetails struct {
	ResourceType string `json:"resourceType"`
	Resource     string `json:"resource"`
}

type taskScheduledDetails struct {
	ResourceType string  `json:"resourceType"`
	Resource     string  `json:"resource"`
	Region       string  `json:"region"`
	Parameters   *string `json:"parameters,omitempty"`
}

type taskSucceededDetails struct {
	ResourceType  string            `json:"resourceType"`
	Resource      string            `json:"resource"`
	Output        *string           `json:"output,omitempty"`
	OutputDetails *truncatedDetails `json:"outputDetails,omitempty"`
}

type taskErrorDetails struct {
	ResourceType string  `json:"resourceType"`
	Resource     string  `json:"resource"`
	Error        *string `json:"error,omitempty"`
	Cause        *string `json:"cause,omitempty"`
}

// splitResource splits an integration ARN the way task events report it:
// arn:aws:states:::lambda:invoke is resource type "lambda", resource
// "invoke". Other ARNs are reported whole.
func splitResource(arn string) (resourceType, resource string) {
	rest, ok := strings.CutPrefix(arn, "arn:aws:states:::")
	if !ok {
		return "", arn
	}
	resourceType, resource, ok = strings.Cut(rest, ":")
	if !ok {
		return "", arn
	}
	return resourceType, resource
}

// data returns raw as a string, or nil when absent or not requested.
func data(raw []byte, include bool) *string {
	if !include || raw == nil {
		return nil
	}
	return ptr(string(raw))
}

// dataDetail returns the truncated flag object that accompanies included
// data.
func dataDetail(raw []byte, include bool) *truncatedDetails {
	if !include || raw == nil {
		return nil
	}
	return &truncatedDetails{}
}

// historyEventJSON encodes one recorded event of an execution whose role is
// roleARN, with its data (inputs, outputs, parameters) when withData is set.
func (s *Server) historyEventJSON(he historyEvent, roleARN string, withData bool) historyEventJSON {
	ev := he.event
	out := historyEventJSON{
		ID:              he.id,
		PreviousEventID: he.previousID,
		Timestamp:       epochSeconds(he.timestamp),
		Type:            ev.Type,
	}
	errs := func() *errorDetails { return &errorDetails{Error: nonEmpty(ev.Error), Cause: nonEmpty(ev.Cause)} }
	resourceType, resource := splitResource(ev.Resource)
	taskErrs := func() *taskErrorDetails {
		return &taskErrorDetails{ResourceType: resourceType, Resource: resource, Error: nonEmpty(ev.Error), Cause: nonEmpty(ev.Cause)}
	}
	switch {
	case ev.Type == "ExecutionStarted":
		out.ExecutionStartedEventDetails = &executionStartedDetails{
			Input:        data(ev.Input, withData),
			InputDetails: dataDetail(ev.Input, withData),
			RoleArn:      roleARN,
		}
	case ev.Type == "ExecutionSucceeded":
		out.ExecutionSucceededEventDetails = &outputDetails{Output: data(ev.Output, withData), OutputDetails: dataDetail(ev.Output, withData)}
	case ev.Type == "ExecutionFailed":
		out.ExecutionFailedEventDetails = errs()
	case ev.Type == "ExecutionAborted":
		out.ExecutionAbortedEventDetails = errs()
	case ev.Type == "ExecutionTimedOut":
		out.ExecutionTimedOutEventDetails = errs()
	case strings.HasSuffix(ev.Type, "StateEntered"):
		out.StateEnteredEventDetails = &stateEnteredDetails{Name: ev.StateName, Input: data(ev.Input, withData), InputDetails: dataDetail(ev.Input, withData)}
	case strings.HasSuffix(ev.Type, "StateExited"):
		out.StateExitedEventDetails = &stateExitedDetails{Name: ev.StateName, Output: data(ev.Output, withData), OutputDetails: dataDetail(ev.Output, withData)}
	case ev.Type == "TaskScheduled":
		out.TaskScheduledEventDetails = &taskScheduledDetails{ResourceType: resourceType, Resource: resource, Region: s.cfg.Region, Parameters: data(ev.Input, withData)}
	case ev.Type == "TaskStarted":
		out.TaskStartedEventDetails = &taskDetails{ResourceType: resourceType, Resource: resource}
	case ev.Type == "TaskSucceeded":
		out.TaskSucceededEventDetails = &taskSucceededDetails{ResourceType: resourceType, Resource: resource, Output: data(ev.Output, withData), OutputDetails: dataDetail(ev.Output, withData)}
	case ev.Type == "TaskFailed":
		out.TaskFailedEventDetails = taskErrs()
	case ev.Type == "TaskTimedOut":
		out.TaskTimedOutEventDetails = taskErrs()
	case ev.Type == "TaskStartFailed":
		out.TaskStartFailedEventDetails = taskErrs()
	case ev.Type == "TaskSubmitFailed":
		out.TaskSubmitFailedEventDetails = taskErrs()
	}
	return out
}
