// Command cfncheck reports what CloudFormation would refuse in a JSON
// template, such as the SAM translator's output: a dependency cycle
// between resources, a reference to a resource, parameter, condition,
// mapping or attribute that does not exist, a null value, a malformed
// Fn::Sub or structure. Each problem is a line prefixed by the file name.
//
//	go run ./cmd/cfncheck FILE.json
//
// It exits 1 when there is a problem, 0 (printing a summary) when there is
// none, 2 on a usage error or a file it cannot read. The resource types
// whose Fn::GetAtt attributes it does not know are printed as a note.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/exactlyonce/transfers/internal/cfncheck"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cfncheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: cfncheck FILE.json") }
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err == nil {
			fs.Usage()
		}
		return 2
	}
	file := fs.Arg(0)
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "cfncheck:", err)
		return 2
	}
	tpl, problems := cfncheck.Parse(data)
	if tpl != nil {
		problems = cfncheck.Check(tpl)
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "%s: %s\n", file, p)
	}
	if types := cfncheck.UncheckedTypes(tpl); len(types) > 0 {
		fmt.Fprintf(stdout, "%s: note: Fn::GetAtt attributes not checked for %s\n", file, strings.Join(types, ", "))
	}
	if len(problems) > 0 {
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s\n", file, cfncheck.Summary(tpl))
	return 0
}
