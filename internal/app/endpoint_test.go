package app

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// hostRecorder is an HTTP client that keeps the URL of every request and
// answers none, so nothing leaves the machine.
type hostRecorder struct{ urls []string }

var errRecorded = errors.New("request recorded, not sent")

func (r *hostRecorder) Do(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.Scheme+"://"+req.URL.Host)
	return nil, errRecorded
}

// endpointsOf loads the functions' configuration (loadConfig, as Main
// does) with only the given endpoint variables in the environment, and
// returns where one DynamoDB call and one Step Functions call go.
func endpointsOf(t *testing.T, vars map[string]string) (ddb, states string) {
	t.Helper()
	// Nothing from the machine's own AWS set-up: no shared files, no
	// endpoint but the ones under test.
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_REGION":                  "eu-west-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_CA_BUNDLE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SFN", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	rec := &hostRecorder{}
	cfg.HTTPClient = rec
	cfg.RetryMaxAttempts = 1
	ctx := context.Background()
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); !errors.Is(err, errRecorded) {
		t.Fatalf("ListTables: %v, want the recorder's error", err)
	}
	if _, err := sfn.NewFromConfig(cfg).ListStateMachines(ctx, &sfn.ListStateMachinesInput{}); !errors.Is(err, errRecorded) {
		t.Fatalf("ListStateMachines: %v, want the recorder's error", err)
	}
	if len(rec.urls) != 2 {
		t.Fatalf("requests %v, want 2", rec.urls)
	}
	return rec.urls[0], rec.urls[1]
}

// template.yaml declares AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SFN
// with empty values in every function, so that sam local's --env-vars may
// set them. Deployed, they are set but empty: the clients must then use the
// services' default endpoints, and a value, when given, must be used.
func TestEmptyEndpointVariablesKeepTheDefaultEndpoints(t *testing.T) {
	tests := []struct {
		name               string
		vars               map[string]string
		wantDDB, wantSteps string
	}{
		{
			name:    "unset",
			wantDDB: "https://dynamodb.eu-west-1.amazonaws.com", wantSteps: "https://states.eu-west-1.amazonaws.com",
		},
		{
			name:    "set but empty, as deployed",
			vars:    map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_ENDPOINT_URL_SFN": ""},
			wantDDB: "https://dynamodb.eu-west-1.amazonaws.com", wantSteps: "https://states.eu-west-1.amazonaws.com",
		},
		{
			name: "set, as by sam local's env.json",
			vars: map[string]string{
				"AWS_ENDPOINT_URL_DYNAMODB": "http://host.docker.internal:8000",
				"AWS_ENDPOINT_URL_SFN":      "http://host.docker.internal:8083",
			},
			wantDDB: "http://host.docker.internal:8000", wantSteps: "http://host.docker.internal:8083",
		},
		{
			name:    "one set, one empty",
			vars:    map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_ENDPOINT_URL_SFN": ""},
			wantDDB: "http://127.0.0.1:8000", wantSteps: "https://states.eu-west-1.amazonaws.com",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ddb, states := endpointsOf(t, tt.vars)
			if ddb != tt.wantDDB {
				t.Errorf("DynamoDB request went to %s, want %s", ddb, tt.wantDDB)
			}
			if states != tt.wantSteps {
				t.Errorf("Step Functions request went to %s, want %s", states, tt.wantSteps)
			}
		})
	}
}
