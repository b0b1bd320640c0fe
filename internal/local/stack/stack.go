// Package stack runs the whole SAM stack of template.yaml on one machine,
// offline: DynamoDB Local with the template's tables, the functions
// in-process, the state machines on the local Step Functions endpoint, the
// event rules and schedules on the local event bus, and the REST API on a
// local HTTP server. The functions get real AWS SDK clients pointed at the
// local endpoints through the SDK's own endpoint variables
// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SFN), exactly as they would
// be configured against any other endpoint.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/app/all"
	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/eventbus"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/iamgate"
	"github.com/exactlyonce/transfers/internal/local/lambdaapi"
	"github.com/exactlyonce/transfers/internal/local/lambdaproc"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
	"github.com/exactlyonce/transfers/internal/local/sdklog"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
	"github.com/exactlyonce/transfers/internal/local/ttl"
	"github.com/exactlyonce/transfers/internal/metrics"
)

// Options configure Start.
type Options struct {
	// Template is the SAM template; "" is template.yaml at the module root.
	Template string
	// TransformedTemplate is Template after the SAM transform, whose
	// roles, policies and permissions every call of the stack is checked
	// against (internal/local/iamgate); "" is cfn.TransformedPath of
	// Template (template.cfn.json, which make cfn writes). A transformed
	// template older than the files it was made from is refused.
	TransformedTemplate string
	// DynamoDBEndpoint is a running DynamoDB (Local); "" starts DynamoDB
	// Local for the stack.
	DynamoDBEndpoint string
	// DynamoDBPort is the port of the DynamoDB Local the stack starts; 0
	// picks a free one. DynamoDB Local listens on all interfaces (it has
	// no bind option). It cannot be combined with DynamoDBEndpoint.
	DynamoDBPort int
	// DataDir keeps DynamoDB Local's data across restarts; "" is in memory.
	DataDir string
	// APIAddr is where the API listens; "" is 127.0.0.1 on a free port.
	APIAddr string
	// APICredentials, when set, puts the API in its SigV4 mode
	// (apigw.Config.Credentials): every request must be signed, for
	// execute-api in Region, with one of these keys (by access key id),
	// and its caller is the key's principal, as the deployed API's AWS_IAM
	// authorization does. nil keeps the Bearer mode, where a caller names
	// itself with "Authorization: Bearer NAME".
	APICredentials map[string]apigw.Credential
	// SFNAddr is where the Step Functions endpoint listens, as host:port;
	// "" is 127.0.0.1 on a free port. An unspecified host (0.0.0.0, ::)
	// exposes it beyond this machine, as sam local's containers need;
	// the stack's own clients still reach it on loopback.
	SFNAddr string
	// TimeScale multiplies the workflow's retry intervals and timeouts and
	// the event bus's retry backoff; 0 means 1. Tests use a small scale.
	TimeScale float64
	// Schedules runs the template's schedules (the sweeper); off, only
	// event rules run.
	Schedules bool
	// FirstScheduleAfter, when positive, is when each schedule first fires
	// after the start (then it follows its rate); see
	// eventbus.Config.FirstScheduleAfter.
	FirstScheduleAfter time.Duration
	// Parameters override the template's parameter defaults.
	Parameters map[string]string
	// Logger receives the runtime's and the functions' logs; nil discards.
	Logger *slog.Logger
	// Faults, when set, is wired into the runtime for tests: the Lambda
	// registry's interceptor, the Step Functions endpoint's event
	// publisher and DynamoDB transport, and the APIOptions of AWS (and so
	// of every function's SDK clients). nil injects nothing.
	Faults *fault.Injector
	// TTLLag and TTLInterval configure the TTL emulator (Stack.TTL): an
	// expired item becomes deletable TTLLag after its expiry, and the
	// emulator runs every TTLInterval; 0 runs no loop (call
	// Stack.TTL.RunNow).
	TTLLag      time.Duration
	TTLInterval time.Duration
	// APIOptions are appended to the APIOptions of AWS after those of
	// Faults, and so reach every function's SDK clients; the runtime's own
	// clients (table creation, TTL) never get them. Benchmarks observe the
	// functions' calls with them; nil adds nothing.
	APIOptions []func(*middleware.Stack) error
	// WorkflowDynamoDB, when set, wraps the transport of the Step
	// Functions endpoint's DynamoDB integrations, inside the faults of
	// Faults: it sees the requests that reach DynamoDB and their answers.
	// Benchmarks observe the workflow's own calls with it; nil wraps
	// nothing.
	WorkflowDynamoDB func(next http.RoundTripper) http.RoundTripper
	// DynamoDBConcurrency is how many requests the stack's own clients
	// (the functions' SDK clients, the runtime's, the workflow's DynamoDB
	// integrations) may have in flight at DynamoDB Local at once; the
	// others wait their turn in the order they came. DynamoDB Local runs
	// transactions under one database-wide lock that lets late arrivals
	// overtake those waiting, and without a bound a busy stack starves
	// some transactions for seconds (see dynamoDBGate). 0 is
	// DefaultDynamoDBConcurrency; negative sets no bound.
	DynamoDBConcurrency int
	// Ready, when set, runs once every part of the stack but the API has
	// started (tables created, functions, state machines and rules
	// loaded), before the API's port opens: what a client may expect to
	// find on its first request (the demo accounts of make local) is put
	// there. An error stops the start.
	Ready func(ctx context.Context, st *Stack) error
	// Bootstraps maps a function's logical ID to the path of a bootstrap
	// executable built for it (what make build or sam build ships),
	// which then runs the function instead of its in-process handler:
	// one process per execution environment, behind a Lambda Runtime
	// API, under qemu-aarch64 on a host that is not arm64 (package
	// lambdaproc). A process gets the template's variables, the local
	// endpoints and the credentials of the function's role. Its SDK
	// calls go through the IAM checks, as the in-process functions' do;
	// the DynamoDB concurrency bound, APIOptions and Faults' SDK faults do
	// not apply to them, the Lambda registry's interceptor does. nil runs
	// every function in-process.
	Bootstraps map[string]string
}

// Stack is a running local stack.
type Stack struct {
	// APIURL is the base URL of the REST API, e.g. http://127.0.0.1:3000.
	APIURL string
	// DynamoDBEndpoint and SFNEndpoint are the local service endpoints,
	// on loopback.
	DynamoDBEndpoint string
	SFNEndpoint      string
	// Tables maps a table's logical ID to its name.
	Tables map[string]string
	// StateMachines maps a state machine's logical ID to its ARN.
	StateMachines map[string]string
	// FunctionNames maps a function's logical ID to its name, which
	// Functions invokes it by.
	FunctionNames map[string]string
	// AWS is a configuration whose clients reach the local endpoints.
	AWS aws.Config
	// SFN, Bus and Functions are the local runtime's parts.
	SFN       *sfnlocal.Server
	Bus       *eventbus.Bus
	Functions *lambdarun.Registry
	// TTL deletes the expired items of the tables with Time to Live.
	TTL *ttl.Emulator
	// Processes are the functions run by their bootstrap
	// (Options.Bootstraps), by logical ID.
	Processes  map[string]*lambdaproc.Function
	bootstraps map[string]string
	// otherPolicies: the policies are not those of the template's own
	// transformed template (Options.TransformedTemplate).
	otherPolicies bool
	// checked are the endpoints behind the IAM checks served to
	// processes, by target endpoint.
	checked    map[string]*http.Server
	checkedURL map[string]string
	// IAM checks each call of the stack's principals against their
	// policies; its Denials are the calls it refused.
	IAM *iamgate.Gate

	// LambdaEndpoint serves Lambda's Invoke and CodeDeploy's lifecycle hook
	// status API (lambdaapi.go); CodeDeploy records the statuses reported.
	LambdaEndpoint string
	CodeDeploy     *lambdaapi.CodeDeploy
	lambdaAPI      *lambdaapi.Server

	async   *asyncInvoker
	faults  *fault.Injector
	failMu  sync.Mutex
	failed  []FailedInvocation
	ddb     *ddblocal.Server
	api     *http.Server
	apiDone chan error
	log     *slog.Logger
}

// Region and AccountID of the local stack.
const (
	Region    = "us-east-1"
	AccountID = "123456789012"
)

// Start runs the stack. Close stops it; on error, Start stops whatever it
// had started.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := &Stack{Tables: map[string]string{}, StateMachines: map[string]string{}, FunctionNames: map[string]string{}, log: log}
	if err := st.start(ctx, opts); err != nil {
		if cerr := st.Close(context.Background()); cerr != nil {
			log.Error("stop after failed start", "error", cerr)
		}
		return nil, err
	}
	return st, nil
}

func (st *Stack) start(ctx context.Context, opts Options) (err error) {
	log := st.log

	tplPath, err := templatePath(opts.Template)
	if err != nil {
		return err
	}
	tpl, err := cfn.Load(tplPath)
	if err != nil {
		return err
	}
	env := cfn.Env{Region: Region, AccountID: AccountID, Parameters: opts.Parameters}
	// The SAM template's own errors first: they name what to fix there.
	fns, err := tpl.Functions(env)
	if err != nil {
		return err
	}
	for _, f := range fns {
		if _, err := handlerOf(f, tplPath); err != nil {
			return err
		}
	}
	transformed := opts.TransformedTemplate
	if transformed == "" {
		transformed = cfn.TransformedPath(tplPath)
	}
	st.otherPolicies = transformed != cfn.TransformedPath(tplPath)
	ctpl, err := cfn.LoadTransformed(transformed)
	if err != nil {
		return err
	}
	if st.IAM, err = iamgate.New(ctpl, env, log.With("component", "iam")); err != nil {
		return err
	}

	if opts.DynamoDBEndpoint != "" && opts.DynamoDBPort != 0 {
		return errors.New("stack: DynamoDBPort is for the DynamoDB Local the stack starts; DynamoDBEndpoint names a running one")
	}
	if st.DynamoDBEndpoint = opts.DynamoDBEndpoint; st.DynamoDBEndpoint == "" {
		st.ddb, err = ddblocal.Start(ctx, ddblocal.Options{DataDir: opts.DataDir, Port: opts.DynamoDBPort, Logger: log.With("component", "dynamodb-local")})
		if err != nil {
			return err
		}
		st.DynamoDBEndpoint = st.ddb.Endpoint()
	}

	st.Functions = &lambdarun.Registry{}
	st.Bus = eventbus.New(eventbus.Config{Region: Region, AccountID: AccountID, TimeScale: opts.TimeScale,
		FirstScheduleAfter: opts.FirstScheduleAfter, Logger: log.With("component", "eventbridge")})
	st.async = newAsyncInvoker(st.Functions, opts.TimeScale, log.With("component", "lambda-async"), st.recordFailure)
	gate, err := newDynamoDBGate(st.DynamoDBEndpoint, opts.DynamoDBConcurrency)
	if err != nil {
		return err
	}
	var workflowDDB http.RoundTripper = gatedTransport{gate: gate, next: st.IAM.Transport(newTransport())}
	if opts.WorkflowDynamoDB != nil {
		workflowDDB = opts.WorkflowDynamoDB(workflowDDB)
	}
	var publisher sfnlocal.Publisher = st.Bus
	if st.faults = opts.Faults; st.faults != nil {
		st.Functions.SetInterceptor(st.faults.Interceptor())
		publisher = st.faults.Publisher(st.Bus)
		workflowDDB = st.faults.Transport(workflowDDB)
	}
	ddbCfg := sfnlocal.DynamoDBConfig{Endpoint: st.DynamoDBEndpoint, HTTPClient: &http.Client{Transport: workflowDDB}}
	st.SFN = sfnlocal.New(sfnlocal.Config{
		Region:          Region,
		AccountID:       AccountID,
		DynamoDB:        ddbCfg,
		Lambda:          sfnlocal.Registry(st.Functions),
		Publisher:       publisher,
		TimeScale:       opts.TimeScale,
		Logger:          log.With("component", "stepfunctions"),
		RoleCredentials: st.roleCredentials,
		AuthorizeInvoke: st.authorizeRoleInvoke,
	})
	sfnEndpoint, err := st.SFN.Listen(opts.SFNAddr)
	if err != nil {
		return fmt.Errorf("start Step Functions endpoint: %w", err)
	}
	if st.SFNEndpoint, err = loopback(sfnEndpoint, opts.SFNAddr); err != nil {
		return fmt.Errorf("start Step Functions endpoint: %w", err)
	}

	// The functions' SDK clients find the local endpoints the way they
	// find any endpoint: from the environment.
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": st.DynamoDBEndpoint,
		"AWS_ENDPOINT_URL_SFN":      st.SFNEndpoint,
		"AWS_REGION":                Region,
	} {
		os.Setenv(k, v)
	}
	setDefault("AWS_ACCESS_KEY_ID", "local")
	setDefault("AWS_SECRET_ACCESS_KEY", "local")
	if st.AWS, err = config.LoadDefaultConfig(ctx); err != nil {
		return fmt.Errorf("load AWS configuration: %w", err)
	}
	// The runtime's and the tests' own calls are the operator's: no
	// policy limits them. Each function signs with its role's
	// credentials instead (startFunctions).
	st.AWS.Credentials = credentials.StaticCredentialsProvider{Value: iamgate.AdminCredentials}
	st.AWS.HTTPClient = gatedClient{gate: gate, next: checkedClient{st.IAM.Transport(clientTransport{sdkHTTPClient(st.AWS.HTTPClient)})}}
	st.AWS.Logger = sdklog.New(log)
	// The runtime's own clients (table creation, TTL) never see faults;
	// the functions' clients, built from st.AWS, do.
	runtimeAWS := st.AWS.Copy()
	if st.faults != nil {
		st.AWS.APIOptions = append(st.AWS.APIOptions, st.faults.APIOptions()...)
	}
	st.AWS.APIOptions = append(st.AWS.APIOptions, opts.APIOptions...)

	if err := st.createTables(ctx, runtimeAWS, tpl, env, opts); err != nil {
		return err
	}
	names := st.FunctionNames         // function logical ID -> name
	async := map[string]asyncConfig{} // function logical ID -> EventInvokeConfig
	for _, f := range fns {
		names[f.LogicalID] = f.Name
		cfg := newAsyncConfig(f.EventInvokeConfig)
		if role := st.IAM.FunctionRole(f.LogicalID); role != nil {
			cfg.authorizeSend = func(typ, arn string) error { return st.IAM.AuthorizeDestination(role, typ, arn) }
		}
		async[f.LogicalID] = cfg
	}
	if st.bootstraps, err = bootstraps(fns, opts.Bootstraps); err != nil { // Options.Bootstraps
		return err
	}
	if err := st.startLambdaAPI(); err != nil { // lambdaapi.go
		return err
	}
	if err := st.startFunctions(ctx, fns, tplPath); err != nil {
		return err
	}
	if err := st.startStateMachines(tpl, env, filepath.Dir(tplPath)); err != nil {
		return err
	}
	if err := st.startRules(tpl, env, names, async, opts.Schedules); err != nil {
		return err
	}
	if opts.Ready != nil {
		if err := opts.Ready(ctx, st); err != nil {
			return err
		}
	}
	if err := st.startAPI(tpl, env, names, opts.APIAddr, opts.APICredentials); err != nil {
		return err
	}
	return nil
}

// loopback turns the endpoint of a server listening on an unspecified
// address (http://0.0.0.0:PORT, which Go reports as http://[::]:PORT)
// into one a client on this machine can dial: the same port on loopback,
// 127.0.0.1 unless the address asked for (addr, host:port) was IPv6.
// Other endpoints are returned as they are.
func loopback(endpoint, addr string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsUnspecified() {
		return endpoint, nil
	}
	host := "127.0.0.1"
	if h, _, err := net.SplitHostPort(addr); err == nil {
		if asked := net.ParseIP(h); asked != nil && asked.To4() == nil {
			host = "::1"
		}
	}
	u.Host = net.JoinHostPort(host, u.Port())
	return u.String(), nil
}

func setDefault(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

func templatePath(p string) (string, error) {
	if p != "" {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := ddblocal.ModuleRoot(wd)
	if err != nil {
		return "", fmt.Errorf("find template.yaml: %w", err)
	}
	return filepath.Join(root, "template.yaml"), nil
}

// createTables creates the template's tables that do not exist yet (a
// persistent DynamoDB Local keeps them across restarts), and the TTL
// emulator of those with Time to Live enabled.
func (st *Stack) createTables(ctx context.Context, cfg aws.Config, tpl *cfn.Template, env cfn.Env, opts Options) error {
	tables, err := tpl.Tables(env)
	if err != nil {
		return err
	}
	client := dynamodb.NewFromConfig(cfg)
	var expiring []ttl.Table
	for _, t := range tables {
		if t.TimeToLive != nil && aws.ToBool(t.TimeToLive.Enabled) {
			expiring = append(expiring, ttl.Table{Name: aws.ToString(t.Input.TableName), Attribute: aws.ToString(t.TimeToLive.AttributeName)})
		}
	}
	st.TTL = ttl.New(client, expiring, ttl.Options{Lag: opts.TTLLag, Interval: opts.TTLInterval, Logger: st.log.With("component", "ttl")})
	st.TTL.Start()
	existing, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	have := map[string]bool{}
	for _, n := range existing.TableNames {
		have[n] = true
	}
	var missing []cfn.Table
	for _, t := range tables {
		name := aws.ToString(t.Input.TableName)
		st.Tables[t.LogicalID] = name
		if !have[name] {
			missing = append(missing, t)
		}
	}
	return cfn.CreateTables(ctx, client, missing, nil)
}

// startFunctions builds every function's handler with the same wiring the
// deployed binary uses, with the template's environment variables.
func (st *Stack) startFunctions(ctx context.Context, fns []cfn.Function, tplPath string) error {
	for _, f := range fns {
		build, err := handlerOf(f, tplPath)
		if err != nil {
			return err
		}
		vars := f.Environment
		getenv := func(k string) string { return vars[k] }
		cfg, err := st.functionAWS(f)
		if err != nil {
			return err
		}
		log := metrics.WithStack(st.log.With("function", f.Name), vars[app.StackNameVar])
		h, err := build(ctx, getenv, app.AWS{Config: cfg}, log)
		if err != nil {
			return fmt.Errorf("function %s: %w", f.LogicalID, err)
		}
		// Options.Bootstraps: the function's bootstrap process instead.
		newHandler := func() lambda.Handler { return lambda.NewHandler(h) }
		if bin, ok := st.bootstraps[f.LogicalID]; ok {
			p, err := st.processFunction(f, bin, cfg)
			if err != nil {
				return fmt.Errorf("function %s: %w", f.LogicalID, err)
			}
			newHandler = p.NewHandler
		}
		if err := st.Functions.Register(&lambdarun.Function{
			Name:       f.Name,
			ARN:        lambdarun.FunctionARN(Region, AccountID, f.Name),
			Timeout:    f.Timeout,
			NewHandler: newHandler,
			Reserved:   f.ReservedConcurrency,
		}); err != nil {
			return fmt.Errorf("function %s: %w", f.LogicalID, err)
		}
	}
	return nil
}

// handlerOf is the Go handler of a function: internal/app/all.Functions by
// the last element of its CodeUri.
func handlerOf(f cfn.Function, tplPath string) (app.Constructor, error) {
	code := path.Base(strings.TrimSuffix(filepath.ToSlash(f.CodeUri), "/"))
	build, ok := all.Functions[code]
	if !ok {
		return nil, fmt.Errorf("%s: function %s: no Go handler for CodeUri %s (known: internal/app/all.Functions)",
			tplPath, f.LogicalID, f.CodeUri)
	}
	return build, nil
}

func (st *Stack) startStateMachines(tpl *cfn.Template, env cfn.Env, dir string) error {
	sms, err := tpl.StateMachines(env)
	if err != nil {
		return err
	}
	for _, sm := range sms {
		if sm.Type != cfn.DefaultStateMachineType {
			return fmt.Errorf("state machine %s: type %s is not supported locally (STANDARD only)", sm.LogicalID, sm.Type)
		}
		if err := st.SFN.AddStateMachine(sfnlocal.StateMachine{
			Name: sm.Name, ARN: sm.ARN, RoleARN: sm.RoleArn, Definition: sm.Definition,
			FileName: filepath.Join(dir, sm.DefinitionUri),
		}); err != nil {
			return err
		}
		st.StateMachines[sm.LogicalID] = sm.ARN
	}
	return nil
}

// startRules routes the template's event rules (and, when asked, its
// schedules) to their functions.
func (st *Stack) startRules(tpl *cfn.Template, env cfn.Env, names map[string]string, async map[string]asyncConfig, schedules bool) error {
	rules, err := tpl.Rules(env)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if !r.Enabled || (r.ScheduleExpression != "" && !schedules) {
			continue
		}
		inv, err := st.IAM.RuleInvocation(r.LogicalID)
		if err != nil {
			return fmt.Errorf("rule %s: %w", r.LogicalID, err)
		}
		target := functionTarget{async: st.async, name: names[r.TargetFunction], rule: r.Name, cfg: async[r.TargetFunction],
			authorize: func() error { return st.IAM.AuthorizeInvoke(inv) }}
		var policy eventbus.RetryPolicy
		if r.RetryPolicy != nil {
			policy = eventbus.RetryPolicy{MaximumRetryAttempts: r.RetryPolicy.MaximumRetryAttempts, MaximumEventAgeInSeconds: r.RetryPolicy.MaximumEventAgeInSeconds}
			if policy.MaximumRetryAttempts == 0 {
				policy.MaximumRetryAttempts = eventbus.NoRetries
			}
		}
		log := st.log.With("rule", r.Name)
		rule := eventbus.Rule{
			Name: r.Name, Target: target, RetryPolicy: policy,
			DeadLetter: func(ctx context.Context, event []byte, err error) {
				log.ErrorContext(ctx, "event dead-lettered", "deadLetterQueue", r.DeadLetterARN, "error", err, "event", string(event))
				var attempts int
				if de, ok := errors.AsType[*eventbus.DeliveryError](err); ok {
					attempts = de.Attempts
				}
				st.recordFailure(FailedInvocation{Kind: FailedDeadLetter, Function: target.name, Rule: r.Name,
					Destination: r.DeadLetterARN, Event: append([]byte(nil), event...), Attempts: attempts, Err: err, At: time.Now()})
			},
		}
		if r.ScheduleExpression != "" {
			if err := st.Bus.AddScheduleRule(rule, r.ScheduleExpression); err != nil {
				return fmt.Errorf("schedule %s: %w", r.LogicalID, err)
			}
			continue
		}
		if rule.Pattern, err = eventbus.Compile(r.Pattern); err != nil {
			return fmt.Errorf("rule %s: %w", r.LogicalID, err)
		}
		if err := st.Bus.AddRule(rule); err != nil {
			return fmt.Errorf("rule %s: %w", r.LogicalID, err)
		}
	}
	return nil
}

func (st *Stack) startAPI(tpl *cfn.Template, env cfn.Env, names map[string]string, addr string, creds map[string]apigw.Credential) error {
	routes, err := tpl.APIRoutes(env)
	if err != nil {
		return err
	}
	var rs []apigw.Route
	stage := ""
	for _, r := range routes {
		if stage == "" {
			stage, err = apiStage(tpl, env, r.RestApiID)
			if err != nil {
				return err
			}
		}
		inv, err := st.IAM.APIInvocation(r.RestApiID, stage, r.Method, r.Path)
		if err != nil {
			return fmt.Errorf("API %s %s: %w", r.Method, r.Path, err)
		}
		rs = append(rs, apigw.Route{Method: r.Method, Path: r.Path, FunctionName: names[r.FunctionLogicalID],
			Invoker: authorizedInvoker{gate: st.IAM, inv: inv, next: st.Functions}})
	}
	var definition []byte
	if len(routes) > 0 {
		// Routes of one API: the definition (request validation, gateway
		// responses) of the API they belong to.
		if definition, err = tpl.APIDefinition(env, routes[0].RestApiID); err != nil {
			return err
		}
	}
	rate, err := callerRate(tpl, env)
	if err != nil {
		return err
	}
	waits, waitLimited, err := waitRate(tpl, env)
	if err != nil {
		return err
	}
	srv, err := apigw.NewServer(apigw.Config{
		Routes: rs, Invoker: st.Functions, Stage: stage, AccountID: AccountID, APIID: "local",
		Definition: definition, Logger: st.log.With("component", "apigateway"),
		CallerRate: rate, WaitRate: waits, WaitLimited: waitLimited,
		Credentials: creds, Region: Region,
	})
	if err != nil {
		return err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("API: %w", err)
	}
	st.APIURL = "http://" + ln.Addr().String()
	st.api = srv.HTTPServer()
	st.apiDone = make(chan error, 1)
	go func() { st.apiDone <- st.api.Serve(srv.Listener(ln)) }()
	return nil
}

// CallerRateWindow is the window of the web ACL's per-caller rate rule
// (its EvaluationWindowSec), which the local API applies too.
const CallerRateWindow = 60 * time.Second

// callerRate is the per-caller limit the template's web ACL puts in front
// of the API: CallerRateLimit requests per CallerRateWindow, 0 for none.
// A template without the parameter has no limit.
func callerRate(tpl *cfn.Template, env cfn.Env) (apigw.RateLimit, error) {
	r, err := cfn.NewResolver(tpl, env)
	if err != nil {
		return apigw.RateLimit{}, err
	}
	v, ok := r.Parameter("CallerRateLimit")
	if !ok {
		return apigw.RateLimit{}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return apigw.RateLimit{}, fmt.Errorf("parameter CallerRateLimit: %q is not a number of requests", v)
	}
	return apigw.RateLimit{Limit: n, Window: CallerRateWindow}, nil
}

// wafHeaderPrefix is what AWS WAF puts before the name of a header a
// rule's action inserts.
const wafHeaderPrefix = "x-amzn-waf-"

// waitRate is the per-caller wait limit of the template's web ACL: the
// rate-based rule PerSessionWaitRate of the web ACL, when the web ACL
// exists and has it, with the header its Count action inserts. The local
// API counts each caller's requests that ask to wait against its Limit
// (per CallerRateWindow) and inserts that header past it.
func waitRate(tpl *cfn.Template, env cfn.Env) (apigw.RateLimit, string, error) {
	r, err := cfn.NewResolver(tpl, env)
	if err != nil {
		return apigw.RateLimit{}, "", err
	}
	acl, ok := tpl.Resources["ApiWebAcl"]
	if !ok {
		return apigw.RateLimit{}, "", nil
	}
	if exists, err := r.Exists(acl); err != nil || !exists {
		return apigw.RateLimit{}, "", err
	}
	v, err := r.Value(acl.Properties.Get("Rules"))
	if err != nil {
		return apigw.RateLimit{}, "", fmt.Errorf("ApiWebAcl Rules: %w", err)
	}
	rules, _ := v.([]any)
	for _, rv := range rules {
		rule, _ := rv.(map[string]any)
		if rule["Name"] != "PerSessionWaitRate" {
			continue
		}
		limit, ok := toInt(dig(rule, "Statement", "RateBasedStatement", "Limit"))
		if !ok {
			return apigw.RateLimit{}, "", fmt.Errorf("ApiWebAcl rule PerSessionWaitRate: no whole Limit")
		}
		headers, _ := dig(rule, "Action", "Count", "CustomRequestHandling", "InsertHeaders").([]any)
		if len(headers) != 1 {
			return apigw.RateLimit{}, "", fmt.Errorf("ApiWebAcl rule PerSessionWaitRate: want a Count action inserting one header")
		}
		name, _ := dig(headers[0].(map[string]any), "Name").(string)
		return apigw.RateLimit{Limit: limit, Window: CallerRateWindow}, wafHeaderPrefix + name, nil
	}
	return apigw.RateLimit{}, "", nil
}

// dig follows keys through nested mappings; nil when one is missing.
func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// toInt reads a resolved template number or numeric string.
func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

// apiStage is the StageName of the API resource id.
func apiStage(tpl *cfn.Template, env cfn.Env, id string) (string, error) {
	res, ok := tpl.Resources[id]
	if !ok || !res.Properties.Has("StageName") {
		return "Prod", nil
	}
	r, err := cfn.NewResolver(tpl, env)
	if err != nil {
		return "", err
	}
	return r.String(res.Properties.Get("StageName"))
}

// recordFailure keeps an event that went to an on-failure destination or a
// dead-letter queue.
func (st *Stack) recordFailure(f FailedInvocation) {
	st.failMu.Lock()
	defer st.failMu.Unlock()
	st.failed = append(st.failed, f)
}

// FailedInvocations returns, in order, the events sent to a function's
// on-failure destination after its asynchronous invocation failed for
// good, and those a rule dead-lettered. A healthy run has none.
func (st *Stack) FailedInvocations() []FailedInvocation {
	st.failMu.Lock()
	defer st.failMu.Unlock()
	return append([]FailedInvocation(nil), st.failed...)
}

// Drain waits until the stack is quiet: no event delivery in flight on the
// bus, no asynchronous invocation pending (retry waits included), and, with
// Faults, no delayed event or released detached invocation outstanding. It
// does not wait for running executions (see SFN.Wait). It returns ctx's
// error if ctx ends first.
func (st *Stack) Drain(ctx context.Context) error {
	quiet, cancel := context.WithCancel(context.Background())
	cancel() // a done context: Bus.Drain then only reports whether it is idle
	for {
		if st.faults != nil {
			if err := st.faults.Wait(ctx); err != nil {
				return fmt.Errorf("stack: drain: faults: %w", err)
			}
		}
		if err := st.Bus.Drain(ctx); err != nil {
			return fmt.Errorf("stack: drain: %w", err)
		}
		if err := st.async.wait(ctx); err != nil {
			return fmt.Errorf("stack: drain: asynchronous invocations: %w", err)
		}
		if st.Bus.Drain(quiet) == nil && st.async.isIdle() {
			return nil
		}
	}
}

// Close stops the stack: the TTL emulator, the API, then the running
// executions (given until ctx ends to finish, then aborted), the event bus
// and the pending asynchronous invocations, then DynamoDB Local if the
// stack started it.
func (st *Stack) Close(ctx context.Context) error {
	var errs []error
	if st.TTL != nil {
		st.TTL.Close()
	}
	if st.api != nil {
		errs = append(errs, st.api.Shutdown(ctx))
		if err := <-st.apiDone; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, st.closeLambdaAPI(ctx)) // lambdaapi.go
	if st.SFN != nil {
		errs = append(errs, st.SFN.Shutdown(ctx))
	}
	if st.Bus != nil {
		errs = append(errs, st.Bus.Close(ctx))
	}
	if st.async != nil {
		errs = append(errs, st.async.close(ctx))
	}
	for _, p := range st.Processes { // Options.Bootstraps
		errs = append(errs, p.Close(ctx))
	}
	for _, srv := range st.checked {
		errs = append(errs, srv.Shutdown(ctx))
	}
	if st.ddb != nil {
		errs = append(errs, st.ddb.Stop())
	}
	// The usage of the template's own policies: a stack given another
	// transformed template (a test's edited copy) has other grants.
	if dir := os.Getenv(iamgate.UsageDirEnv); dir != "" && st.IAM != nil && !st.otherPolicies {
		errs = append(errs, st.IAM.WriteUsage(dir))
	}
	return errors.Join(errs...)
}

// maxIdleConnsPerHost is how many idle keep-alive connections the
// runtime's HTTP clients keep to each local endpoint: as many as requests
// in flight at once, so that a busy stack reuses its connections. With
// Go's default of two (the Step Functions endpoint's DynamoDB client) and
// the SDK's ten (the functions'), every request beyond them opened a
// connection and closed it after one use: about half a connection per
// transfer at 8 clients, each accepted, set up and torn down by DynamoDB
// Local (bench/profiles/e2e.md).
const maxIdleConnsPerHost = 1024

// newTransport is the HTTP transport of the Step Functions endpoint's
// DynamoDB integrations: http.DefaultTransport's settings, keeping idle
// connections to DynamoDB Local for reuse.
func newTransport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0 // no limit over all hosts
	tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
	return tr
}

// sdkHTTPClient is the HTTP client of the functions' (and the runtime's)
// SDK clients: the one the SDK's configuration loaded (the SDK's default,
// with AWS_CA_BUNDLE's authorities when set), keeping idle connections to
// the local endpoints for reuse.
func sdkHTTPClient(loaded aws.HTTPClient) aws.HTTPClient {
	if loaded == nil {
		loaded = awshttp.NewBuildableClient()
	}
	b, ok := loaded.(*awshttp.BuildableClient)
	if !ok {
		return loaded
	}
	return b.WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = 0
		tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
	})
}

// Options.Bootstraps: the functions run by their bootstrap executable.

// bootstraps returns paths (Options.Bootstraps) once each of its logical
// IDs is checked to be one of fns.
func bootstraps(fns []cfn.Function, paths map[string]string) (map[string]string, error) {
	known := map[string]bool{}
	for _, f := range fns {
		known[f.LogicalID] = true
	}
	for id := range paths {
		if !known[id] {
			return nil, fmt.Errorf("stack: Bootstraps names %s, which is not a function of the template", id)
		}
	}
	return paths, nil
}

// processFunction returns the lambdaproc.Function that runs f's
// bootstrap, kept in Processes: its environment is the template's
// variables of f and the local endpoints, and its credentials are those
// of cfg, the configuration f's in-process handler gets (retrieved for
// each process start).
func (st *Stack) processFunction(f cfn.Function, bootstrap string, cfg aws.Config) (*lambdaproc.Function, error) {
	env := map[string]string{}
	maps.Copy(env, f.Environment)
	env["AWS_REGION"] = Region
	// Through the IAM checks, as the in-process functions' calls go.
	var err error
	if env["AWS_ENDPOINT_URL_DYNAMODB"], err = st.checkedEndpoint(st.DynamoDBEndpoint); err != nil {
		return nil, err
	}
	if env["AWS_ENDPOINT_URL_SFN"], err = st.checkedEndpoint(st.SFNEndpoint); err != nil {
		return nil, err
	}
	// The Lambda and CodeDeploy endpoint checks its callers itself.
	env["AWS_ENDPOINT_URL_LAMBDA"], env["AWS_ENDPOINT_URL_CODEDEPLOY"] = st.LambdaEndpoint, st.LambdaEndpoint
	p, err := lambdaproc.New(lambdaproc.Config{
		Bootstrap: bootstrap, Name: f.Name, ARN: lambdarun.FunctionARN(Region, AccountID, f.Name),
		MemoryMB: f.MemorySize, Region: Region, Timeout: f.Timeout, Env: env,
		Credentials: cfg.Credentials, Logger: st.log.With("function", f.Name),
	})
	if err != nil {
		return nil, err
	}
	if st.Processes == nil {
		st.Processes = map[string]*lambdaproc.Function{}
	}
	st.Processes[f.LogicalID] = p
	return p, nil
}
