package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/local/asl"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
)

// requireDynamoDB returns the DynamoDB Local endpoint TestMain started.
func requireDynamoDB(t *testing.T) string {
	t.Helper()
	endpoint := os.Getenv(ddbtest.EnvEndpoint)
	if endpoint == "" {
		t.Fatal("no DynamoDB Local endpoint: TestMain did not start one")
	}
	return endpoint
}

// createTable creates a table with a string hash key "pk" in DynamoDB
// Local, named after the test, and deletes it at cleanup.
func createTable(t *testing.T, endpoint string) string {
	t.Helper()
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	name := "sfnlocal-" + strings.ReplaceAll(newUUID(), "-", "")
	_, err := client.CreateTable(testContext(t), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	return name
}

var dynamoDBCausePattern = regexp.MustCompile(`^(.+) \(Service: DynamoDb, Status Code: 400, Request ID: ([0-9a-f-]{36})\)$`)

func TestDynamoDBIntegration(t *testing.T) {
	endpoint := requireDynamoDB(t)
	table := createTable(t, endpoint)
	tasks := NewTasks(Config{DynamoDB: DynamoDBConfig{Endpoint: endpoint}, Logger: quietLogger()})

	// The steps run in order against the same table.
	steps := []struct {
		name     string
		resource string
		params   string
		// wantMembers are output members (besides the SDK metadata) and
		// their exact values; "-" means absent.
		wantMembers map[string]string
		wantErr     string // asl.Error name
		wantMessage string // start of the cause
	}{
		{
			name: "putItem", resource: ResourceDynamoDBPutItem,
			params:      `{"TableName":"` + table + `","Item":{"pk":{"S":"acct-1"},"balance":{"N":"100"}},"ConditionExpression":"attribute_not_exists(pk)"}`,
			wantMembers: map[string]string{"Attributes": "-"},
		},
		{
			name: "putItem again fails its condition", resource: ResourceDynamoDBPutItem,
			params:  `{"TableName":"` + table + `","Item":{"pk":{"S":"acct-1"},"balance":{"N":"0"}},"ConditionExpression":"attribute_not_exists(pk)"}`,
			wantErr: "DynamoDB.ConditionalCheckFailedException", wantMessage: "The conditional request failed",
		},
		{
			name: "getItem", resource: ResourceDynamoDBGetItem,
			params:      `{"TableName":"` + table + `","Key":{"pk":{"S":"acct-1"}},"ConsistentRead":true}`,
			wantMembers: map[string]string{"Item": `{"pk":{"S":"acct-1"},"balance":{"N":"100"}}`},
		},
		{
			name: "updateItem debits", resource: ResourceDynamoDBUpdateItem,
			params: `{"TableName":"` + table + `","Key":{"pk":{"S":"acct-1"}},
				"UpdateExpression":"SET balance = balance - :amt","ConditionExpression":"balance >= :amt",
				"ExpressionAttributeValues":{":amt":{"N":"30"}},"ReturnValues":"ALL_NEW"}`,
			wantMembers: map[string]string{"Attributes": `{"pk":{"S":"acct-1"},"balance":{"N":"70"}}`},
		},
		{
			name: "updateItem with insufficient balance", resource: ResourceDynamoDBUpdateItem,
			params: `{"TableName":"` + table + `","Key":{"pk":{"S":"acct-1"}},
				"UpdateExpression":"SET balance = balance - :amt","ConditionExpression":"balance >= :amt",
				"ExpressionAttributeValues":{":amt":{"N":"1000"}}}`,
			wantErr: "DynamoDB.ConditionalCheckFailedException", wantMessage: "The conditional request failed",
		},
		{
			name: "getItem sees only the successful debit", resource: ResourceDynamoDBGetItem,
			params:      `{"TableName":"` + table + `","Key":{"pk":{"S":"acct-1"}},"ConsistentRead":true}`,
			wantMembers: map[string]string{"Item": `{"pk":{"S":"acct-1"},"balance":{"N":"70"}}`},
		},
		{
			name: "getItem of a missing item", resource: ResourceDynamoDBGetItem,
			params:      `{"TableName":"` + table + `","Key":{"pk":{"S":"nobody"}}}`,
			wantMembers: map[string]string{"Item": "-"},
		},
		{
			name: "deleteItem", resource: ResourceDynamoDBDeleteItem,
			params:      `{"TableName":"` + table + `","Key":{"pk":{"S":"acct-1"}},"ReturnValues":"ALL_OLD"}`,
			wantMembers: map[string]string{"Attributes": `{"pk":{"S":"acct-1"},"balance":{"N":"70"}}`},
		},
		{
			name: "missing table", resource: ResourceDynamoDBGetItem,
			params:  `{"TableName":"no-such-table","Key":{"pk":{"S":"x"}}}`,
			wantErr: "DynamoDB.ResourceNotFoundException", wantMessage: "Cannot do operations on a non-existent table",
		},
		{
			name: "invalid request", resource: ResourceDynamoDBPutItem,
			params:  `{"TableName":"` + table + `"}`,
			wantErr: "DynamoDB.ValidationException",
		},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tasks.Invoke(testContext(t), tc.resource, json.RawMessage(tc.params))
			if tc.wantErr != "" {
				var aerr *asl.Error
				if !errors.As(err, &aerr) || aerr.Name != tc.wantErr {
					t.Fatalf("Invoke = %s, %v; want *asl.Error %s", out, err, tc.wantErr)
				}
				m := dynamoDBCausePattern.FindStringSubmatch(aerr.Cause)
				if m == nil || !strings.HasPrefix(m[1], tc.wantMessage) {
					t.Errorf("Cause = %q, want %q (Service: DynamoDb, Status Code: 400, Request ID: <id>)", aerr.Cause, tc.wantMessage)
				}
				return
			}
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(out, &members); err != nil {
				t.Fatalf("output is not a JSON object: %s", out)
			}
			checkSDKMetadata(t, members)
			for name, want := range tc.wantMembers {
				got, ok := members[name]
				if want == "-" {
					if ok {
						t.Errorf("%s = %s, want absent", name, got)
					}
					continue
				}
				if !ok {
					t.Errorf("output %s lacks %s", out, name)
					continue
				}
				assertJSONEqual(t, name, string(got), want)
			}
		})
	}
}

// checkSDKMetadata checks the SdkHttpMetadata and SdkResponseMetadata Step
// Functions adds to DynamoDB responses.
func checkSDKMetadata(t *testing.T, members map[string]json.RawMessage) {
	t.Helper()
	var md struct {
		AllHttpHeaders map[string][]string
		HttpHeaders    map[string]string
		HttpStatusCode int
	}
	var rmd struct{ RequestId string }
	if err := json.Unmarshal(members["SdkHttpMetadata"], &md); err != nil || md.HttpStatusCode != 200 {
		t.Errorf("SdkHttpMetadata = %s", members["SdkHttpMetadata"])
	}
	if err := json.Unmarshal(members["SdkResponseMetadata"], &rmd); err != nil || rmd.RequestId == "" {
		t.Errorf("SdkResponseMetadata = %s", members["SdkResponseMetadata"])
	}
	if md.HttpHeaders["x-amzn-RequestId"] != rmd.RequestId {
		t.Errorf("x-amzn-RequestId header %q != RequestId %q", md.HttpHeaders["x-amzn-RequestId"], rmd.RequestId)
	}
	if ct := md.AllHttpHeaders["Content-Type"]; len(ct) != 1 || ct[0] != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type header = %v", ct)
	}
}

func TestDynamoDBRequest(t *testing.T) {
	// A recorder checks what is sent: the real responses are covered by
	// TestDynamoDBIntegration against DynamoDB Local.
	var (
		mu  sync.Mutex
		got *http.Request
		raw []byte
	)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, raw = r, body
		mu.Unlock()
		w.Header()["x-amzn-RequestId"] = []string{"REQ123"}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"Item":{"pk":{"S":"a"}}}`))
	}))
	t.Cleanup(rec.Close)

	tasks := NewTasks(Config{
		Region:   "eu-west-1",
		DynamoDB: DynamoDBConfig{Endpoint: rec.URL + "/", AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", SessionToken: "token"},
		Logger:   quietLogger(),
	})
	params := `{"TableName":"T","Key":{"pk":{"S":"a"}}}`
	out, err := tasks.Invoke(testContext(t), ResourceDynamoDBGetItem, json.RawMessage(params))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	checks := []struct {
		name     string
		got      string
		want     string
		contains bool
	}{
		{name: "method", got: got.Method, want: http.MethodPost},
		{name: "path", got: got.URL.Path, want: "/"},
		{name: "target", got: got.Header.Get("X-Amz-Target"), want: "DynamoDB_20120810.GetItem"},
		{name: "content type", got: got.Header.Get("Content-Type"), want: "application/x-amz-json-1.0"},
		{name: "body", got: string(raw), want: params},
		{name: "signature algorithm", got: got.Header.Get("Authorization"), want: "AWS4-HMAC-SHA256 Credential=AKIDTEST/", contains: true},
		{name: "signature scope", got: got.Header.Get("Authorization"), want: "/eu-west-1/dynamodb/aws4_request", contains: true},
		{name: "signed headers", got: got.Header.Get("Authorization"), want: "x-amz-target", contains: true},
		{name: "session token", got: got.Header.Get("X-Amz-Security-Token"), want: "token"},
		{name: "signing date", got: got.Header.Get("X-Amz-Date"), want: "T", contains: true},
		{name: "output", got: string(out), want: `"RequestId":"REQ123"`, contains: true},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.contains && !strings.Contains(c.got, c.want) || !c.contains && c.got != c.want {
				t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
			}
		})
	}
}

func TestDynamoDBClientErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name      string
		endpoint  string
		params    string
		wantName  string
		wantCause string
	}{
		{name: "unreachable endpoint", endpoint: closed, params: `{"TableName":"T"}`, wantName: "DynamoDB.AmazonDynamoDBException", wantCause: "Unable to execute HTTP request"},
		{name: "no endpoint configured", params: `{"TableName":"T"}`, wantName: "DynamoDB.AmazonDynamoDBException", wantCause: "no DynamoDB endpoint"},
		{name: "parameters not an object", endpoint: closed, params: `"T"`, wantName: "States.Runtime", wantCause: "dynamodb:getItem: Parameters must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tasks := NewTasks(Config{DynamoDB: DynamoDBConfig{Endpoint: tc.endpoint}, Logger: quietLogger()})
			_, err := tasks.Invoke(testContext(t), ResourceDynamoDBGetItem, json.RawMessage(tc.params))
			var aerr *asl.Error
			if !errors.As(err, &aerr) || aerr.Name != tc.wantName || !strings.Contains(aerr.Cause, tc.wantCause) {
				t.Errorf("err = %v, want %s containing %q", err, tc.wantName, tc.wantCause)
			}
		})
	}

	t.Run("cancelled context is not a task error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testContext(t))
		cancel()
		tasks := NewTasks(Config{DynamoDB: DynamoDBConfig{Endpoint: closed}, Logger: quietLogger()})
		_, err := tasks.Invoke(ctx, ResourceDynamoDBGetItem, json.RawMessage(`{}`))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestDynamoDBErrorMapping(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		wantName  string
		wantCause string
	}{
		{
			name: "qualified type", status: 400,
			body:     `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"Rate exceeded"}`,
			wantName: "DynamoDB.ProvisionedThroughputExceededException", wantCause: "Rate exceeded (Service: DynamoDb, Status Code: 400, Request ID: R1)",
		},
		{
			name: "capitalised Message", status: 400,
			body:     `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Message":"The conditional request failed"}`,
			wantName: "DynamoDB.ConditionalCheckFailedException", wantCause: "The conditional request failed (Service: DynamoDb, Status Code: 400, Request ID: R1)",
		},
		{
			name: "bare type", status: 500, body: `{"__type":"InternalServerError","message":"oops"}`,
			wantName: "DynamoDB.InternalServerError", wantCause: "oops (Service: DynamoDb, Status Code: 500, Request ID: R1)",
		},
		{
			name: "not an error document", status: 502, body: `Bad Gateway`,
			wantName: "DynamoDB.AmazonDynamoDBException", wantCause: "Bad Gateway (Service: DynamoDb, Status Code: 502, Request ID: R1)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := dynamoDBError(tc.status, "R1", []byte(tc.body))
			if got.Name != tc.wantName || got.Cause != tc.wantCause {
				t.Errorf("got %q / %q, want %q / %q", got.Name, got.Cause, tc.wantName, tc.wantCause)
			}
		})
	}
}

func TestWithMembers(t *testing.T) {
	md := member{"SdkHttpMetadata", json.RawMessage(`{"HttpStatusCode":200}`)}
	rmd := member{"SdkResponseMetadata", json.RawMessage(`{"RequestId":"R1"}`)}
	tests := []struct {
		name, obj string
		want      string
	}{
		{name: "empty answer", obj: `{}`, want: `{"SdkHttpMetadata":{"HttpStatusCode":200},"SdkResponseMetadata":{"RequestId":"R1"}}`},
		{name: "answer with members", obj: `{"Attributes":{"pk":{"S":"a"}}}`,
			want: `{"Attributes":{"pk":{"S":"a"}},"SdkHttpMetadata":{"HttpStatusCode":200},"SdkResponseMetadata":{"RequestId":"R1"}}`},
		{name: "spaces around", obj: " \n{ \"Item\" : {} }\n", want: `{"Item" : {},"SdkHttpMetadata":{"HttpStatusCode":200},"SdkResponseMetadata":{"RequestId":"R1"}}`},
		{name: "spaces inside an empty object", obj: `{  }`, want: `{"SdkHttpMetadata":{"HttpStatusCode":200},"SdkResponseMetadata":{"RequestId":"R1"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !isJSONObject([]byte(tc.obj)) {
				t.Fatalf("isJSONObject(%q) = false", tc.obj)
			}
			got := withMembers([]byte(tc.obj), md, rmd)
			if string(got) != tc.want || !json.Valid(got) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestIsJSONObject(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{`{"a":1}`, true},
		{` {}`, true},
		{`null`, false},
		{`[]`, false},
		{`"{}"`, false},
		{`{"a":1`, false},
		{`{"a":1} {}`, false},
		{``, false},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			if got := isJSONObject([]byte(tc.raw)); got != tc.want {
				t.Errorf("isJSONObject(%q) = %v, want %v", tc.raw, got, tc.want)
			}
		})
	}
}
