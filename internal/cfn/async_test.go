package cfn

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFunctionEventInvokeConfig(t *testing.T) {
	fns, err := load(t, "testdata/async.yaml").Functions(Env{})
	if err != nil {
		t.Fatalf("Functions: %v", err)
	}
	want := map[string]*EventInvokeConfig{
		"Configured": {MaximumRetryAttempts: 1, MaximumEventAgeInSeconds: 3600,
			OnFailure: &Destination{Type: "SQS", Destination: "arn:aws:sqs:us-east-1:123456789012:FailureQueue"}},
		"Partial":      {MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: DefaultAsyncMaximumEventAgeInSeconds},
		"Unconfigured": nil,
	}
	if len(fns) != len(want) {
		t.Fatalf("got %d functions, want %d", len(fns), len(want))
	}
	for _, f := range fns {
		t.Run(f.LogicalID, func(t *testing.T) {
			if got := f.EventInvokeConfig; !reflect.DeepEqual(got, want[f.LogicalID]) {
				t.Errorf("EventInvokeConfig = %+v (on failure %+v), want %+v", got, derefDest(got), want[f.LogicalID])
			}
		})
	}
}

func derefDest(c *EventInvokeConfig) any {
	if c == nil || c.OnFailure == nil {
		return nil
	}
	return *c.OnFailure
}

func TestEventInvokeConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{"too many retries", "MaximumRetryAttempts: 3", "MaximumRetryAttempts must be 0-2, got 3"},
		{"event age too short", "MaximumEventAgeInSeconds: 30", "MaximumEventAgeInSeconds must be 60-21600, got 30"},
		{"unknown property", "Retries: 1", "unknown EventInvokeConfig property Retries"},
		{"destination without ARN", "DestinationConfig:\n          OnFailure:\n            Type: SQS", "needs a Destination ARN"},
		{"unknown destination", "DestinationConfig:\n          OnTimeout:\n            Type: SQS", "unknown EventInvokeConfig.DestinationConfig property OnTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "template.yaml")
			doc := "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: fn/\n      EventInvokeConfig:\n        " + tc.config + "\n"
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := load(t, path).Functions(Env{})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}
