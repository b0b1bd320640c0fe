// Command seed opens accounts with opening balances in a local or deployed
// stack. Existing accounts are left untouched, their owners too.
//
//	seed -stack exactlyonce-transfers -owner iam:arn:aws:iam::123456789012:role/Payments demo-alice:EUR:100000 demo-bob:EUR:100000
//	LEDGER_TABLE=... IDEMPOTENCY_TABLE=... seed acct-1:USD:5000:iam:arn:aws:iam::123456789012:user/alice
//
// Every account has an owner: the caller scope that may debit and read it
// (see internal/seed.Account). An account spec may end in ":OWNER";
// -owner is the owner of the others, and of the demo accounts (default:
// the local stack's default caller).
//
// Table names come from -ledger-table/-idempotency-table, else the
// LEDGER_TABLE/IDEMPOTENCY_TABLE environment variables, else the outputs
// of the CloudFormation stack named by -stack. The DynamoDB endpoint and
// credentials are the SDK's usual ones (AWS_ENDPOINT_URL_DYNAMODB for
// DynamoDB Local).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/seed"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	ledgerTable := fs.String("ledger-table", os.Getenv("LEDGER_TABLE"), "ledger table name")
	idemTable := fs.String("idempotency-table", os.Getenv("IDEMPOTENCY_TABLE"), "idempotency table name")
	stack := fs.String("stack", "", "CloudFormation stack whose outputs name the tables")
	demo := fs.Bool("demo", false, "open the demo accounts demo-alice and demo-bob (EUR 1,000.00 each)")
	owner := fs.String("owner", "", "caller scope that owns the accounts without an :OWNER of their own, e.g. iam:arn:aws:iam::123456789012:user/alice (demo accounts: default "+seed.LocalOwner+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var accounts []seed.Account
	if *demo {
		for _, a := range seed.Demo {
			if *owner != "" {
				a.Owner = *owner
			}
			accounts = append(accounts, a)
		}
	}
	for _, spec := range fs.Args() {
		a, err := seed.Parse(spec, *owner)
		if err != nil {
			return err
		}
		accounts = append(accounts, a)
	}
	if len(accounts) == 0 {
		return errors.New("no accounts given: pass ID:CURRENCY:BALANCE arguments or -demo")
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS configuration: %w", err)
	}
	if (*ledgerTable == "" || *idemTable == "") && *stack != "" {
		out, err := stackOutputs(ctx, cloudformation.NewFromConfig(awsCfg), *stack)
		if err != nil {
			return err
		}
		if *ledgerTable == "" {
			*ledgerTable = out["LedgerTableName"]
		}
		if *idemTable == "" {
			*idemTable = out["IdempotencyTableName"]
		}
	}
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), ledger.Config{LedgerTable: *ledgerTable, IdempotencyTable: *idemTable})
	if err != nil {
		return fmt.Errorf("%w (set -ledger-table and -idempotency-table, the environment, or -stack)", err)
	}
	created, err := seed.Open(ctx, led, accounts)
	for i, ok := range created {
		fmt.Println(seed.Describe(ctx, led, accounts[i], ok))
	}
	return err
}

// stackOutputs reads a stack's outputs.
func stackOutputs(ctx context.Context, cf *cloudformation.Client, stack string) (map[string]string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return nil, fmt.Errorf("describe stack %s: %w", stack, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("stack %s not found", stack)
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m, nil
}
