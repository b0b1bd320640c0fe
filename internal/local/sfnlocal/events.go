package sfnlocal

import (
	"context"
	"fmt"
)

// StatusChangeDetailType is the detail-type of execution status change
// events; their source is StatusChangeSource.
const (
	StatusChangeDetailType = "Step Functions Execution Status Change"
	StatusChangeSource     = "aws.states"
)

// statusChangeEvent is the EventBridge event Step Functions sends when an
// execution changes status.
type statusChangeEvent struct {
	Version    string             `json:"version"`
	ID         string             `json:"id"`
	DetailType string             `json:"detail-type"`
	Source     string             `json:"source"`
	Account    string             `json:"account"`
	Time       string             `json:"time"`
	Region     string             `json:"region"`
	Resources  []string           `json:"resources"`
	Detail     statusChangeDetail `json:"detail"`
}

type statusChangeDetail struct {
	ExecutionArn        string       `json:"executionArn"`
	StateMachineArn     string       `json:"stateMachineArn"`
	Name                string       `json:"name"`
	Status              string       `json:"status"`
	StartDate           int64        `json:"startDate"`
	StopDate            *int64       `json:"stopDate"`
	Input               string       `json:"input"`
	InputDetails        dataDetails  `json:"inputDetails"`
	Output              *string      `json:"output"`
	OutputDetails       *dataDetails `json:"outputDetails"`
	RedriveCount        int          `json:"redriveCount"`
	RedriveDate         *int64       `json:"redriveDate"`
	RedriveStatus       string       `json:"redriveStatus"`
	RedriveStatusReason *string      `json:"redriveStatusReason"`
	Error               *string      `json:"error"`
	Cause               *string      `json:"cause"`
}

// dataDetails is the inputDetails / outputDetails object of events and
// DescribeExecution.
type dataDetails struct {
	Included bool `json:"included"`
}

// redriveStatus reports the redrive fields Step Functions attaches to an
// execution with the given status: closed executions other than SUCCEEDED
// are redrivable.
func redriveStatus(status string) (string, *string) {
	switch status {
	case StatusFailed, StatusTimedOut, StatusAborted:
		return "REDRIVABLE", nil
	default:
		return "NOT_REDRIVABLE", ptr(fmt.Sprintf("Execution is %s and cannot be redriven", status))
	}
}

// statusChangeEventJSON builds the status change event of info.
func (s *Server) statusChangeEventJSON(info ExecutionInfo) ([]byte, error) {
	at := info.StartDate
	detail := statusChangeDetail{
		ExecutionArn:    info.ExecutionARN,
		StateMachineArn: info.StateMachineARN,
		Name:            info.Name,
		Status:          info.Status,
		StartDate:       info.StartDate.UnixMilli(),
		Input:           info.Input,
		InputDetails:    dataDetails{Included: true},
		Error:           nonEmpty(info.Error),
		Cause:           nonEmpty(info.Cause),
	}
	if !info.StopDate.IsZero() {
		at = info.StopDate
		detail.StopDate = ptr(info.StopDate.UnixMilli())
	}
	if info.Status == StatusSucceeded {
		detail.Output = ptr(info.Output)
		detail.OutputDetails = &dataDetails{Included: true}
	}
	detail.RedriveStatus, detail.RedriveStatusReason = redriveStatus(info.Status)
	ev := statusChangeEvent{
		Version:    "0",
		ID:         newUUID(),
		DetailType: StatusChangeDetailType,
		Source:     StatusChangeSource,
		Account:    s.cfg.AccountID,
		Time:       at.UTC().Format("2006-01-02T15:04:05Z"),
		Region:     s.cfg.Region,
		Resources:  []string{info.ExecutionARN},
		Detail:     detail,
	}
	return marshalJSON(ev)
}

// publishStatus sends the status change event of info to the Publisher,
// logging failures: like EventBridge delivery, it is best effort.
func (s *Server) publishStatus(info ExecutionInfo) {
	if s.cfg.Publisher == nil {
		return
	}
	event, err := s.statusChangeEventJSON(info)
	if err != nil {
		s.log.Error("encode status change event", "execution", info.ExecutionARN, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := s.cfg.Publisher.Publish(ctx, event); err != nil {
		s.log.Error("publish status change event", "execution", info.ExecutionARN, "status", info.Status, "err", err)
	}
}
