package sfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/exactlyonce/transfers/internal/local/asl"
)

// lambdaInvokeParameters are the Parameters of a lambda:invoke task.
type lambdaInvokeParameters struct {
	FunctionName   string
	Payload        json.RawMessage
	InvocationType string
	Qualifier      string
}

// lambdaInvokeOutput is the output of a lambda:invoke task.
type lambdaInvokeOutput struct {
	ExecutedVersion     string              `json:"ExecutedVersion"`
	Payload             json.RawMessage     `json:"Payload"`
	SdkHTTPMetadata     sdkHTTPMetadata     `json:"SdkHttpMetadata"`
	SdkResponseMetadata sdkResponseMetadata `json:"SdkResponseMetadata"`
	StatusCode          int                 `json:"StatusCode"`
}

// lambdaErrorCause is the cause Step Functions reports for a function
// error: the error payload the function's runtime produced.
type lambdaErrorCause struct {
	ErrorMessage string   `json:"errorMessage"`
	ErrorType    string   `json:"errorType"`
	StackTrace   []string `json:"stackTrace,omitempty"`
}

var (
	// functionNamePattern matches a bare function name.
	functionNamePattern = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,64}$`)
	// qualifierPattern matches a version number or alias name.
	qualifierPattern = regexp.MustCompile(`^(\$LATEST|[a-zA-Z0-9-_]{1,128})$`)
)

// parseLambdaInvokeParameters validates the Parameters of a lambda:invoke
// task.
func parseLambdaInvokeParameters(raw json.RawMessage) (lambdaInvokeParameters, *asl.Error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return lambdaInvokeParameters{}, runtimeError("%s: Parameters must be a JSON object, got %s", ResourceLambdaInvoke, truncate(string(raw), 200))
	}
	var p lambdaInvokeParameters
	str := func(name string, dst *string) *asl.Error {
		v, ok := members[name]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return runtimeError("%s: Parameters.%s must be a string, got %s", ResourceLambdaInvoke, name, truncate(string(v), 200))
		}
		return nil
	}
	for name, v := range members {
		switch name {
		case "FunctionName":
			if err := str(name, &p.FunctionName); err != nil {
				return p, err
			}
		case "InvocationType":
			if err := str(name, &p.InvocationType); err != nil {
				return p, err
			}
		case "Qualifier":
			if err := str(name, &p.Qualifier); err != nil {
				return p, err
			}
		case "Payload":
			p.Payload = v
		default:
			return p, runtimeError("%s: Parameters.%s is not supported locally (supported: FunctionName, Payload, InvocationType, Qualifier)", ResourceLambdaInvoke, name)
		}
	}
	if p.FunctionName == "" {
		return p, runtimeError("%s: Parameters.FunctionName is required", ResourceLambdaInvoke)
	}
	if p.InvocationType != "" && p.InvocationType != "RequestResponse" {
		return p, runtimeError("%s: InvocationType %q is not supported locally; only RequestResponse is", ResourceLambdaInvoke, p.InvocationType)
	}
	return p, nil
}

// splitFunctionName reduces a FunctionName (name, name:qualifier, full or
// partial ARN, with or without qualifier) to the bare name and qualifier.
func splitFunctionName(functionName string) (name, qualifier string, ok bool) {
	parts := strings.Split(functionName, ":")
	var rest []string // name and optional qualifier
	switch {
	case parts[0] == "arn":
		// arn:aws:lambda:region:account:function:name[:qualifier]
		if len(parts) < 7 || len(parts) > 8 || parts[2] != "lambda" || parts[5] != "function" {
			return "", "", false
		}
		rest = parts[6:]
	case len(parts) >= 3:
		// account:function:name[:qualifier]
		if len(parts) > 4 || parts[1] != "function" {
			return "", "", false
		}
		rest = parts[2:]
	default:
		rest = parts
	}
	name = rest[0]
	if !functionNamePattern.MatchString(name) {
		return "", "", false
	}
	if len(rest) == 2 {
		qualifier = rest[1]
		if !qualifierPattern.MatchString(qualifier) {
			return "", "", false
		}
	}
	return name, qualifier, true
}

// invokeLambda runs the lambda:invoke integration.
func (t *Tasks) invokeLambda(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	p, aerr := parseLambdaInvokeParameters(raw)
	if aerr != nil {
		return nil, aerr
	}
	requestID := newUUID()
	name, qualifier, ok := splitFunctionName(p.FunctionName)
	if !ok {
		return nil, &asl.Error{
			Name:  "Lambda.InvalidParameterValueException",
			Cause: serviceCause("1 validation error detected: Value '"+p.FunctionName+"' at 'functionName' failed to satisfy constraint: Member must satisfy regular expression pattern", "Lambda", http.StatusBadRequest, requestID),
		}
	}
	if p.Qualifier != "" {
		if qualifier != "" && qualifier != p.Qualifier {
			return nil, &asl.Error{
				Name:  "Lambda.InvalidParameterValueException",
				Cause: serviceCause("The derived qualifier from the function name does not match the specified qualifier.", "Lambda", http.StatusBadRequest, requestID),
			}
		}
		if !qualifierPattern.MatchString(p.Qualifier) {
			return nil, &asl.Error{
				Name:  "Lambda.InvalidParameterValueException",
				Cause: serviceCause("1 validation error detected: Value '"+p.Qualifier+"' at 'qualifier' failed to satisfy constraint: Member must satisfy regular expression pattern", "Lambda", http.StatusBadRequest, requestID),
			}
		}
		qualifier = p.Qualifier
	}
	payload := []byte(p.Payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if t.cfg.Lambda == nil {
		return nil, &asl.Error{Name: "Lambda.ServiceException", Cause: serviceCause("no Lambda runtime is configured for the local Step Functions endpoint", "Lambda", http.StatusInternalServerError, requestID)}
	}

	if t.cfg.AuthorizeInvoke != nil {
		if err := t.cfg.AuthorizeInvoke(ctx, t.role, t.functionARN(name, qualifier)); err != nil {
			return nil, &asl.Error{
				Name:  "Lambda.AWSLambdaException",
				Cause: serviceCause(strings.TrimPrefix(err.Error(), "AccessDeniedException: ")+"; Error Code: AccessDeniedException", "AWSLambda", http.StatusForbidden, requestID),
			}
		}
	}
	result, fnErr, err := t.cfg.Lambda.InvokeFunction(ctx, name, payload)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	if err != nil {
		if errors.Is(err, ErrFunctionNotFound) {
			return nil, &asl.Error{
				Name:  "Lambda.ResourceNotFoundException",
				Cause: serviceCause("Function not found: "+t.functionARN(name, qualifier), "Lambda", http.StatusNotFound, requestID),
			}
		}
		t.log.Warn("lambda invoke failed", "function", name, "err", err)
		if se, ok := errors.AsType[*ServiceError](err); ok && se.Name != "" {
			return nil, &asl.Error{Name: se.Name, Cause: serviceCause(se.Message, "Lambda", http.StatusInternalServerError, requestID)}
		}
		return nil, &asl.Error{Name: "Lambda.ServiceException", Cause: serviceCause(err.Error(), "Lambda", http.StatusInternalServerError, requestID)}
	}
	if fnErr != nil {
		errorType := fnErr.Type
		if errorType == "" {
			errorType = "Lambda.Unknown"
		}
		cause, _ := marshalJSON(lambdaErrorCause{ErrorMessage: fnErr.Message, ErrorType: fnErr.Type, StackTrace: fnErr.StackTrace}) // strings only: never fails
		return nil, &asl.Error{Name: errorType, Cause: string(cause)}
	}

	resultPayload := lambdaPayload(result)
	executedVersion := "$LATEST"
	if _, err := strconv.ParseUint(qualifier, 10, 64); err == nil {
		executedVersion = qualifier
	}
	header := http.Header{
		"Connection":                     {"keep-alive"},
		"Content-Length":                 {strconv.Itoa(len(result))},
		"Content-Type":                   {"application/json"},
		"Date":                           {httpDate(t.cfg.Now())},
		"X-Amz-Executed-Version":         {executedVersion},
		"X-Amzn-Remapped-Content-Length": {"0"},
		"X-Amzn-Requestid":               {requestID},
		"X-Amzn-Trace-Id":                {"root=1-" + strings.ReplaceAll(newUUID(), "-", "")[:8] + "-" + strings.ReplaceAll(newUUID(), "-", "")[:24] + ";sampled=0"},
	}
	out, err := marshalJSON(lambdaInvokeOutput{
		ExecutedVersion:     executedVersion,
		Payload:             resultPayload,
		SdkHTTPMetadata:     newSDKHTTPMetadata(header, http.StatusOK),
		SdkResponseMetadata: sdkResponseMetadata{RequestID: requestID},
		StatusCode:          http.StatusOK,
	})
	if err != nil {
		return nil, runtimeError("%s: encode output of %s: %v", ResourceLambdaInvoke, name, err)
	}
	return out, nil
}

// lambdaPayload returns a function result as the Payload member: JSON as
// is, nothing as null, anything else as a JSON string.
func lambdaPayload(result []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(result)
	if len(trimmed) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	s, _ := marshalJSON(string(result)) // a string: never fails
	return s
}

// functionARN is the ARN Lambda reports for a function.
func (t *Tasks) functionARN(name, qualifier string) string {
	arn := "arn:aws:lambda:" + t.cfg.Region + ":" + t.cfg.AccountID + ":function:" + name
	if qualifier != "" {
		arn += ":" + qualifier
	}
	return arn
}
