package sfnlocal

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// targetPrefix prefixes the operation name in X-Amz-Target.
	targetPrefix = "AWSStepFunctions."
	// contentType is the awsJson1_0 media type of requests and responses.
	contentType = "application/x-amz-json-1.0"
	// maxRequestBytes bounds request bodies: a 256 KiB input, JSON-escaped,
	// plus the other members.
	maxRequestBytes = 8 * maxInputBytes
	// Page sizes of GetExecutionHistory and ListExecutions.
	defaultPageSize = 100
	maxPageSize     = 1000
)

// operation handles one Step Functions API operation: it decodes the
// request body and returns the response document.
type operation func(s *Server, body []byte) (any, *APIError)

var operations = map[string]operation{
	"StartExecution":       (*Server).opStartExecution,
	"DescribeExecution":    (*Server).opDescribeExecution,
	"StopExecution":        (*Server).opStopExecution,
	"GetExecutionHistory":  (*Server).opGetExecutionHistory,
	"ListExecutions":       (*Server).opListExecutions,
	"DescribeStateMachine": (*Server).opDescribeStateMachine,
	"ListStateMachines":    (*Server).opListStateMachines,
}

// ServeHTTP implements the Step Functions JSON protocol: POST / with
// X-Amz-Target: AWSStepFunctions.<Operation>. Request signatures are not
// verified.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := newUUID()
	// Set directly to keep the header's AWS spelling.
	w.Header()["x-amzn-RequestId"] = []string{requestID}

	target := r.Header.Get("X-Amz-Target")
	opName, _ := strings.CutPrefix(target, targetPrefix)
	op, known := operations[opName]
	switch {
	case r.Method != http.MethodPost:
		s.writeError(w, &APIError{Type: errUnknownOperation, Message: "only POST is supported", Status: http.StatusMethodNotAllowed})
		return
	case !strings.HasPrefix(target, targetPrefix) || !known:
		s.writeError(w, apiErrorf(errUnknownOperation, "Operation %q is not supported by the local Step Functions endpoint", target))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeError(w, apiErrorf(errValidation, "request body exceeds %d bytes", maxRequestBytes))
			return
		}
		s.writeError(w, apiErrorf(errSerialization, "read request body: %v", err))
		return
	}
	resp, apiErr := op(s, body)
	if apiErr != nil {
		s.log.Debug("request failed", "operation", opName, "type", apiErr.Type, "message", apiErr.Message, "requestId", requestID)
		s.writeError(w, apiErr)
		return
	}
	s.writeJSON(w, http.StatusOK, resp)
}

func (s *Server) writeError(w http.ResponseWriter, e *APIError) {
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	s.writeJSON(w, status, struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{e.Type, e.Message})
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		s.log.Error("encode response", "err", err)
		status = http.StatusInternalServerError
		body = []byte(`{"__type":"InternalFailure","message":"encode response"}`)
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		s.log.Debug("write response", "err", err)
	}
}

// decodeRequest decodes an operation's request document.
func decodeRequest(body []byte, v any) *APIError {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return apiErrorf(errSerialization, "invalid request body: %v", err)
	}
	return nil
}

func missing(member string) *APIError {
	return apiErrorf(errValidation, "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", member)
}

// epochSeconds is a timestamp encoded as the service does: seconds since
// the epoch with millisecond precision.
type epochSeconds time.Time

func (t epochSeconds) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return []byte(strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)), nil
}

func epochPtr(t time.Time) *epochSeconds {
	if t.IsZero() {
		return nil
	}
	e := epochSeconds(t)
	return &e
}

// pageToken is the decoded form of nextToken.
type pageToken struct {
	Op      string `json:"o"`
	ARN     string `json:"a"`
	Reverse bool   `json:"r,omitempty"`
	Status  string `json:"s,omitempty"`
	After   int64  `json:"c"`
}

func (t pageToken) encode() *string {
	b, _ := json.Marshal(t) // plain struct: never fails
	return ptr(base64.RawURLEncoding.EncodeToString(b))
}

// decodePageToken decodes token and checks it continues the same request
// (same operation, resource and ordering or filter).
func decodePageToken(token *string, want pageToken) (int64, *APIError) {
	if token == nil {
		return 0, nil
	}
	invalid := apiErrorf(errInvalidToken, "Invalid Token: '%s'", truncate(*token, 100))
	raw, err := base64.RawURLEncoding.DecodeString(*token)
	if err != nil {
		return 0, invalid
	}
	var got pageToken
	if err := json.Unmarshal(raw, &got); err != nil {
		return 0, invalid
	}
	if got.Op != want.Op || got.ARN != want.ARN || got.Reverse != want.Reverse || got.Status != want.Status || got.After <= 0 {
		return 0, invalid
	}
	return got.After, nil
}

func pageSize(maxResults *int) (int, *APIError) {
	if maxResults == nil || *maxResults == 0 {
		return defaultPageSize, nil
	}
	if *maxResults < 0 || *maxResults > maxPageSize {
		return 0, apiErrorf(errValidation, "1 validation error detected: Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value between 0 and %d", *maxResults, maxPageSize)
	}
	return *maxResults, nil
}

// StartExecution

type startExecutionRequest struct {
	StateMachineArn *string `json:"stateMachineArn"`
	Name            *string `json:"name"`
	Input           *string `json:"input"`
	TraceHeader     *string `json:"traceHeader"`
}

type startExecutionResponse struct {
	ExecutionArn string       `json:"executionArn"`
	StartDate    epochSeconds `json:"startDate"`
}

func (s *Server) opStartExecution(body []byte) (any, *APIError) {
	var req startExecutionRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if req.StateMachineArn == nil {
		return nil, missing("stateMachineArn")
	}
	e, apiErr := s.startExecution(startRequest{stateMachineARN: *req.StateMachineArn, name: req.Name, input: req.Input})
	if apiErr != nil {
		return nil, apiErr
	}
	return startExecutionResponse{ExecutionArn: e.arn, StartDate: epochSeconds(e.startDate)}, nil
}

// DescribeExecution

type describeExecutionRequest struct {
	ExecutionArn *string `json:"executionArn"`
	IncludedData *string `json:"includedData"`
}

type describeExecutionResponse struct {
	ExecutionArn        string        `json:"executionArn"`
	StateMachineArn     string        `json:"stateMachineArn"`
	Name                string        `json:"name"`
	Status              string        `json:"status"`
	StartDate           epochSeconds  `json:"startDate"`
	StopDate            *epochSeconds `json:"stopDate,omitempty"`
	Input               *string       `json:"input,omitempty"`
	InputDetails        *dataDetails  `json:"inputDetails,omitempty"`
	Output              *string       `json:"output,omitempty"`
	OutputDetails       *dataDetails  `json:"outputDetails,omitempty"`
	Error               *string       `json:"error,omitempty"`
	Cause               *string       `json:"cause,omitempty"`
	RedriveCount        int           `json:"redriveCount"`
	RedriveStatus       string        `json:"redriveStatus"`
	RedriveStatusReason *string       `json:"redriveStatusReason,omitempty"`
}

// includeData reports whether includedData asks for input and output.
func includeData(includedData *string) (bool, *APIError) {
	if includedData == nil {
		return true, nil
	}
	switch *includedData {
	case "ALL_DATA":
		return true, nil
	case "METADATA_ONLY":
		return false, nil
	}
	return false, apiErrorf(errValidation, "1 validation error detected: Value '%s' at 'includedData' failed to satisfy constraint: Member must satisfy enum value set: [ALL_DATA, METADATA_ONLY]", *includedData)
}

func (s *Server) opDescribeExecution(body []byte) (any, *APIError) {
	var req describeExecutionRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if req.ExecutionArn == nil {
		return nil, missing("executionArn")
	}
	withData, apiErr := includeData(req.IncludedData)
	if apiErr != nil {
		return nil, apiErr
	}
	e, apiErr := s.lookup(*req.ExecutionArn)
	if apiErr != nil {
		return nil, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := describeExecutionResponse{
		ExecutionArn:    e.arn,
		StateMachineArn: e.sm.arn,
		Name:            e.name,
		Status:          e.status,
		StartDate:       epochSeconds(e.startDate),
		StopDate:        epochPtr(e.stopDate),
		Error:           e.errorCode,
		Cause:           e.cause,
	}
	resp.RedriveStatus, resp.RedriveStatusReason = redriveStatus(e.status)
	if withData {
		resp.Input = ptr(e.input)
		resp.InputDetails = &dataDetails{Included: true}
		if e.output != nil {
			resp.Output = e.output
			resp.OutputDetails = &dataDetails{Included: true}
		}
	}
	return resp, nil
}

// StopExecution

type stopExecutionRequest struct {
	ExecutionArn *string `json:"executionArn"`
	Error        *string `json:"error"`
	Cause        *string `json:"cause"`
}

type stopExecutionResponse struct {
	StopDate epochSeconds `json:"stopDate"`
}

func (s *Server) opStopExecution(body []byte) (any, *APIError) {
	var req stopExecutionRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if req.ExecutionArn == nil {
		return nil, missing("executionArn")
	}
	if req.Error != nil && len(*req.Error) > 256 {
		return nil, apiErrorf(errValidation, "1 validation error detected: Value at 'error' failed to satisfy constraint: Member must have length less than or equal to 256")
	}
	if req.Cause != nil && len(*req.Cause) > 32768 {
		return nil, apiErrorf(errValidation, "1 validation error detected: Value at 'cause' failed to satisfy constraint: Member must have length less than or equal to 32768")
	}
	stopDate, apiErr := s.stopExecution(*req.ExecutionArn, req.Error, req.Cause)
	if apiErr != nil {
		return nil, apiErr
	}
	return stopExecutionResponse{StopDate: epochSeconds(stopDate)}, nil
}

// GetExecutionHistory

type getExecutionHistoryRequest struct {
	ExecutionArn         *string `json:"executionArn"`
	IncludeExecutionData *bool   `json:"includeExecutionData"`
	MaxResults           *int    `json:"maxResults"`
	NextToken            *string `json:"nextToken"`
	ReverseOrder         bool    `json:"reverseOrder"`
}

type getExecutionHistoryResponse struct {
	Events    []historyEventJSON `json:"events"`
	NextToken *string            `json:"nextToken,omitempty"`
}

func (s *Server) opGetExecutionHistory(body []byte) (any, *APIError) {
	var req getExecutionHistoryRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if req.ExecutionArn == nil {
		return nil, missing("executionArn")
	}
	limit, apiErr := pageSize(req.MaxResults)
	if apiErr != nil {
		return nil, apiErr
	}
	e, apiErr := s.lookup(*req.ExecutionArn)
	if apiErr != nil {
		return nil, apiErr
	}
	tokenKey := pageToken{Op: "GetExecutionHistory", ARN: e.arn, Reverse: req.ReverseOrder}
	after, apiErr := decodePageToken(req.NextToken, tokenKey)
	if apiErr != nil {
		return nil, apiErr
	}
	withData := req.IncludeExecutionData == nil || *req.IncludeExecutionData

	s.mu.Lock()
	events := slices.Clone(e.history)
	s.mu.Unlock()

	if req.ReverseOrder {
		slices.Reverse(events)
	}
	if after > 0 {
		// The token holds the id of the last event returned.
		i := slices.IndexFunc(events, func(ev historyEvent) bool { return ev.id == after })
		if i < 0 {
			return nil, apiErrorf(errInvalidToken, "Invalid Token: '%s'", truncate(*req.NextToken, 100))
		}
		events = events[i+1:]
	}
	resp := getExecutionHistoryResponse{Events: make([]historyEventJSON, 0, min(limit, len(events)))}
	if len(events) > limit {
		events = events[:limit]
		tokenKey.After = events[limit-1].id
		resp.NextToken = tokenKey.encode()
	}
	for _, ev := range events {
		resp.Events = append(resp.Events, s.historyEventJSON(ev, e.sm.roleARN, withData))
	}
	return resp, nil
}

// ListExecutions

type listExecutionsRequest struct {
	StateMachineArn *string `json:"stateMachineArn"`
	StatusFilter    *string `json:"statusFilter"`
	MaxResults      *int    `json:"maxResults"`
	NextToken       *string `json:"nextToken"`
	MapRunArn       *string `json:"mapRunArn"`
	RedriveFilter   *string `json:"redriveFilter"`
}

type executionListItem struct {
	ExecutionArn    string        `json:"executionArn"`
	StateMachineArn string        `json:"stateMachineArn"`
	Name            string        `json:"name"`
	Status          string        `json:"status"`
	StartDate       epochSeconds  `json:"startDate"`
	StopDate        *epochSeconds `json:"stopDate,omitempty"`
	RedriveCount    int           `json:"redriveCount"`
}

type listExecutionsResponse struct {
	Executions []executionListItem `json:"executions"`
	NextToken  *string             `json:"nextToken,omitempty"`
}

var executionStatuses = []string{StatusRunning, StatusSucceeded, StatusFailed, StatusTimedOut, StatusAborted, "PENDING_REDRIVE"}

func (s *Server) opListExecutions(body []byte) (any, *APIError) {
	var req listExecutionsRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if req.MapRunArn != nil {
		return nil, apiErrorf(errValidation, "mapRunArn is not supported: the local endpoint runs no Distributed Map")
	}
	if req.StateMachineArn == nil {
		return nil, apiErrorf(errValidation, "Must provide a StateMachine ARN or MapRun ARN")
	}
	status := ""
	if req.StatusFilter != nil {
		status = *req.StatusFilter
		if !slices.Contains(executionStatuses, status) {
			return nil, apiErrorf(errValidation, "1 validation error detected: Value '%s' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set: [%s]", status, strings.Join(executionStatuses, ", "))
		}
	}
	redriven := false
	if req.RedriveFilter != nil {
		switch *req.RedriveFilter {
		case "REDRIVEN":
			redriven = true
		case "NOT_REDRIVEN":
		default:
			return nil, apiErrorf(errValidation, "1 validation error detected: Value '%s' at 'redriveFilter' failed to satisfy constraint: Member must satisfy enum value set: [REDRIVEN, NOT_REDRIVEN]", *req.RedriveFilter)
		}
	}
	limit, apiErr := pageSize(req.MaxResults)
	if apiErr != nil {
		return nil, apiErr
	}
	if _, apiErr := parseStateMachineARN(*req.StateMachineArn); apiErr != nil {
		return nil, apiErr
	}
	tokenKey := pageToken{Op: "ListExecutions", ARN: *req.StateMachineArn, Status: status}
	before, apiErr := decodePageToken(req.NextToken, tokenKey)
	if apiErr != nil {
		return nil, apiErr
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.machines[*req.StateMachineArn]
	if !ok {
		return nil, apiErrorf(errStateMachineDoesNotExist, "State Machine Does Not Exist: '%s'", *req.StateMachineArn)
	}
	var matches []*execution
	for _, e := range s.executions {
		if e.sm != sm || (status != "" && e.status != status) || (before > 0 && e.seq >= before) || redriven {
			continue
		}
		matches = append(matches, e)
	}
	// Most recently started first, as the service lists them.
	slices.SortFunc(matches, func(a, b *execution) int { return cmp.Compare(b.seq, a.seq) })
	resp := listExecutionsResponse{Executions: []executionListItem{}}
	if len(matches) > limit {
		matches = matches[:limit]
		tokenKey.After = matches[limit-1].seq
		resp.NextToken = tokenKey.encode()
	}
	for _, e := range matches {
		resp.Executions = append(resp.Executions, executionListItem{
			ExecutionArn:    e.arn,
			StateMachineArn: sm.arn,
			Name:            e.name,
			Status:          e.status,
			StartDate:       epochSeconds(e.startDate),
			StopDate:        epochPtr(e.stopDate),
		})
	}
	return resp, nil
}

// DescribeStateMachine

type describeStateMachineRequest struct {
	StateMachineArn *string `json:"stateMachineArn"`
	IncludedData    *string `json:"includedData"`
}

type loggingConfiguration struct {
	Level                string `json:"level"`
	IncludeExecutionData bool   `json:"includeExecutionData"`
}

type tracingConfiguration struct {
	Enabled bool `json:"enabled"`
}

type describeStateMachineResponse struct {
	StateMachineArn      string               `json:"stateMachineArn"`
	Name                 string               `json:"name"`
	Status               string               `json:"status"`
	Definition           string               `json:"definition"`
	RoleArn              string               `json:"roleArn"`
	Type                 string               `json:"type"`
	CreationDate         epochSeconds         `json:"creationDate"`
	LoggingConfiguration loggingConfiguration `json:"loggingConfiguration"`
	TracingConfiguration tracingConfiguration `json:"tracingConfiguration"`
}

func (s *Server) findStateMachine(arn *string) (*stateMachine, *APIError) {
	if arn == nil {
		return nil, missing("stateMachineArn")
	}
	if _, apiErr := parseStateMachineARN(*arn); apiErr != nil {
		return nil, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.machines[*arn]
	if !ok {
		return nil, apiErrorf(errStateMachineDoesNotExist, "State Machine Does Not Exist: '%s'", *arn)
	}
	return sm, nil
}

func (s *Server) opDescribeStateMachine(body []byte) (any, *APIError) {
	var req describeStateMachineRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if _, apiErr := includeData(req.IncludedData); apiErr != nil {
		return nil, apiErr
	}
	sm, apiErr := s.findStateMachine(req.StateMachineArn)
	if apiErr != nil {
		return nil, apiErr
	}
	return describeStateMachineResponse{
		StateMachineArn:      sm.arn,
		Name:                 sm.name,
		Status:               "ACTIVE",
		Definition:           sm.definition,
		RoleArn:              sm.roleARN,
		Type:                 "STANDARD",
		CreationDate:         epochSeconds(sm.created),
		LoggingConfiguration: loggingConfiguration{Level: "OFF"},
	}, nil
}

// ListStateMachines

type stateMachineListItem struct {
	StateMachineArn string       `json:"stateMachineArn"`
	Name            string       `json:"name"`
	Type            string       `json:"type"`
	CreationDate    epochSeconds `json:"creationDate"`
}

type listStateMachinesResponse struct {
	StateMachines []stateMachineListItem `json:"stateMachines"`
}

func (s *Server) opListStateMachines(body []byte) (any, *APIError) {
	var req struct {
		NextToken *string `json:"nextToken"`
	}
	if err := decodeRequest(body, &req); err != nil {
		return nil, err
	}
	if req.NextToken != nil {
		return nil, apiErrorf(errInvalidToken, "Invalid Token: '%s'", truncate(*req.NextToken, 100))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := listStateMachinesResponse{StateMachines: []stateMachineListItem{}}
	for _, sm := range s.machines {
		resp.StateMachines = append(resp.StateMachines, stateMachineListItem{
			StateMachineArn: sm.arn, Name: sm.name, Type: "STANDARD", CreationDate: epochSeconds(sm.created),
		})
	}
	slices.SortFunc(resp.StateMachines, func(a, b stateMachineListItem) int { return strings.Compare(a.Name, b.Name) })
	return resp, nil
}
