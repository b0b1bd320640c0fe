// Command stackenv prints, as shell exports, what the deployed-stack tests
// and the load run read from a stack: its API URL, tables, state machine
// (outputs), region (stack id), MaxTransferAmount and AccountOwnership
// (parameters). `make integration STACK_NAME=name` and
// `make load STACK_NAME=name` evaluate it.
//
//	eval "$(go run ./cmd/stackenv -stack exactlyonce-transfers-dev)"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/exactlyonce/transfers/internal/stackenv"
)

func main() {
	stack := flag.String("stack", "", "the CloudFormation stack's name")
	flag.Parse()
	if err := run(context.Background(), *stack); err != nil {
		fmt.Fprintln(os.Stderr, "stackenv:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stack string) error {
	if stack == "" {
		return fmt.Errorf("-stack is required")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS configuration: %w", err)
	}
	env, err := stackenv.Read(ctx, cloudformation.NewFromConfig(cfg), stack)
	if err != nil {
		return err
	}
	fmt.Print(stackenv.Shell(env))
	return nil
}
