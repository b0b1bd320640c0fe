// Command samebuild checks that pairs of Go binaries are the same build:
// the same `go version -m` information (Go version, modules, build
// settings) and the same size. `make build-check` runs it on make build's
// and sam build's bootstraps.
//
//	go run ./cmd/samebuild bin/orchestrator/bootstrap=.aws-sam/build/OrchestratorFunction/bootstrap ...
//
// It prints one line per pair and exits 1 if any pair differs.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/exactlyonce/transfers/internal/buildcheck"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: samebuild WANT=GOT ...")
		os.Exit(2)
	}
	failed := false
	for _, pair := range os.Args[1:] {
		want, got, ok := strings.Cut(pair, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "samebuild: %q is not WANT=GOT\n", pair)
			os.Exit(2)
		}
		if err := buildcheck.Same(want, got); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL", err)
			failed = true
			continue
		}
		d, err := buildcheck.Describe(got)
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL", err)
			failed = true
			continue
		}
		fmt.Printf("same %s = %s: %s\n", want, got, d)
	}
	if failed {
		os.Exit(1)
	}
}
