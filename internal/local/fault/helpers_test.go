package fault_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testContext ends with the test (or after a minute).
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// counter is a function that counts its runs and echoes its payload's
// "id" as {"ran":id}.
type counter struct{ runs atomic.Int64 }

func (c *counter) handler() lambda.Handler {
	return lambda.NewHandler(func(in struct {
		ID string `json:"id"`
	}) (map[string]string, error) {
		c.runs.Add(1)
		return map[string]string{"ran": in.ID}, nil
	})
}

// newRegistry registers "Fn" (counted by the returned counter) with the
// injector's interceptor.
func newRegistry(t *testing.T, in *fault.Injector) (*lambdarun.Registry, *counter) {
	t.Helper()
	c := &counter{}
	reg := &lambdarun.Registry{}
	if err := reg.Register(&lambdarun.Function{Name: "Fn", Timeout: 10 * time.Second, NewHandler: c.handler}); err != nil {
		t.Fatal(err)
	}
	reg.SetInterceptor(in.Interceptor())
	return reg, c
}

// recordingPublisher keeps the events published.
type recordingPublisher struct {
	mu     sync.Mutex
	events []string
}

func (p *recordingPublisher) Publish(_ context.Context, event []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, string(event))
	return nil
}

func (p *recordingPublisher) recorded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.events...)
}

// field returns a top-level string member of a JSON document.
func field(doc []byte, name string) string {
	var m map[string]any
	_ = json.Unmarshal(doc, &m)
	s, _ := m[name].(string)
	return s
}

// sfnEnv is a Step Functions endpoint with one machine, "M", behind an
// httptest server, its SDK client, and the publisher recording its events.
type sfnEnv struct {
	srv    *sfnlocal.Server
	client *sfn.Client
	pub    *recordingPublisher
}

// newSFN starts a Step Functions endpoint on the registry; configure, when
// set, adjusts the Config.
func newSFN(t *testing.T, reg *lambdarun.Registry, definition string, configure func(*sfnlocal.Config)) *sfnEnv {
	t.Helper()
	env := &sfnEnv{pub: &recordingPublisher{}}
	cfg := sfnlocal.Config{Lambda: sfnlocal.Registry(reg), Publisher: env.pub, TimeScale: 0.01, Logger: quietLogger()}
	if configure != nil {
		configure(&cfg)
	}
	env.srv = sfnlocal.New(cfg)
	if err := env.srv.AddStateMachine(sfnlocal.StateMachine{Name: "M", Definition: []byte(definition)}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(env.srv)
	t.Cleanup(func() {
		ts.Close()
		if err := env.srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	env.client = sfn.New(sfn.Options{
		BaseEndpoint: aws.String(ts.URL), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	return env
}

// run starts an execution of "M" through the SDK and waits for its end.
func (env *sfnEnv) run(t *testing.T, input string) sfnlocal.ExecutionInfo {
	t.Helper()
	out, err := env.client.StartExecution(testContext(t), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(env.srv.StateMachineARN("M")), Input: aws.String(input),
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := env.srv.Wait(testContext(t), aws.ToString(out.ExecutionArn))
	if err != nil {
		t.Fatal(err)
	}
	return info
}
