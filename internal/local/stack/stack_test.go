package stack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/eventbus"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// recorder is an event bus target that keeps what it receives.
type recorder struct {
	mu     sync.Mutex
	events []map[string]any
}

func (r *recorder) Deliver(_ context.Context, event []byte) error {
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, m)
	return nil
}

// TestStack runs the deployed definitions locally: the template's tables
// exist, the API routes answer, and an execution of the transfer workflow
// started through the real SDK client publishes its status change to the
// bus, where the template's rule pattern matches it.
func TestStack(t *testing.T) {
	ctx := context.Background()
	st, err := stack.Start(ctx, stack.Options{TimeScale: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	t.Run("tables from the template", func(t *testing.T) {
		out, err := dynamodb.NewFromConfig(st.AWS).ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(out.TableNames, ","); got != "IdempotencyTable,LedgerTable" {
			t.Fatalf("tables %s", got)
		}
	})

	t.Run("API routes", func(t *testing.T) {
		for path, want := range map[string]int{
			"/accounts/nobody": http.StatusNotFound, // routed to the orchestrator: a problem document
			"/nowhere":         http.StatusNotFound, // no route
		} {
			resp, err := http.Get(st.APIURL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
			}
		}
		resp, err := http.Get(st.APIURL + "/accounts/nobody")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("orchestrator 404 Content-Type %q", ct)
		}
	})

	// The template's CallerRateLimit (300 requests per 60 s by default)
	// applies to the local API as the web ACL applies it to the deployed
	// one: a caller over it is answered 429 problem+json with
	// Retry-After, others are served meanwhile.
	t.Run("per-caller rate limit", func(t *testing.T) {
		get := func(caller string) *http.Response {
			t.Helper()
			req, err := http.NewRequest(http.MethodGet, st.APIURL+"/accounts/nobody", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+caller)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		// The template's default, sent 16 at a time.
		root, err := ddblocal.ModuleRoot(".")
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := cfn.Load(filepath.Join(root, "template.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		defaultLimit, err := strconv.Atoi(tpl.Parameters["CallerRateLimit"].Default)
		if err != nil || defaultLimit < 10 {
			t.Fatalf("CallerRateLimit's default %q", tpl.Parameters["CallerRateLimit"].Default)
		}
		var refused atomic.Int32
		var wg sync.WaitGroup
		next := make(chan int)
		for range 16 {
			wg.Go(func() {
				for range next {
					if resp := get("flood"); resp.StatusCode != http.StatusNotFound {
						refused.Add(1)
					}
				}
			})
		}
		for i := range defaultLimit {
			next <- i
		}
		close(next)
		wg.Wait()
		if n := refused.Load(); n != 0 {
			t.Fatalf("%d of the %d requests within the limit were not answered 404", n, defaultLimit)
		}
		resp := get("flood")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("request over the limit: %d %v, want 429 problem+json with Retry-After", resp.StatusCode, resp.Header)
		}
		if resp := get("quiet"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("another caller: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("status change reaches the bus", func(t *testing.T) {
		root, err := ddblocal.ModuleRoot(".")
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := cfn.Load(filepath.Join(root, "template.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		rules, err := tpl.Rules(cfn.Env{Region: stack.Region, AccountID: stack.AccountID})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		for _, r := range rules {
			if r.Pattern == nil {
				continue
			}
			p, err := eventbus.Compile(r.Pattern)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Bus.AddRule(eventbus.Rule{Name: "test-" + r.Name, Pattern: p, Target: rec}); err != nil {
				t.Fatal(err)
			}
		}
		// No record exists for this transfer, so MarkInProgress's
		// condition fails and the execution ends FAILED (TransferFenced).
		input := `{"recordKey":"missing","transferId":"t-missing","createdAt":"2026-01-01T00:00:00.000Z","request":{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","reference":""},"attempt":0}`
		out, err := sfn.NewFromConfig(st.AWS).StartExecution(ctx, &sfn.StartExecutionInput{
			StateMachineArn: aws.String(st.StateMachines["TransferStateMachine"]),
			Name:            aws.String("t-missing"),
			Input:           aws.String(input),
		})
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.SFN.Wait(ctx, aws.ToString(out.ExecutionArn))
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != "FAILED" || info.Error != "TransferFenced" {
			t.Fatalf("execution %s %s: %s", info.Status, info.Error, info.Cause)
		}
		if err := st.Bus.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.events) != 1 {
			t.Fatalf("%d events matched the template's rule, want 1: %v", len(rec.events), rec.events)
		}
		detail, _ := rec.events[0]["detail"].(map[string]any)
		if rec.events[0]["source"] != "aws.states" || detail["status"] != "FAILED" || detail["name"] != "t-missing" || detail["input"] != input {
			t.Fatalf("event %v", rec.events[0])
		}
	})
}

func TestStackRejectsBadTemplate(t *testing.T) {
	dir := t.TempDir()
	bad := "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: functions/unknown/\n      Runtime: provided.al2023\n      Handler: bootstrap\n"
	if err := os.WriteFile(filepath.Join(dir, "template.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := stack.Start(context.Background(), stack.Options{Template: filepath.Join(dir, "template.yaml")})
	if err == nil {
		st.Close(context.Background())
		t.Fatal("a function without a Go handler was accepted")
	}
	if !strings.Contains(err.Error(), "template.yaml") || !strings.Contains(err.Error(), "functions/unknown/") {
		t.Fatalf("error %q does not name the file and the CodeUri", err)
	}
}
