package iamgate

import (
	"fmt"
	"strings"

	"github.com/exactlyonce/transfers/internal/iam"
)

// managedPolicies are the AWS managed policies a role of the stack may
// name, as AWS publishes them (default versions). A role that names any
// other cannot be checked locally: loading it fails with the policy's
// ARN, so that a new one is added here with its document rather than
// allowed or denied by guess.
var managedPolicies = map[string]string{
	"service-role/AWSLambdaBasicExecutionRole": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["logs:CreateLogGroup","logs:CreateLogStream","logs:PutLogEvents"],"Resource":"*"}]}`,
	"AWSXrayWriteOnlyAccess":                   `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["xray:PutTraceSegments","xray:PutTelemetryRecords","xray:GetSamplingRules","xray:GetSamplingTargets","xray:GetSamplingStatisticSummaries"],"Resource":["*"]}]}`,
	"AWSXRayDaemonWriteAccess":                 `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["xray:PutTraceSegments","xray:PutTelemetryRecords","xray:GetSamplingRules","xray:GetSamplingTargets","xray:GetSamplingStatisticSummaries"],"Resource":["*"]}]}`,
}

// managedPolicy returns the AWS managed policy arn names.
func managedPolicy(arn string) (*iam.Policy, error) {
	_, name, ok := strings.Cut(arn, ":iam::aws:policy/")
	if !ok {
		return nil, fmt.Errorf("managed policy %s: only AWS managed policies (arn:aws:iam::aws:policy/...) are known locally", arn)
	}
	doc, ok := managedPolicies[name]
	if !ok {
		return nil, fmt.Errorf("AWS managed policy %s is not known to the local IAM check (internal/local/iamgate managedPolicies): add its document", arn)
	}
	return iam.ParsePolicy("aws-managed/"+name, []byte(doc))
}
