package stack_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/local/stack"
)

// freePort is a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func portOf(t *testing.T, endpoint string) int {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("endpoint %s: %v", endpoint, err)
	}
	return p
}

// answersStepFunctions reports whether a Step Functions endpoint at
// endpoint lists the transfer state machine.
func answersStepFunctions(ctx context.Context, cfg aws.Config, endpoint string) error {
	client := sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.RetryMaxAttempts = 1
		o.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	})
	out, err := client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
	if err != nil {
		return err
	}
	for _, sm := range out.StateMachines {
		if aws.ToString(sm.Name) == "TransferStateMachine" {
			return nil
		}
	}
	return fmt.Errorf("no TransferStateMachine in %d state machines", len(out.StateMachines))
}

// The ports sam local's env.json names can be pinned: DynamoDB Local and
// the Step Functions endpoint listen where they are told, the Step
// Functions endpoint on all interfaces when asked (a container reaches the
// host on a non-loopback address), and the stack's own endpoints stay
// dialable on loopback.
func TestStackOnPinnedPorts(t *testing.T) {
	ctx := context.Background()
	ddbPort, sfnPort := freePort(t), freePort(t)
	st, err := stack.Start(ctx, stack.Options{
		DynamoDBPort: ddbPort,
		SFNAddr:      net.JoinHostPort("0.0.0.0", strconv.Itoa(sfnPort)),
		TimeScale:    0.01,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	if got := portOf(t, st.DynamoDBEndpoint); got != ddbPort {
		t.Errorf("DynamoDB Local on port %d (%s), want %d", got, st.DynamoDBEndpoint, ddbPort)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", sfnPort); st.SFNEndpoint != want {
		t.Errorf("SFNEndpoint %s, want %s (loopback, not the unspecified address it listens on)", st.SFNEndpoint, want)
	}
	if err := answersStepFunctions(ctx, st.AWS, st.SFNEndpoint); err != nil {
		t.Errorf("Step Functions on loopback: %v", err)
	}
	// Reachable beyond loopback: it listens on the unspecified address.
	// (Tests reach only loopback, so the listener is checked, not dialled
	// from another address.)
	if got := st.SFN.Addr(); !strings.HasPrefix(got, "0.0.0.0:") && !strings.HasPrefix(got, "[::]:") {
		t.Errorf("Step Functions listens on %s, want the unspecified address", got)
	}
	if err := listTables(ctx, st.AWS, st.DynamoDBEndpoint); err != nil {
		t.Errorf("DynamoDB Local on port %d: %v", ddbPort, err)
	}
}

// By default the Step Functions endpoint listens on loopback only.
func TestStackStepFunctionsOnLoopbackByDefault(t *testing.T) {
	ctx := context.Background()
	st, err := stack.Start(ctx, stack.Options{TimeScale: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	if !strings.HasPrefix(st.SFNEndpoint, "http://127.0.0.1:") {
		t.Errorf("SFNEndpoint %s, want one on 127.0.0.1", st.SFNEndpoint)
	}
	if got := st.SFN.Addr(); !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("Step Functions listens on %s, want 127.0.0.1", got)
	}
}

func TestStackRejectsAPortForARunningDynamoDB(t *testing.T) {
	st, err := stack.Start(context.Background(), stack.Options{DynamoDBEndpoint: "http://127.0.0.1:1", DynamoDBPort: 8000})
	if err == nil {
		st.Close(context.Background())
		t.Fatal("DynamoDBPort with DynamoDBEndpoint was accepted")
	}
	if !strings.Contains(err.Error(), "DynamoDBPort") {
		t.Fatalf("error %q does not name DynamoDBPort", err)
	}
}

func listTables(ctx context.Context, cfg aws.Config, endpoint string) error {
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.RetryMaxAttempts = 1
		o.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	})
	_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	return err
}
