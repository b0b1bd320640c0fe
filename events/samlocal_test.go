package events_test

// The sam local set-up (env.json and docs/development/sam-local.md),
// checked without Docker: the environment sam local invoke would give each
// function, and every sample run through the function's real handler with
// that environment against a local stack.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/app/all"
	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/seed"
	"github.com/exactlyonce/transfers/internal/worker"
)

const (
	envFile    = "../env.json"
	readmeFile = "../docs/development/sam-local.md"

	// dockerHost is how a container reaches its host.
	dockerHost = "host.docker.internal"
	// samplesOwner is the caller scope of the API samples (docs/development/sam-local.md).
	samplesOwner = "iam:arn:aws:iam::123456789012:user/payments-app"
)

// Endpoint variables: the SDK's, declared empty in the template.
const (
	ddbEndpointVar = "AWS_ENDPOINT_URL_DYNAMODB"
	sfnEndpointVar = "AWS_ENDPOINT_URL_SFN"
)

// envOverrides reads env.json: function logical ID -> variable -> value.
func envOverrides(t *testing.T) map[string]map[string]string {
	t.Helper()
	var out map[string]map[string]string
	if err := strict(read(t, envFile), &out); err != nil {
		t.Fatalf("%s: %v (want an object of functions, each an object of string values)", envFile, err)
	}
	return out
}

// stackFunctions are the functions as the local stack builds them: the
// template resolved for its region and account.
func stackFunctions(t *testing.T) map[string]cfn.Function {
	t.Helper()
	fns, err := tpl(t).Functions(cfn.Env{Region: stack.Region, AccountID: stack.AccountID})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cfn.Function{}
	for _, f := range fns {
		out[f.LogicalID] = f
	}
	return out
}

// refTarget is the resource a template value refers to with Ref, or "".
func refTarget(t *testing.T, n *cfn.Node) string {
	t.Helper()
	if n == nil || n.Kind != cfn.KindIntrinsic || n.Fn != "Ref" {
		return ""
	}
	name, _ := n.Arg.Str()
	if _, ok := tpl(t).Resources[name]; ok {
		return name
	}
	return ""
}

// declared maps the variables the template declares for a function
// (Globals merged) to their template values.
func declared(t *testing.T, function string) map[string]*cfn.Node {
	t.Helper()
	res, ok := tpl(t).Resources[function]
	if !ok {
		t.Fatalf("no resource %s in the template", function)
	}
	vars := res.Properties.Get("Environment").Get("Variables")
	out := map[string]*cfn.Node{}
	for _, k := range vars.Keys {
		out[k] = vars.Get(k)
	}
	return out
}

// samEnvironment is the environment sam local invoke gives function with
// --env-vars overrides: each declared variable with its template value as
// SAM resolves it (a Ref to a resource is the resource's logical ID, a
// parameter its default), overridden by the file's value. A variable the
// template does not declare is not set (SAM ignores it).
func samEnvironment(t *testing.T, function string, overrides map[string]string) map[string]string {
	t.Helper()
	resolved := stackFunctions(t)[function].Environment
	env := map[string]string{}
	for k, n := range declared(t, function) {
		if ref := refTarget(t, n); ref != "" {
			env[k] = ref
		} else {
			env[k] = resolved[k]
		}
		if v, ok := overrides[k]; ok {
			env[k] = v
		}
	}
	return env
}

// readmePorts are the ports of the README's `make local` command for sam
// local.
func readmePorts(t *testing.T) (ddb, sfn int) {
	t.Helper()
	m := regexp.MustCompile(`make local SEED=0 LOCAL_FLAGS='-ddb-port (\d+) -sfn-port (\d+) -sfn-addr 0\.0\.0\.0'`).FindSubmatch(read(t, readmeFile))
	if m == nil {
		t.Fatalf("%s has no `make local SEED=0 LOCAL_FLAGS='-ddb-port N -sfn-port M -sfn-addr 0.0.0.0'` command", readmeFile)
	}
	ddb, _ = strconv.Atoi(string(m[1]))
	sfn, _ = strconv.Atoi(string(m[2]))
	return ddb, sfn
}

// callsStepFunctions reports whether a function is given the state
// machine (the orchestrator and the reaper).
func callsStepFunctions(t *testing.T, function string) bool {
	_, ok := declared(t, function)["STATE_MACHINE_ARN"]
	return ok
}

// TestEnvFile checks env.json against the template, the local stack's
// names and the README's commands.
func TestEnvFile(t *testing.T) {
	overrides := envOverrides(t)
	fns := stackFunctions(t)
	ddbPort, sfnPort := readmePorts(t)

	for id := range overrides {
		if _, ok := fns[id]; !ok {
			t.Errorf("%s: %s is not a function of the template", envFile, id)
		}
	}
	for id := range fns {
		vars, ok := overrides[id]
		if !ok {
			t.Errorf("%s: function %s is missing", envFile, id)
			continue
		}
		decl := declared(t, id)
		for k := range vars {
			if _, ok := decl[k]; !ok {
				t.Errorf("%s: %s sets %s, which the template does not declare for it: sam local would ignore it", envFile, id, k)
			}
		}
		env := samEnvironment(t, id, vars)
		// Names: what the function sees under sam local is what the local
		// stack gives it, for every variable naming a resource.
		for k, n := range decl {
			if refTarget(t, n) == "" {
				continue
			}
			if want := fns[id].Environment[k]; env[k] != want {
				t.Errorf("%s under sam local: %s=%q, the local stack has %q", id, k, env[k], want)
			}
		}
		wantDDB := "http://" + net.JoinHostPort(dockerHost, strconv.Itoa(ddbPort))
		if env[ddbEndpointVar] != wantDDB {
			t.Errorf("%s under sam local: %s=%q, want %q (DynamoDB Local of the README's make local)", id, ddbEndpointVar, env[ddbEndpointVar], wantDDB)
		}
		wantSFN := ""
		if callsStepFunctions(t, id) {
			wantSFN = "http://" + net.JoinHostPort(dockerHost, strconv.Itoa(sfnPort))
		}
		if env[sfnEndpointVar] != wantSFN {
			t.Errorf("%s under sam local: %s=%q, want %q", id, sfnEndpointVar, env[sfnEndpointVar], wantSFN)
		}
	}

	// The names the local stack gives the resources, from the running
	// stack: the tables and the state machine env.json names.
	st := startStack(t, "127.0.0.1:0")
	for id, vars := range overrides {
		for k, v := range vars {
			switch ref := refTarget(t, declared(t, id)[k]); {
			case ref == "":
			case st.Tables[ref] != "":
				if v != st.Tables[ref] {
					t.Errorf("%s: %s %s=%q, the local stack's table %s is %q", envFile, id, k, v, ref, st.Tables[ref])
				}
			case st.StateMachines[ref] != "":
				if v != st.StateMachines[ref] {
					t.Errorf("%s: %s %s=%q, the local stack's state machine %s is %q", envFile, id, k, v, ref, st.StateMachines[ref])
				}
			default:
				t.Errorf("%s: %s %s names %s, which the local stack has no name for", envFile, id, k, ref)
			}
		}
	}

	// Every sample has its command in the README.
	readme := string(read(t, readmeFile))
	for _, s := range samples {
		cmd := "sam local invoke " + s.function + " -e events/" + s.file + " --env-vars env.json --add-host host.docker.internal:host-gateway"
		if !strings.Contains(readme, cmd) {
			t.Errorf("%s lacks the command for %s: %s", readmeFile, s.file, cmd)
		}
	}
}

// startStack runs a local stack on the test binary's DynamoDB Local, its
// Step Functions endpoint listening on sfnAddr. The process environment
// the stack sets is restored afterwards.
func startStack(t *testing.T, sfnAddr string) *stack.Stack {
	t.Helper()
	for _, k := range []string{ddbEndpointVar, sfnEndpointVar, "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, os.Getenv(k))
	}
	st, err := stack.Start(context.Background(), stack.Options{
		Template:         templateFile,
		DynamoDBEndpoint: os.Getenv(ddbEndpointVar),
		SFNAddr:          sfnAddr,
		TimeScale:        0.01,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("stop the stack: %v", err)
		}
	})
	return st
}

// hostAddress stands in for host.docker.internal, the address a
// container reaches its host on. Tests reach only loopback, so the
// endpoints are dialled there; that they listen beyond loopback is
// checked on the listener (internal/local/stack TestStackOnPinnedPorts).
func hostAddress(*testing.T) string { return "127.0.0.1" }

// invocation is one sam local invoke: the function's handler built as
// Main builds it, from env as its process environment.
type invocation struct {
	out  []byte
	err  error
	logs string
}

func invoke(t *testing.T, function string, env map[string]string, event []byte) invocation {
	t.Helper()
	// A container's environment: env, SAM's placeholder credentials and
	// region, nothing from this machine's AWS set-up.
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "defaultkey",
		"AWS_SECRET_ACCESS_KEY":       "defaultsecret",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL", ddbEndpointVar, sfnEndpointVar} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code := path.Base(strings.TrimSuffix(stackFunctions(t)[function].CodeUri, "/"))
	build, ok := all.Functions[code]
	if !ok {
		t.Fatalf("%s: no constructor for %s", function, code)
	}
	var logs bytes.Buffer
	h, err := build(ctx, os.Getenv, app.AWS{Config: cfg}, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("%s: init: %v", function, err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := lambda.NewHandler(h).Invoke(ictx, event)
	return invocation{out: out, err: err, logs: logs.String()}
}

// logged reports whether a JSON log line has msg as its message.
func (iv invocation) logged(msg string) bool {
	for line := range strings.Lines(iv.logs) {
		var l struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg {
			return true
		}
	}
	return false
}

func apiResponse(t *testing.T, iv invocation) events.APIGatewayProxyResponse {
	t.Helper()
	if iv.err != nil {
		t.Fatalf("orchestrator: %v\nlogs:\n%s", iv.err, iv.logs)
	}
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(iv.out, &resp); err != nil {
		t.Fatalf("orchestrator answer %s: %v", iv.out, err)
	}
	return resp
}

// TestSAMLocalInvokesEverySample follows docs/development/sam-local.md:
// a local stack whose Step Functions endpoint listens on all interfaces,
// the demo accounts opened for the samples' caller, then every sample in
// the README's order, each through its function's handler with the
// environment sam local invoke gives it from env.json, the endpoints'
// host.docker.internal being this machine as a container sees it.
func TestSAMLocalInvokesEverySample(t *testing.T) {
	ctx := context.Background()
	st := startStack(t, "0.0.0.0:0")
	led, err := ledger.New(dynamodb.NewFromConfig(st.AWS), ledger.Config{LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"]})
	if err != nil {
		t.Fatal(err)
	}
	demo := slices.Clone(seed.Demo)
	for i := range demo {
		demo[i].Owner = samplesOwner
	}
	if _, err := seed.Open(ctx, led, demo); err != nil {
		t.Fatal(err)
	}

	// env.json's endpoints, on the README's ports, map to this stack's.
	ddbPort, sfnPort := readmePorts(t)
	host := hostAddress(t)
	actual := map[int]string{ddbPort: portString(t, st.DynamoDBEndpoint), sfnPort: portString(t, st.SFNEndpoint)}
	environment := func(function string) map[string]string {
		env := samEnvironment(t, function, envOverrides(t)[function])
		for _, k := range []string{ddbEndpointVar, sfnEndpointVar} {
			if env[k] == "" {
				continue
			}
			u, err := url.Parse(env[k])
			if err != nil || u.Hostname() != dockerHost {
				t.Fatalf("%s %s=%q: want http://%s:PORT", function, k, env[k], dockerHost)
			}
			p, _ := strconv.Atoi(u.Port())
			to, ok := actual[p]
			if !ok {
				t.Fatalf("%s %s=%q: port %d is not one of the README's command", function, k, env[k], p)
			}
			u.Host = net.JoinHostPort(host, to)
			env[k] = u.String()
		}
		return env
	}
	balance := func(id string) int64 {
		t.Helper()
		a, err := led.Account(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return a.Balance
	}

	// api-post-transfer.json: 202, and the execution it started on the
	// local endpoint moves the money.
	post := invoke(t, orchestratorFunction, environment(orchestratorFunction), read(t, "api-post-transfer.json"))
	resp := apiResponse(t, post)
	if resp.StatusCode != 202 {
		t.Fatalf("api-post-transfer.json: %d %s, want 202\nlogs:\n%s", resp.StatusCode, resp.Body, post.logs)
	}
	var created struct {
		TransferID string `json:"transferId"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &created); err != nil || created.TransferID == "" {
		t.Fatalf("api-post-transfer.json answer %s: %v", resp.Body, err)
	}
	execArn := "arn:aws:states:us-east-1:123456789012:execution:" + transferMachine + ":" + created.TransferID
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	info, err := st.SFN.Wait(wctx, execArn)
	if err != nil || info.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %+v, %v", execArn, info, err)
	}
	if a, b := balance("demo-alice"), balance("demo-bob"); a != 100000-2500 || b != 100000+2500 {
		t.Fatalf("balances after the transfer: demo-alice %d, demo-bob %d", a, b)
	}

	// api-post-transfer-replay.json: the same transfer, replayed.
	replay := apiResponse(t, invoke(t, orchestratorFunction, environment(orchestratorFunction), read(t, "api-post-transfer-replay.json")))
	if replay.StatusCode != 200 || replay.Headers["Idempotent-Replayed"] != "true" || !strings.Contains(replay.Body, created.TransferID) {
		t.Errorf("api-post-transfer-replay.json: %d %v %s, want 200, Idempotent-Replayed and transfer %s", replay.StatusCode, replay.Headers, replay.Body, created.TransferID)
	}

	// api-get-transfer.json: the sample's id is not the minted one.
	get := read(t, "api-get-transfer.json")
	if r := apiResponse(t, invoke(t, orchestratorFunction, environment(orchestratorFunction), get)); r.StatusCode != 404 {
		t.Errorf("api-get-transfer.json: %d %s, want 404 (the sample's transfer id was not minted here)", r.StatusCode, r.Body)
	}
	// ... and with the id from Location it reads the transfer.
	sampleID := decodeAPIEvent(t, get).PathParameters["transferId"]
	withID := bytes.ReplaceAll(get, []byte(sampleID), []byte(created.TransferID))
	if r := apiResponse(t, invoke(t, orchestratorFunction, environment(orchestratorFunction), withID)); r.StatusCode != 200 || !strings.Contains(r.Body, `"COMPLETED"`) {
		t.Errorf("api-get-transfer.json with the minted id: %d %s, want 200 and COMPLETED", r.StatusCode, r.Body)
	}

	// api-get-account.json: demo-alice's balance.
	if r := apiResponse(t, invoke(t, orchestratorFunction, environment(orchestratorFunction), read(t, "api-get-account.json"))); r.StatusCode != 200 || !strings.Contains(r.Body, `"balance":97500`) {
		t.Errorf("api-get-account.json: %d %s, want 200 with balance 97500", r.StatusCode, r.Body)
	}

	// The legs, outside their execution: fenced, nothing moves.
	for _, s := range samplesOf(taskEvent) {
		iv := invoke(t, s.function, environment(s.function), read(t, s.file))
		var fnErr messages.InvokeResponse_Error
		if !errors.As(iv.err, &fnErr) || fnErr.Type != worker.TypeTransferFenced {
			t.Errorf("%s: %s, %v; want the Lambda error %s\nlogs:\n%s", s.file, iv.out, iv.err, worker.TypeTransferFenced, iv.logs)
		}
	}

	// The reaper: the FAILED event names the sample's record, which
	// belongs to the transfer the POST created; the timed-out one a record
	// that does not exist; the sweep finds nothing stuck.
	reaperLogs := map[string][]string{
		"reaper-execution-failed.json":    {"execution closed", "no record of the transfer"},
		"reaper-execution-timed-out.json": {"execution closed"},
		"reaper-sweep-scheduled.json":     {"sweep finished"},
	}
	for _, s := range samples {
		if s.function != reaperFunction {
			continue
		}
		iv := invoke(t, reaperFunction, environment(reaperFunction), read(t, s.file))
		if iv.err != nil {
			t.Errorf("%s: %v\nlogs:\n%s", s.file, iv.err, iv.logs)
			continue
		}
		for _, msg := range reaperLogs[s.file] {
			if !iv.logged(msg) {
				t.Errorf("%s: the reaper did not log %q\nlogs:\n%s", s.file, msg, iv.logs)
			}
		}
		if iv.logged("status change of another state machine ignored") {
			t.Errorf("%s: the reaper ignored the sample's state machine: STATE_MACHINE_ARN does not match\nlogs:\n%s", s.file, iv.logs)
		}
	}
	if a, b := balance("demo-alice"), balance("demo-bob"); a != 100000-2500 || b != 100000+2500 {
		t.Errorf("balances after the legs and the reaper: demo-alice %d, demo-bob %d; the samples moved money", a, b)
	}
}

func portString(t *testing.T, endpoint string) string {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		t.Fatalf("endpoint %q: %v", endpoint, err)
	}
	return u.Port()
}
