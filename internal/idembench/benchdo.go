package idembench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// BenchDo is what the idempotency module's BenchmarkDo measured: Do's own
// cost on its in-memory store, against the bare handler.
type BenchDo struct {
	// Command is the command that ran it, as a shell would show it.
	Command string
	// Output is go test's output, as printed.
	Output string
	// NsPerOp are each sub-benchmark's ns/op, one per -count, by name
	// ("bare", "new", "duplicate", "cached").
	NsPerOp map[string][]float64
}

// Median is the median ns/op of the sub-benchmark name, and whether it
// ran.
func (b *BenchDo) Median(name string) (float64, bool) {
	v := slices.Clone(b.NsPerOp[name])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// RunBenchDo runs `go test -run '^$' -bench BenchmarkDo -benchmem -count
// count` in the idempotency module's folder dir, with env added (an
// AWS_ENDPOINT_URL_DYNAMODB keeps its TestMain from starting a DynamoDB
// Local of its own), and parses its output.
func RunBenchDo(ctx context.Context, goCmd, dir string, count int, env []string) (*BenchDo, error) {
	args := []string{"test", "-run", "^$", "-bench", "BenchmarkDo", "-benchmem", "-count", strconv.Itoa(count), "."}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	shown := fmt.Sprintf("cd idempotency && %s test -run '^$' -bench BenchmarkDo -benchmem -count %d .", goCmd, count)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", shown, err, out.String())
	}
	b := ParseBenchDo(out.String())
	b.Command = shown
	for _, name := range []string{"bare", "cached"} {
		if _, ok := b.Median(name); !ok {
			return nil, fmt.Errorf("%s printed no BenchmarkDo/%s line:\n%s", shown, name, out.String())
		}
	}
	return b, nil
}

// ParseBenchDo reads go test's benchmark output: every
// "BenchmarkDo/<name>-<procs> <n> <ns> ns/op ..." line.
func ParseBenchDo(out string) *BenchDo {
	b := &BenchDo{Output: strings.TrimSpace(out), NsPerOp: map[string][]float64{}}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkDo/") || f[3] != "ns/op" {
			continue
		}
		name := strings.TrimPrefix(f[0], "BenchmarkDo/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		ns, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			continue
		}
		b.NsPerOp[name] = append(b.NsPerOp[name], ns)
	}
	return b
}
