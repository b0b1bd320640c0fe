package idembench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/percentile"
)

// Side names.
const (
	Ours       = "ours"
	Powertools = "powertools"
)

// Config sizes a run.
type Config struct {
	// Workers are the concurrencies measured; default 1 and 8.
	Workers []int
	// Rounds is how many interleaved rounds add up to a figure, and
	// Requests how many requests each side sends per scenario,
	// concurrency and round; default 5 and 200.
	Rounds, Requests int
	// Warmup is how many requests each command sends before it measures,
	// and the size of the warm-up round that precedes the first; default
	// 20.
	Warmup int
	// Pool is how many keys a pooled scenario's requests go round;
	// default 64.
	Pool int
	// Progress receives a line per step; nil is silent.
	Progress func(format string, args ...any)
}

func (c *Config) defaults() {
	if len(c.Workers) == 0 {
		c.Workers = []int{1, 8}
	}
	if c.Rounds <= 0 {
		c.Rounds = 5
	}
	if c.Requests <= 0 {
		c.Requests = 200
	}
	if c.Warmup <= 0 {
		c.Warmup = 20
	}
	if c.Pool <= 0 {
		c.Pool = 64
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// Runner is one side as the run sees it: a process (*Side) or, in
// tests, a GoSide in this one.
type Runner interface {
	Run(context.Context, Command) (Result, error)
}

// Sample is what one side measured for one scenario at one concurrency,
// summed over the rounds.
type Sample struct {
	// Latencies are every measured request's, sorted.
	Latencies []time.Duration
	// Elapsed is the sum of the rounds' wall times.
	Elapsed time.Duration
	// Calls counts the calls by operation.
	Calls       map[string]int64
	HandlerRuns int64
	// PerRound are the rounds' requests/s, in round order: the raw
	// figures.
	PerRound []float64
}

// Requests is the number of requests measured.
func (s *Sample) Requests() int { return len(s.Latencies) }

// PerSecond is requests per second of wall time.
func (s *Sample) PerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(len(s.Latencies)) / s.Elapsed.Seconds()
}

// CallsPerRequest is the mean number of calls per request.
func (s *Sample) CallsPerRequest() float64 {
	if len(s.Latencies) == 0 {
		return 0
	}
	var n int64
	for _, c := range s.Calls {
		n += c
	}
	return float64(n) / float64(len(s.Latencies))
}

// Percentile is the nearest-rank percentile at permille per mille.
func (s *Sample) Percentile(permille int) time.Duration {
	return percentile.Of(s.Latencies, permille)
}

func (s *Sample) add(r Result) {
	for _, ns := range r.LatenciesNs {
		s.Latencies = append(s.Latencies, time.Duration(ns))
	}
	slices.Sort(s.Latencies)
	s.Elapsed += time.Duration(r.ElapsedNs)
	if s.Calls == nil {
		s.Calls = map[string]int64{}
	}
	for op, n := range r.Calls {
		s.Calls[op] += n
	}
	s.HandlerRuns += r.HandlerRuns
	s.PerRound = append(s.PerRound, float64(len(r.LatenciesNs))/time.Duration(r.ElapsedNs).Seconds())
}

// CellKey names a Sample: a scenario at a concurrency on a side.
type CellKey struct {
	Scenario string
	Workers  int
	Side     string
}

// Run is a run's figures.
type Run struct {
	Config  Config
	Started time.Time
	// Versions are each side's, from its Hello.
	Versions map[string]map[string]string
	Samples  map[CellKey]*Sample
	// Bench is BenchmarkDo's, when it ran.
	Bench *BenchDo
}

// Sample returns the sample of scenario at workers on side.
func (r *Run) Sample(scenario string, workers int, side string) (*Sample, bool) {
	s, ok := r.Samples[CellKey{scenario, workers, side}]
	return s, ok
}

// Measure runs every scenario on both sides, ours and powertools: a
// warm-up round, not kept, then cfg.Rounds rounds, each of which runs
// every scenario at every concurrency on each side in turn, the side
// that goes first alternating from one scenario and round to the next.
// An answer that is not the scenario's, or a handler that runs when it
// should not (or does not when it should), fails the run.
func Measure(ctx context.Context, cfg Config, ours, powertools Runner) (*Run, error) {
	cfg.defaults()
	run := &Run{Config: cfg, Started: time.Now(), Versions: map[string]map[string]string{}, Samples: map[CellKey]*Sample{}}
	sides := map[string]Runner{Ours: ours, Powertools: powertools}
	turn := 0
	for round := 0; round <= cfg.Rounds; round++ {
		requests := cfg.Requests
		if round == 0 {
			cfg.Progress("warm-up round: every scenario, %d requests each, not kept", cfg.Warmup)
			requests = cfg.Warmup
		}
		for _, workers := range cfg.Workers {
			for _, sc := range Scenarios {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				order := []string{Ours}
				if sc.Powertools {
					order = []string{Ours, Powertools}
					if turn%2 == 1 {
						order = []string{Powertools, Ours}
					}
					turn++
				}
				line := fmt.Sprintf("round %d/%d, %d worker%s, %s:", round, cfg.Rounds, workers, plural(workers), sc.Name)
				for _, side := range order {
					c := Command{Scenario: sc.Name, Workers: workers, Requests: requests, Warmup: cfg.Warmup, Pool: cfg.Pool,
						Prefix: fmt.Sprintf("r%d-w%d-%s", round, workers, sc.Name)}
					res, err := sides[side].Run(ctx, c)
					if err != nil {
						return nil, fmt.Errorf("round %d, %d workers: %w", round, workers, err)
					}
					if want := int64(sc.Handler * requests); res.HandlerRuns != want {
						return nil, fmt.Errorf("round %d, %d workers, %s side, %s: the handler ran %d times for %d requests, want %d",
							round, workers, side, sc.Name, res.HandlerRuns, requests, want)
					}
					line += fmt.Sprintf(" %s %.0f/s, %.2f calls;", side, float64(requests)/time.Duration(res.ElapsedNs).Seconds(),
						float64(res.TotalCalls())/float64(requests))
					if round == 0 {
						continue
					}
					k := CellKey{sc.Name, workers, side}
					if run.Samples[k] == nil {
						run.Samples[k] = &Sample{}
					}
					run.Samples[k].add(res)
				}
				if round > 0 {
					cfg.Progress("%s", line)
				}
			}
		}
	}
	return run, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// PowertoolsTable is the CreateTableInput of Powertools' default
// DynamoDBPersistenceLayer: the partition key id (a string), on demand;
// PowertoolsTimeToLive turns on Time to Live on expiration.
func PowertoolsTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}
}

// PowertoolsTimeToLive is the Time to Live of PowertoolsTable.
func PowertoolsTimeToLive(name string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expiration"), Enabled: aws.Bool(true)},
	}
}

// CreateTables creates ours's table (the table the library documents:
// idempotency.DefaultAttributes' TableInput, with its TimeToLiveInput)
// and Powertools' (PowertoolsTable, with
// PowertoolsTimeToLive), and waits until both are active.
func CreateTables(ctx context.Context, client *dynamodb.Client, ours, powertools string) error {
	for _, t := range []struct {
		create *dynamodb.CreateTableInput
		ttl    *dynamodb.UpdateTimeToLiveInput
	}{
		{idempotency.DefaultAttributes().TableInput(ours), idempotency.DefaultAttributes().TimeToLiveInput(ours)},
		{PowertoolsTable(powertools), PowertoolsTimeToLive(powertools)},
	} {
		name := aws.ToString(t.create.TableName)
		if _, err := client.CreateTable(ctx, t.create); err != nil {
			return fmt.Errorf("create table %s: %w", name, err)
		}
		if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: t.create.TableName}, time.Minute); err != nil {
			return fmt.Errorf("create table %s: %w", name, err)
		}
		if _, err := client.UpdateTimeToLive(ctx, t.ttl); err != nil {
			return fmt.Errorf("time to live on %s: %w", name, err)
		}
	}
	return nil
}
