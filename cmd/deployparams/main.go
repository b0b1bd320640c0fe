// Command deployparams prints an environment's parameter overrides from
// samconfig.toml with more KEY=VALUE pairs added or replaced, as one
// --parameter-overrides value: sam deploy's --parameter-overrides replaces
// the configuration's whole list, so a value given on the command line
// (make deploy ENV=prod ALARM_TOPIC_ARN=...) must be sent with the rest.
// It refuses the result when a rule of template.yaml's Rules section
// refuses it, as CloudFormation would.
//
//	go run ./cmd/deployparams -env prod AlarmTopicArn=arn:aws:sns:eu-west-1:123456789012:oncall
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/exactlyonce/transfers/internal/deployparams"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deployparams", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := fs.String("env", "", "samconfig.toml environment (default, dev, prod)")
	config := fs.String("config", "samconfig.toml", "the SAM configuration file")
	template := fs.String("template", "template.yaml", "the template whose parameters and rules apply")
	if err := fs.Parse(args); err != nil || *env == "" {
		fmt.Fprintln(stderr, "usage: deployparams -env ENV [KEY=VALUE ...]")
		return 2
	}
	out, err := deployparams.Overrides(*config, *template, *env, fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "deployparams:", err)
		return 1
	}
	fmt.Fprintln(stdout, out)
	return 0
}
