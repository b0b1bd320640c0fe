package sfnlocal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/transfers/internal/local/asl"
)

const (
	// dynamoDBTargetPrefix prefixes the operation in X-Amz-Target.
	dynamoDBTargetPrefix = "DynamoDB_20120810."
	// dynamoDBClientError names failures to reach DynamoDB at all.
	dynamoDBClientError = "DynamoDB.AmazonDynamoDBException"
	// maxDynamoDBResponseBytes bounds a response (an item is at most
	// 400 KB; the rest is metadata).
	maxDynamoDBResponseBytes = 4 << 20
)

// callDynamoDB runs a dynamodb:* integration: Parameters are the API
// request, sent as is; the output is the API response plus the SDK
// metadata Step Functions adds.
func (t *Tasks) callDynamoDB(ctx context.Context, operation string, parameters json.RawMessage) (json.RawMessage, error) {
	if !isJSONObject(parameters) {
		return nil, runtimeError("dynamodb:%s: Parameters must be a JSON object, got %s", lowerFirst(operation), truncate(string(parameters), 200))
	}
	if t.cfg.DynamoDB.Endpoint == "" {
		return nil, &asl.Error{Name: dynamoDBClientError, Cause: "Unable to execute HTTP request: no DynamoDB endpoint is configured for the local Step Functions endpoint"}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(t.cfg.DynamoDB.Endpoint, "/")+"/", bytes.NewReader(parameters))
	if err != nil {
		return nil, &asl.Error{Name: dynamoDBClientError, Cause: fmt.Sprintf("Unable to execute HTTP request: %v", err)}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Amz-Target", dynamoDBTargetPrefix+operation)
	sum := sha256.Sum256(parameters)
	creds := aws.Credentials{
		AccessKeyID:     t.cfg.DynamoDB.AccessKeyID,
		SecretAccessKey: t.cfg.DynamoDB.SecretAccessKey,
		SessionToken:    t.cfg.DynamoDB.SessionToken,
	}
	if t.cfg.RoleCredentials != nil {
		creds = t.cfg.RoleCredentials(t.role)
	}
	if err := t.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", t.cfg.Region, t.cfg.Now()); err != nil {
		return nil, &asl.Error{Name: dynamoDBClientError, Cause: fmt.Sprintf("Unable to sign request: %v", err)}
	}

	resp, err := t.cfg.DynamoDB.HTTPClient.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		t.log.Warn("dynamodb request failed", "operation", operation, "err", err)
		return nil, &asl.Error{Name: dynamoDBClientError, Cause: fmt.Sprintf("Unable to execute HTTP request: %v", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDynamoDBResponseBytes))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &asl.Error{Name: dynamoDBClientError, Cause: fmt.Sprintf("Unable to read the response: %v", err)}
	}
	requestID := resp.Header.Get("X-Amzn-Requestid")

	if resp.StatusCode != http.StatusOK {
		return nil, dynamoDBError(resp.StatusCode, requestID, body)
	}
	if !isJSONObject(body) {
		return nil, &asl.Error{Name: dynamoDBClientError, Cause: serviceCause("Unable to parse the response: "+truncate(string(body), 200), "DynamoDb", resp.StatusCode, requestID)}
	}
	md, _ := marshalJSON(newSDKHTTPMetadata(resp.Header, resp.StatusCode)) // maps of strings: never fails
	rmd, _ := marshalJSON(sdkResponseMetadata{RequestID: requestID})       // never fails
	return withMembers(body, member{"SdkHttpMetadata", md}, member{"SdkResponseMetadata", rmd}), nil
}

// isJSONObject reports whether raw is one valid JSON object.
func isJSONObject(raw []byte) bool {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}

// member is one name and JSON value of an object.
type member struct {
	name  string
	value json.RawMessage
}

// withMembers returns the JSON object obj (valid, see isJSONObject) with
// members added at its end: the service's answer as it came, plus what Step
// Functions adds to it. The response of DynamoDB never has these names.
func withMembers(obj []byte, members ...member) json.RawMessage {
	obj = bytes.TrimSpace(obj)
	inner := bytes.TrimSpace(obj[1 : len(obj)-1])
	size := len(obj)
	for _, m := range members {
		size += len(m.name) + len(m.value) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	out = append(out, inner...)
	for i, m := range members {
		if i > 0 || len(inner) > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, m.name)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}')
}

// dynamoDBError maps a DynamoDB error response to the error Step Functions
// reports: DynamoDB.<exception>, with the message, status and request ID as
// cause.
func dynamoDBError(status int, requestID string, body []byte) *asl.Error {
	var e struct {
		Type         string `json:"__type"`
		Message      string `json:"message"`
		MessageUpper string `json:"Message"`
	}
	_ = json.Unmarshal(body, &e) // a body that is not an error document leaves e empty
	message := e.Message
	if message == "" {
		message = e.MessageUpper
	}
	if message == "" {
		message = strings.TrimSpace(truncate(string(body), 200))
	}
	name := dynamoDBClientError
	if _, short, _ := strings.Cut(e.Type, "#"); short != "" {
		name = "DynamoDB." + short
	} else if e.Type != "" {
		name = "DynamoDB." + e.Type
	}
	return &asl.Error{Name: name, Cause: serviceCause(message, "DynamoDb", status, requestID)}
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
