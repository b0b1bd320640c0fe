package idembench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/bench"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// setup creates ours's and Powertools' tables for one test on the
// DynamoDB Local of ddbtest.Main, and returns its endpoint and their
// names.
func setup(t *testing.T) (endpoint, ours, powertools string) {
	t.Helper()
	endpoint = os.Getenv(ddbtest.EnvEndpoint)
	if endpoint == "" {
		t.Fatal("no DynamoDB Local: ddbtest.Main sets " + ddbtest.EnvEndpoint)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	ours, powertools = "ours-"+suffix, "powertools-"+suffix
	client := NewClient(endpoint)
	t.Cleanup(func() {
		for _, name := range []string{ours, powertools} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	if err := CreateTables(t.Context(), client, ours, powertools); err != nil {
		t.Fatal(err)
	}
	return endpoint, ours, powertools
}

// tiny is a command small enough for make test: 2 workers, 4 requests.
func tiny(scenario string) Command {
	return Command{Scenario: scenario, Workers: 2, Requests: 4, Warmup: 1, Pool: 2, Prefix: "t-" + scenario}
}

// TestGoSideCalls: ours's calls per request in each scenario, exactly
// (2 for a new key, 1 for a duplicate, 0 from the cache...), every one an
// UpdateItem, and the handler run only where the scenario runs it.
func TestGoSideCalls(t *testing.T) {
	endpoint, table, _ := setup(t)
	g := NewGoSide(endpoint, table)
	want := map[string]int64{
		New: 2, Duplicate: 1, Cached: 0, InFlight: 1, HandlerError: 2, RetryAfterError: 2,
		Mismatch: 1, PermanentError: 2, RetryAfterPermanent: 1,
	}
	if len(want) != len(Scenarios) {
		t.Fatalf("the test knows %d scenarios, Scenarios has %d", len(want), len(Scenarios))
	}
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			c := tiny(sc.Name)
			res, err := g.Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(c.Requests)
			if got := res.TotalCalls(); got != want[sc.Name]*n || int64(sc.Calls) != want[sc.Name] {
				t.Errorf("%d calls (%v) for %d requests, want %d each (Scenarios says %d)", got, res.Calls, n, want[sc.Name], sc.Calls)
			}
			for op := range res.Calls {
				if op != "UpdateItem" {
					t.Errorf("called %s: %v", op, res.Calls)
				}
			}
			if res.HandlerRuns != int64(sc.Handler)*n {
				t.Errorf("handler ran %d times, want %d", res.HandlerRuns, int64(sc.Handler)*n)
			}
			if len(res.LatenciesNs) != c.Requests || res.ElapsedNs <= 0 {
				t.Errorf("%d latencies in %d ns", len(res.LatenciesNs), res.ElapsedNs)
			}
		})
	}
}

// TestGoSideRefusesUnexpectedAnswers: a command whose keys do not hold
// what the scenario expects fails; and a replay where the scenario runs
// the handler shows in the handler's count, which Measure checks.
func TestGoSideRefusesUnexpectedAnswers(t *testing.T) {
	endpoint, table, _ := setup(t)
	g := NewGoSide(endpoint, table)
	if _, err := g.Run(t.Context(), tiny(New)); err != nil {
		t.Fatal(err)
	}
	// The same keys with a failing handler: their stored outputs come
	// back instead of the handler's error.
	c := tiny(HandlerError)
	c.Prefix = tiny(New).Prefix
	if _, err := g.Run(t.Context(), c); err == nil || !strings.Contains(err.Error(), "want the handler's error") {
		t.Errorf("a stored output passed for the handler's error: %v", err)
	}
	// The same keys as new keys: replayed, so the handler never ran.
	res, err := g.Run(t.Context(), tiny(New))
	if err != nil || res.HandlerRuns != 0 || res.TotalCalls() != int64(tiny(New).Requests) {
		t.Errorf("new keys that were duplicates: %d handler runs, %d calls, %v; want 0, 1 each", res.HandlerRuns, res.TotalCalls(), err)
	}
	// Completed keys to hold: the holding calls are replayed at once.
	if _, err := g.Run(t.Context(), tiny(Duplicate)); err != nil {
		t.Fatal(err)
	}
	c = tiny(InFlight)
	c.Prefix = tiny(Duplicate).Prefix
	if _, err := g.Run(t.Context(), c); err == nil || !strings.Contains(err.Error(), "ended before it was released") {
		t.Errorf("completed keys passed for held ones: %v", err)
	}
}

// TestPowertoolsSide runs driver.py in .tools/powertools (which make
// bench-idempotency makes; make test does not) with the same tiny
// commands: Powertools' calls by operation in each scenario, as its code
// reads. Without the venv it skips.
func TestPowertoolsSide(t *testing.T) {
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(root, ".tools", "powertools", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no Powertools venv (%v): make bench-idempotency makes it; make test does not", err)
	}
	endpoint, _, table := setup(t)
	side, err := StartSide(t.Context(), Powertools, []string{python, filepath.Join(root, "tools", "powertools-bench", "driver.py"), "--endpoint", endpoint, "--table", table},
		[]string{"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_EC2_METADATA_DISABLED=true"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := side.Close(); err != nil {
			t.Error(err)
		}
	}()
	// The venv holds what the requirements pin.
	pins := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(aws-lambda-powertools|boto3|botocore)==(\S+)$`).FindAllStringSubmatch(readFile(t, filepath.Join(root, "tools", "powertools-bench", "requirements.txt")), -1) {
		pins[m[1]] = m[2]
	}
	if len(pins) != 3 {
		t.Fatalf("requirements.txt pins %v", pins)
	}
	for dist, v := range pins {
		if side.Hello.Versions[dist] != v {
			t.Errorf("the venv has %s %s, requirements.txt pins %s: make bench-idempotency installs again", dist, side.Hello.Versions[dist], v)
		}
	}
	want := map[string]map[string]int64{
		New:             {"PutItem": 1, "UpdateItem": 1},
		Duplicate:       {"PutItem": 1},
		Cached:          {},
		InFlight:        {"PutItem": 1},
		HandlerError:    {"PutItem": 1, "DeleteItem": 1},
		RetryAfterError: {"PutItem": 1, "DeleteItem": 1},
		Mismatch:        {"PutItem": 1},
	}
	for _, sc := range Scenarios {
		if !sc.Powertools {
			if _, err := side.Run(t.Context(), tiny(sc.Name)); err == nil {
				t.Errorf("the Powertools side ran %s, which it has no counterpart of", sc.Name)
			}
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			c := tiny(sc.Name)
			res, err := side.Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			perRequest := map[string]int64{}
			var total int64
			for op, n := range res.Calls {
				perRequest[op] = n / int64(c.Requests)
				total += n
				if n%int64(c.Requests) != 0 {
					t.Errorf("%d %s calls for %d requests", n, op, c.Requests)
				}
			}
			if !maps.Equal(perRequest, want[sc.Name]) || total != int64(sc.PowertoolsCalls*c.Requests) {
				t.Errorf("calls per request %v, want %v (Scenarios says %d)", perRequest, want[sc.Name], sc.PowertoolsCalls)
			}
			if res.HandlerRuns != int64(sc.Handler*c.Requests) {
				t.Errorf("handler ran %d times, want %d", res.HandlerRuns, sc.Handler*c.Requests)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServe: a side's end of the protocol writes its hello, answers each
// command with one line, and turns a failure into Result.Error.
func TestServe(t *testing.T) {
	in := strings.NewReader(`{"scenario":"new","workers":1,"requests":1,"warmup":0,"pool":1,"prefix":"a"}` + "\n" +
		`{"scenario":"duplicate","workers":1,"requests":1,"warmup":0,"pool":1,"prefix":"b"}` + "\n" + "not json\n")
	var out strings.Builder
	run := func(_ context.Context, c Command) (Result, error) {
		if c.Scenario == Duplicate {
			return Result{}, io.ErrUnexpectedEOF
		}
		return Result{Scenario: c.Scenario, LatenciesNs: []int64{5}, ElapsedNs: 5, Calls: map[string]int64{"UpdateItem": 2}}, nil
	}
	if err := Serve(t.Context(), in, &out, Hello{Side: "ours", Versions: map[string]string{"go": "x"}}, run); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want hello and 3 answers:\n%s", len(lines), out.String())
	}
	var hello Hello
	if err := json.Unmarshal([]byte(lines[0]), &hello); err != nil || hello.Side != "ours" {
		t.Errorf("hello %q: %v", lines[0], err)
	}
	var res [3]Result
	for i := range res {
		if err := json.Unmarshal([]byte(lines[i+1]), &res[i]); err != nil {
			t.Fatal(err)
		}
	}
	if res[0].Error != "" || res[0].TotalCalls() != 2 {
		t.Errorf("answer %+v", res[0])
	}
	if res[1].Error != io.ErrUnexpectedEOF.Error() || res[2].Error == "" {
		t.Errorf("failures answered %q and %q", res[1].Error, res[2].Error)
	}
}

// TestSideThatDies: a side process that ends instead of answering fails
// the command, with what it wrote to stderr.
func TestSideThatDies(t *testing.T) {
	side, err := StartSide(t.Context(), "dying", []string{"sh", "-c", `echo '{"side":"dying"}'; read line; echo gone >&2; exit 3`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = side.Run(t.Context(), tiny(New))
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("Run = %v, want the process's end and its stderr", err)
	}
	if err := side.Close(); err == nil {
		t.Error("Close of a side that exited 3 = nil")
	}
}

// fake answers every command with fixed figures: perSecond requests/s
// and calls[scenario] calls per request.
type fake struct {
	perSecond float64
	calls     map[string]int64
}

func (f fake) Run(_ context.Context, c Command) (Result, error) {
	sc, _ := ScenarioNamed(c.Scenario)
	lat := make([]int64, c.Requests)
	for i := range lat {
		lat[i] = int64(time.Millisecond)
	}
	return Result{Scenario: c.Scenario, LatenciesNs: lat, ElapsedNs: int64(float64(c.Requests) / f.perSecond * 1e9),
		Calls: map[string]int64{"UpdateItem": f.calls[c.Scenario] * int64(c.Requests)}, HandlerRuns: int64(sc.Handler * c.Requests)}, nil
}

// TestTargets: the calls target compares each scenario of ours with its
// counterpart of Powertools, the requests/s targets are the ratio of the
// same run, and the report says PASS and FAIL.
func TestTargets(t *testing.T) {
	calls := map[string]int64{}
	for _, sc := range Scenarios {
		calls[sc.Name] = int64(sc.Calls)
	}
	ptCalls := maps.Clone(calls)
	ptCalls[Duplicate] = 2 // as if Powertools read the record apart
	run, err := Measure(t.Context(), Config{Workers: []int{1, 8}, Rounds: 2, Requests: 10, Warmup: 1, Pool: 2},
		fake{perSecond: 300, calls: calls}, fake{perSecond: 250, calls: ptCalls})
	if err != nil {
		t.Fatal(err)
	}
	run.Bench = ParseBenchDo("BenchmarkDo/bare-2 100 2.5 ns/op\nBenchmarkDo/cached-2 100 1502.5 ns/op\nBenchmarkDo/cached-2 100 3000 ns/op\nBenchmarkDo/cached-2 100 1000 ns/op\n")
	var calledTargets, ratioTargets int
	for _, tg := range run.Targets() {
		switch tg.Name {
		case "calls per request, ours ≤ Powertools'":
			calledTargets++
			if !tg.Pass() {
				t.Errorf("%s at %s: %v against %v", tg.Name, tg.At, tg.Measured, tg.Threshold)
			}
			if strings.HasPrefix(tg.At, "retry after a Permanent error") && tg.Threshold != 2 {
				t.Errorf("the retry of a Permanent error is compared with %v calls, want Powertools' retry after an error's 2", tg.Threshold)
			}
		case "requests/s, ours / Powertools":
			ratioTargets++
			if tg.Pass() || tg.Measured < 1.19 || tg.Measured > 1.21 {
				t.Errorf("%s at %s: %.3f, want 1.2 and a FAIL", tg.Name, tg.At, tg.Measured)
			}
		default:
			if !tg.Pass() || tg.Measured != 1.5 {
				t.Errorf("%s: %v µs, want the median 1502.5 less 2.5 ns: 1.5 µs, a PASS", tg.Name, tg.Measured)
			}
		}
	}
	if calledTargets != len(Scenarios) || ratioTargets != 4 {
		t.Errorf("%d calls targets and %d requests/s targets, want %d and 4", calledTargets, ratioTargets, len(Scenarios))
	}
	s, _ := run.Sample(New, 8, Powertools)
	if s.Requests() != 20 || len(s.PerRound) != 2 {
		t.Errorf("Powertools new at 8 workers: %d requests, %d rounds; want the warm-up round left out: 20 and 2", s.Requests(), len(s.PerRound))
	}
	var report strings.Builder
	if err := run.Markdown(&report, bench.Machine{Cores: 2}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| PASS |", "| **FAIL** |", "## Raw figures", "BenchmarkDo/cached-2"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, report.String())
		}
	}
}

// TestMeasureRefusesAWrongHandlerCount: a side whose handler runs where
// the scenario does not run it breaks the run.
func TestMeasureRefusesAWrongHandlerCount(t *testing.T) {
	_, err := Measure(t.Context(), Config{Workers: []int{1}, Rounds: 1, Requests: 2, Warmup: 1, Pool: 1},
		fake{perSecond: 1, calls: map[string]int64{}}, runsAlways{})
	if err == nil || !strings.Contains(err.Error(), "the handler ran") {
		t.Errorf("Measure = %v", err)
	}
}

type runsAlways struct{}

func (runsAlways) Run(ctx context.Context, c Command) (Result, error) {
	res, err := fake{perSecond: 1}.Run(ctx, c)
	res.HandlerRuns = int64(c.Requests)
	return res, err
}
