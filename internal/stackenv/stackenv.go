// Package stackenv reads what the deployed-stack tests and the load run
// need from a CloudFormation stack (DescribeStacks): the API URL, the
// table names and the state machine from its outputs, the region from its
// id, and the parameters that change what the tests expect. It gives them
// as the environment variables integration/ and cmd/load read.
package stackenv

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/smithy-go"
)

// DescribeStacksAPI is the CloudFormation call Read makes.
type DescribeStacksAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

var _ DescribeStacksAPI = (*cloudformation.Client)(nil)

// outputs maps the stack's outputs to the variables they set; all are
// required.
var outputs = map[string]string{
	"ApiUrl":                  "API_URL",
	"LedgerTableName":         "LEDGER_TABLE",
	"IdempotencyTableName":    "IDEMPOTENCY_TABLE",
	"TransferStateMachineArn": "STATE_MACHINE_ARN",
}

// parameters maps the stack's parameters to the variables they set, when
// the stack has them.
var parameters = map[string]string{
	"MaxTransferAmount": "MAX_TRANSFER_AMOUNT",
	"AccountOwnership":  "ACCOUNT_OWNERSHIP",
}

// ErrNotReady is returned for a stack that lacks an output the tests need:
// one that is still being created, or that failed.
var ErrNotReady = errors.New("stack has not all the outputs the tests need")

// Read describes the stack and returns its variables: API_URL,
// LEDGER_TABLE, IDEMPOTENCY_TABLE, STATE_MACHINE_ARN, AWS_REGION, and
// MAX_TRANSFER_AMOUNT and ACCOUNT_OWNERSHIP from its parameters.
func Read(ctx context.Context, cf DescribeStacksAPI, stack string) (map[string]string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" {
			return nil, fmt.Errorf("stack %s: %s (is the region right? AWS_REGION or the profile's region)", stack, ae.ErrorMessage())
		}
		return nil, fmt.Errorf("describe stack %s: %w", stack, err)
	}
	if len(out.Stacks) != 1 {
		return nil, fmt.Errorf("describe stack %s: %d stacks, want 1", stack, len(out.Stacks))
	}
	s := out.Stacks[0]
	env := map[string]string{}
	for _, o := range s.Outputs {
		if name, ok := outputs[aws.ToString(o.OutputKey)]; ok {
			env[name] = aws.ToString(o.OutputValue)
		}
	}
	var missing []string
	for key, name := range outputs {
		if env[name] == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("stack %s (%s): no output %s: %w", stack, s.StackStatus, strings.Join(missing, ", "), ErrNotReady)
	}
	for _, p := range s.Parameters {
		if name, ok := parameters[aws.ToString(p.ParameterKey)]; ok {
			env[name] = aws.ToString(p.ParameterValue)
		}
	}
	id, err := arn.Parse(aws.ToString(s.StackId))
	if err != nil {
		return nil, fmt.Errorf("stack %s: its id %q: %w", stack, aws.ToString(s.StackId), err)
	}
	env["AWS_REGION"] = id.Region
	return env, nil
}

// Shell writes env as POSIX shell assignments, one "export NAME='value'"
// per line in name order, for eval.
func Shell(env map[string]string) string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(env[k], "'", `'\''`))
	}
	return b.String()
}
