// Command iamreport adds up what the local stacks of a test run were
// granted and what their calls used (each stack writes its usage to
// $IAM_USAGE_DIR when it stops), and prints every grant no call used: an
// action on a resource that a role's own policy, or a function's resource
// policy, allows and no test exercised. Each is a permission to remove, or
// to keep with a reason in the template.
//
//	go run ./cmd/iamreport DIR
//
// It exits 0 after printing (the list informs; it does not fail a run),
// 2 when DIR holds no usage.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/exactlyonce/transfers/internal/local/iamgate"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: iamreport DIR")
		return 2
	}
	unused, files, err := iamgate.Unused(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "iamreport:", err)
		return 2
	}
	if files == 0 {
		fmt.Fprintf(stderr, "iamreport: no usage in %s (set %s for the tests)\n", args[0], iamgate.UsageDirEnv)
		return 2
	}
	var unusedHere, notEmulated []iamgate.Grant
	for _, g := range unused {
		if iamgate.NotEmulated(g.Action) {
			notEmulated = append(notEmulated, g)
		} else {
			unusedHere = append(unusedHere, g)
		}
	}
	if len(unusedHere) == 0 {
		fmt.Fprintf(stdout, "IAM: every grant of a service the local stack runs was used by a call of the %d local stacks\n", files)
	} else {
		fmt.Fprintf(stdout, "IAM: %d grants no call of the %d local stacks used (remove each, or keep it with its reason in template.yaml):\n", len(unusedHere), files)
		for _, g := range unusedHere {
			fmt.Fprintln(stdout, "  "+g.String())
		}
	}
	if len(notEmulated) > 0 {
		fmt.Fprintf(stdout, "IAM: %d grants of services the local stack does not run (logs, X-Ray), not checked\n", len(notEmulated))
	}
	return 0
}
