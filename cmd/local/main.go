// Command local serves the whole stack of template.yaml offline on one
// machine: DynamoDB Local, the functions, the state machine, the event
// rules and schedules, and the REST API on 127.0.0.1:3000.
//
// The caller of a request is the bearer token of "Authorization: Bearer
// NAME" (default "local"): it becomes the IAM user
// arn:aws:iam::123456789012:user/NAME in the request context, where the
// deployed API's AWS_IAM authorizer puts the signing principal.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/seed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

// config is what the command line asks for.
type config struct {
	port        int
	ddbPort     int
	sfnPort     int
	sfnAddr     string
	seed        bool
	dataDir     string
	verbose     bool
	ttlInterval time.Duration
	ttlLag      time.Duration
	firstSweep  time.Duration
	params      paramFlag
}

// parseFlags reads the command line (without the program name). Help
// and errors go to output.
func parseFlags(args []string, output io.Writer) (*config, error) {
	c := &config{params: paramFlag{}}
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.IntVar(&c.port, "port", 3000, "API port on 127.0.0.1")
	fs.IntVar(&c.ddbPort, "ddb-port", 0, "DynamoDB Local's port, on all interfaces (it has no bind option); 0 picks a free port")
	fs.IntVar(&c.sfnPort, "sfn-port", 0, "the Step Functions endpoint's port; 0 picks a free port")
	fs.StringVar(&c.sfnAddr, "sfn-addr", "127.0.0.1", "the IP address the Step Functions endpoint listens on; 0.0.0.0 makes it reachable from Docker containers (sam local), and from the network: it has no authentication")
	fs.BoolVar(&c.seed, "seed", true, "open the demo accounts demo-alice and demo-bob")
	fs.StringVar(&c.dataDir, "data", "", "keep DynamoDB Local's data in this folder (default: in memory)")
	fs.BoolVar(&c.verbose, "v", false, "log every request, execution and function line (DEBUG); without it, the runtime's INFO lines and the functions' warnings and errors")
	fs.DurationVar(&c.ttlInterval, "ttl-interval", time.Minute, "how often expired items are deleted from tables with Time to Live (0: never)")
	fs.DurationVar(&c.ttlLag, "ttl-lag", 0, "how long after its expiry an item becomes deletable")
	fs.DurationVar(&c.firstSweep, "first-sweep-after", 30*time.Second, "when the sweeper first runs after the start (then at its SweepSchedule)")
	fs.Var(c.params, "param", "override a template parameter, as Key=Value (repeatable; defaults: "+localDefaults.String()+")")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for name, p := range map[string]int{"-port": c.port, "-ddb-port": c.ddbPort, "-sfn-port": c.sfnPort} {
		if p < 0 || p > 65535 {
			return nil, fmt.Errorf("%s %d: want a port from 0 to 65535", name, p)
		}
	}
	if net.ParseIP(c.sfnAddr) == nil {
		return nil, fmt.Errorf("-sfn-addr %q: want an IP address, e.g. 127.0.0.1 or 0.0.0.0", c.sfnAddr)
	}
	if c.ddbPort != 0 && c.ddbPort == c.sfnPort {
		return nil, fmt.Errorf("-ddb-port and -sfn-port are both %d", c.ddbPort)
	}
	for k, v := range localDefaults {
		if _, set := c.params[k]; !set {
			c.params[k] = v
		}
	}
	return c, nil
}

// stackOptions are the local stack's options for c.
func (c *config) stackOptions(log *slog.Logger) stack.Options {
	return stack.Options{
		APIAddr:            net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		DynamoDBPort:       c.ddbPort,
		SFNAddr:            net.JoinHostPort(c.sfnAddr, strconv.Itoa(c.sfnPort)),
		DataDir:            c.dataDir,
		Schedules:          true,
		FirstScheduleAfter: c.firstSweep,
		Parameters:         c.params,
		TTLInterval:        c.ttlInterval,
		TTLLag:             c.ttlLag,
		Logger:             log,
	}
}

func run() error {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}

	// Without -v: the runtime's INFO lines, and the functions' warnings
	// and errors. With -v: every line, a request's and a function's
	// included.
	level, functionLevel := slog.LevelInfo, slog.LevelWarn
	if c.verbose {
		level, functionLevel = slog.LevelDebug, slog.LevelDebug
	}
	log := slog.New(quietFunctions{next: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}), functionLevel: functionLevel})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := c.stackOptions(log)
	var opened []string
	if c.seed {
		// Before the API opens, so that its first request finds them.
		opts.Ready = func(ctx context.Context, st *stack.Stack) error {
			led, err := ledger.New(dynamodb.NewFromConfig(st.AWS), ledger.Config{
				LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"],
			})
			if err != nil {
				return err
			}
			created, err := seed.Open(ctx, led, seed.Demo)
			for i, ok := range created {
				opened = append(opened, seed.Describe(ctx, led, seed.Demo[i], ok))
			}
			return err
		}
	}
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.Close(shutdown); err != nil {
			log.Error("stop", "error", err)
		}
	}()

	fmt.Fprint(os.Stderr, banner(st, opened, c.verbose))
	if ip := net.ParseIP(c.sfnAddr); !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "Warning: the Step Functions endpoint listens on %s, without authentication: anyone who reaches this machine can start executions that move money in the local tables.\n",
			net.JoinHostPort(c.sfnAddr, portOf(st.SFNEndpoint)))
	}
	fmt.Fprint(os.Stderr, "Press Ctrl-C to stop.\n\n")
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		return context.Cause(ctx)
	}
	fmt.Fprintln(os.Stderr, "stopping")
	return nil
}

// banner is what make local prints once the stack is ready: its
// endpoints, its tables and state machines, and the demo accounts, one per
// line and aligned.
func banner(st *stack.Stack, accounts []string, verbose bool) string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "  %-15s %s\n", k, v) }
	b.WriteString("\nReady.\n")
	row("API", st.APIURL+"   (Authorization: Bearer NAME; default caller: local)")
	row("DynamoDB", st.DynamoDBEndpoint)
	row("Step Functions", st.SFNEndpoint)
	for _, id := range slices.Sorted(maps.Keys(st.Tables)) {
		row("Table", st.Tables[id])
	}
	for _, id := range slices.Sorted(maps.Keys(st.StateMachines)) {
		row("State machine", st.StateMachines[id])
	}
	for _, a := range accounts {
		row("Account", a)
	}
	if !verbose {
		row("Logs", "the runtime's INFO lines and the functions' warnings and errors; -v (make local LOCAL_FLAGS=-v) logs every request and function line")
	}
	return b.String()
}

// portOf is the port of an http://host:port endpoint.
func portOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Port()
}

// localDefaults are the template parameters the local stack overrides by
// default. Executions live in this process: when it dies they are gone
// (on AWS they survive), so the sweeper runs every minute, from 30 s after
// the start (-first-sweep-after), and restarts a transfer whose execution
// is missing once its record is 20 s old and 10 s unchanged. A transfer
// is pushed forward for 10 minutes (CompleteWithinSeconds), so that a
// stack stopped for longer shows the window's end. The deployed defaults
// (StuckAfterSeconds=900, NotFoundGraceSeconds=60, rate(5 minutes),
// CompleteWithinSeconds=3600) stay in template.yaml.
var localDefaults = paramFlag{
	"StuckAfterSeconds":     "20",
	"NotFoundGraceSeconds":  "10",
	"CompleteWithinSeconds": "600",
	"SweepSchedule":         "rate(1 minute)",
}

// paramFlag collects repeated -param Key=Value flags.
type paramFlag map[string]string

func (p paramFlag) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k+"="+p[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (p paramFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want Key=Value, got %q", s)
	}
	p[k] = v
	return nil
}
