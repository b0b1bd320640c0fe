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
	"log/slog"
	"os"
	"os/signal"
	"sort"
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

func run() error {
	port := flag.Int("port", 3000, "API port on 127.0.0.1")
	doSeed := flag.Bool("seed", true, "open the demo accounts demo-alice and demo-bob")
	dataDir := flag.String("data", "", "keep DynamoDB Local's data in this folder (default: in memory)")
	verbose := flag.Bool("v", false, "log at debug level")
	ttlInterval := flag.Duration("ttl-interval", time.Minute, "how often expired items are deleted from tables with Time to Live (0: never)")
	ttlLag := flag.Duration("ttl-lag", 0, "how long after its expiry an item becomes deletable")
	firstSweep := flag.Duration("first-sweep-after", 30*time.Second, "when the sweeper first runs after the start (then at its SweepSchedule)")
	params := paramFlag{}
	flag.Var(params, "param", "override a template parameter, as Key=Value (repeatable; defaults: "+localDefaults.String()+")")
	flag.Parse()
	for k, v := range localDefaults {
		if _, set := params[k]; !set {
			params[k] = v
		}
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := stack.Start(ctx, stack.Options{
		APIAddr:            fmt.Sprintf("127.0.0.1:%d", *port),
		DataDir:            *dataDir,
		Schedules:          true,
		FirstScheduleAfter: *firstSweep,
		Parameters:         params,
		TTLInterval:        *ttlInterval,
		TTLLag:             *ttlLag,
		Logger:             log,
	})
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

	if *doSeed {
		led, err := ledger.New(dynamodb.NewFromConfig(st.AWS), ledger.Config{
			LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"],
		})
		if err != nil {
			return err
		}
		created, err := seed.Open(ctx, led, seed.Demo)
		if err != nil {
			return err
		}
		for i, ok := range created {
			log.Info("demo account", "accountId", seed.Demo[i].ID, "opened", ok)
		}
	}

	fmt.Fprintf(os.Stderr, "\nAPI            %s\nDynamoDB       %s\nStep Functions %s\nTables         %v\nPress Ctrl-C to stop.\n\n",
		st.APIURL, st.DynamoDBEndpoint, st.SFNEndpoint, st.Tables)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		return context.Cause(ctx)
	}
	fmt.Fprintln(os.Stderr, "stopping")
	return nil
}

// localDefaults are the template parameters the local stack overrides by
// default. Executions live in this process: when it dies they are gone
// (on AWS they survive), so the sweeper runs every minute, from 30 s after
// the start (-first-sweep-after), and restarts a transfer whose execution
// is missing once its record is 20 s old and 10 s unchanged. The
// deployed defaults (StuckAfterSeconds=900, NotFoundGraceSeconds=60,
// rate(5 minutes)) stay in template.yaml.
var localDefaults = paramFlag{
	"StuckAfterSeconds":    "20",
	"NotFoundGraceSeconds": "10",
	"SweepSchedule":        "rate(1 minute)",
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
