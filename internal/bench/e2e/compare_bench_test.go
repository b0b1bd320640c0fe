package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCompare measures Run against the Replay of its operations at
// 1, 8 and 32 clients, interleaved (Probe.Compare), on the test stack:
//
//	go test -run '^$' -bench Compare -benchtime 1x ./internal/bench/e2e/
//
// E2E_ROUNDS (default 6) and E2E_SLICE (default 2s) set the rounds and
// the length of each slice; -cpuprofile, -blockprofile and -mutexprofile
// profile the whole stack, which runs in the test process (DynamoDB
// Local aside). Besides the throughputs and the ratio it reports the CPU
// time each transfer cost this process (go-ms) and DynamoDB Local's JVM
// (jvm-ms), where /proc tells.
func BenchmarkCompare(b *testing.B) {
	rounds, slice := benchSettings(b)
	pairs, err := SeedPairs(context.Background(), st, 32, DefaultCaller, opening)
	if err != nil {
		b.Fatal(err)
	}
	mix, err := probe.Capture(context.Background(), st, CaptureConfig{Pair: pairs[0]})
	if err != nil {
		b.Fatal(err)
	}
	// DynamoDB Local compiles its hot paths in the first seconds.
	if _, err := probe.Compare(context.Background(), st, mix, CompareConfig{Config: Config{Clients: 8, Duration: 3 * time.Second, Pairs: pairs}, Rounds: 1}); err != nil {
		b.Fatal(err)
	}
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			var c Comparison
			var e2eCost, replayCost sideCost
			for range b.N {
				c, e2eCost, replayCost = Comparison{}, sideCost{}, sideCost{}
				// Compare's rounds, with the CPU time of each side.
				for range rounds {
					var res Result
					var rep ReplayResult
					var err error
					e2eCost = e2eCost.add(measureCPU(func() {
						res, err = probe.Run(context.Background(), st, Config{Clients: clients, Duration: slice, Pairs: pairs})
					}))
					if err != nil {
						b.Fatal(err)
					}
					replayCost = replayCost.add(measureCPU(func() {
						rep, err = Replay(context.Background(), st, mix, ReplayConfig{Clients: clients, Duration: slice, Pairs: pairs})
					}))
					if err != nil {
						b.Fatal(err)
					}
					c.E2E, c.Replay = addResult(c.E2E, res), addReplay(c.Replay, rep)
				}
			}
			c.Ratio = c.E2E.PerSecond / c.Replay.PerSecond
			b.ReportMetric(c.E2E.PerSecond, "e2e/s")
			b.ReportMetric(c.Replay.PerSecond, "replay/s")
			b.ReportMetric(100*c.Ratio, "ratio-%")
			b.ReportMetric(e2eCost.perTransfer(e2eCost.goCPU, c.E2E.Completed), "e2e-go-ms")
			b.ReportMetric(e2eCost.perTransfer(e2eCost.jvmCPU, c.E2E.Completed), "e2e-jvm-ms")
			b.ReportMetric(replayCost.perTransfer(replayCost.goCPU, c.Replay.Transfers), "replay-go-ms")
			b.ReportMetric(replayCost.perTransfer(replayCost.jvmCPU, c.Replay.Transfers), "replay-jvm-ms")
			if c.Replay.ConditionFailures > 0 || len(c.Replay.Failures) > 0 {
				b.Errorf("replayed operations failed: %v", c.Replay.Failures)
			}
		})
	}
}

// sideCost is the CPU time one side of a comparison cost.
type sideCost struct{ goCPU, jvmCPU time.Duration }

func (a sideCost) add(b sideCost) sideCost {
	return sideCost{goCPU: a.goCPU + b.goCPU, jvmCPU: a.jvmCPU + b.jvmCPU}
}

// perTransfer is d over n transfers, in milliseconds.
func (sideCost) perTransfer(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond) / float64(n)
}

func benchSettings(b *testing.B) (int, time.Duration) {
	b.Helper()
	rounds, slice := 6, 2*time.Second
	if v := os.Getenv("E2E_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("E2E_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}
	if v := os.Getenv("E2E_SLICE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("E2E_SLICE=%q: want a positive duration", v)
		}
		slice = d
	}
	return rounds, slice
}

// measureCPU runs f and returns the CPU time this process and its
// children spent meanwhile, from /proc; zero where /proc does not tell.
func measureCPU(f func()) sideCost {
	s0, c0 := procCPU()
	f()
	s1, c1 := procCPU()
	return sideCost{goCPU: s1 - s0, jvmCPU: c1 - c0}
}

// procCPU is the user and system time of this process and of its direct
// children (DynamoDB Local's JVM), from /proc/<pid>/stat.
func procCPU() (self, children time.Duration) {
	me := strconv.Itoa(os.Getpid())
	self, _ = statCPU("self")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return self, 0
	}
	for _, e := range entries {
		if cpu, ppid := statCPU(e.Name()); ppid == me {
			children += cpu
		}
	}
	return self, children
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times on Linux.
const clockTicks = 100

func statCPU(pid string) (cpu time.Duration, ppid string) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, ""
	}
	f := strings.Fields(s[i+2:]) // from the state, field 3
	if len(f) < 13 {
		return 0, ""
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, ""
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, f[1]
}
