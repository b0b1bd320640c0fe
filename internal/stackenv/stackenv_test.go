package stackenv

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// recorded is a DescribeStacks answer in the shape CloudFormation's query
// API gives (testdata/describe-stacks.xml, after the API reference's
// example, with this stack's outputs).
func recorded(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/describe-stacks.xml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const notFound = `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">
  <Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id nope does not exist</Message></Error>
  <RequestId>5ccc7dcd-744c-11e5-be70-example</RequestId>
</ErrorResponse>`

// client is a real CloudFormation client whose requests go to a server
// that checks them and answers status and body.
func client(t *testing.T, wantStack string, status int, body []byte) *cloudformation.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("request form: %v", err)
		}
		if got := r.PostForm.Get("Action"); got != "DescribeStacks" {
			t.Errorf("Action = %q, want DescribeStacks", got)
		}
		if got := r.PostForm.Get("StackName"); got != wantStack {
			t.Errorf("StackName = %q, want %q", got, wantStack)
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			t.Errorf("the request is not SigV4-signed: %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return cloudformation.New(cloudformation.Options{
		Region:           "eu-west-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		RetryMaxAttempts: 1,
	})
}

func TestRead(t *testing.T) {
	full := recorded(t)
	noAPI := []byte(strings.Replace(string(full), "<OutputKey>ApiUrl</OutputKey>", "<OutputKey>Other</OutputKey>", 1))
	creating := []byte(strings.Replace(string(noAPI), "UPDATE_COMPLETE", "CREATE_IN_PROGRESS", 1))
	tests := []struct {
		name    string
		status  int
		body    []byte
		want    map[string]string
		wantErr []string
		is      error
	}{
		{name: "a deployed stack", status: 200, body: full, want: map[string]string{
			"API_URL":             "https://x8k2mq4v7n.execute-api.eu-west-1.amazonaws.com/v1",
			"LEDGER_TABLE":        "exactlyonce-transfers-dev-LedgerTable-9TB4H6M2R1WE",
			"IDEMPOTENCY_TABLE":   "exactlyonce-transfers-dev-IdempotencyTable-1QX7Z2K4N8P3",
			"STATE_MACHINE_ARN":   "arn:aws:states:eu-west-1:123456789012:stateMachine:TransferStateMachine-Wq3rT8yU1iOp",
			"AWS_REGION":          "eu-west-1",
			"MAX_TRANSFER_AMOUNT": "5000000",
			"ACCOUNT_OWNERSHIP":   "enforce",
		}},
		{name: "a stack without the API's output", status: 200, body: creating,
			wantErr: []string{"CREATE_IN_PROGRESS", "no output ApiUrl"}, is: ErrNotReady},
		{name: "no such stack", status: 400, body: []byte(notFound),
			wantErr: []string{"Stack with id nope does not exist", "region"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stack := "exactlyonce-transfers-dev"
			if tc.status != 200 {
				stack = "nope"
			}
			got, err := Read(context.Background(), client(t, stack, tc.status, tc.body), stack)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Read = %v, want an error", got)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("error %v is not %v", err, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Read:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestShellRoundTrips: a shell that evaluates Shell's output has exactly
// the values, quotes and all.
func TestShellRoundTrips(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH to evaluate the output")
	}
	env := map[string]string{
		"API_URL":    "https://abc.execute-api.eu-west-1.amazonaws.com/v1",
		"WITH_QUOTE": "it's $HOME and `date`",
	}
	out, err := exec.Command(sh, "-c", Shell(env)+`printf '%s\n%s' "$API_URL" "$WITH_QUOTE"`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(string(out), "\n"); !reflect.DeepEqual(got, []string{env["API_URL"], env["WITH_QUOTE"]}) {
		t.Errorf("evaluated %q, want %q", got, []string{env["API_URL"], env["WITH_QUOTE"]})
	}
}
