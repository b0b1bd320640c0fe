package iam_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/iam"
)

// kv is a request context.
type kv = map[string][]string

// absent is the value of a context key known to be absent from the request.
var absent = []string{}

// TestConditions evaluates one Allow statement whose Condition block is the
// case's, and reports whether it applies: AWS's "Condition operators".
func TestConditions(t *testing.T) {
	tests := []struct {
		name      string
		condition string
		context   kv
		want      bool
	}{
		// String operators.
		{"StringEquals matches the same value",
			`{"StringEquals":{"aws:PrincipalTag/team":"payments"}}`, kv{"aws:PrincipalTag/team": {"payments"}}, true},
		{"StringEquals is case-sensitive",
			`{"StringEquals":{"aws:PrincipalTag/team":"payments"}}`, kv{"aws:PrincipalTag/team": {"Payments"}}, false},
		{"StringEquals has no wildcards",
			`{"StringEquals":{"aws:PrincipalTag/team":"pay*"}}`, kv{"aws:PrincipalTag/team": {"payments"}}, false},
		{"StringEquals with several values matches any of them",
			`{"StringEquals":{"aws:PrincipalTag/team":["ledger","payments"]}}`, kv{"aws:PrincipalTag/team": {"payments"}}, true},
		{"StringEquals with several values matches none of the others",
			`{"StringEquals":{"aws:PrincipalTag/team":["ledger","payments"]}}`, kv{"aws:PrincipalTag/team": {"risk"}}, false},
		{"StringEquals on an absent key does not match",
			`{"StringEquals":{"aws:PrincipalTag/team":"payments"}}`, kv{"aws:PrincipalTag/team": absent}, false},
		{"StringNotEquals matches another value",
			`{"StringNotEquals":{"aws:PrincipalTag/team":"payments"}}`, kv{"aws:PrincipalTag/team": {"risk"}}, true},
		{"StringNotEquals does not match the value",
			`{"StringNotEquals":{"aws:PrincipalTag/team":"payments"}}`, kv{"aws:PrincipalTag/team": {"payments"}}, false},
		{"StringNotEquals with several values matches a value that is none of them",
			`{"StringNotEquals":{"aws:PrincipalTag/team":["ledger","payments"]}}`, kv{"aws:PrincipalTag/team": {"risk"}}, true},
		{"StringNotEquals with several values does not match any of them",
			`{"StringNotEquals":{"aws:PrincipalTag/team":["ledger","payments"]}}`, kv{"aws:PrincipalTag/team": {"ledger"}}, false},
		{"StringNotEquals on an absent key matches",
			`{"StringNotEquals":{"aws:PrincipalTag/team":"payments"}}`, kv{"aws:PrincipalTag/team": absent}, true},
		{"StringEqualsIgnoreCase ignores case",
			`{"StringEqualsIgnoreCase":{"aws:PrincipalTag/team":"PAYMENTS"}}`, kv{"aws:PrincipalTag/team": {"payments"}}, true},
		{"StringEqualsIgnoreCase on an absent key does not match",
			`{"StringEqualsIgnoreCase":{"aws:PrincipalTag/team":"PAYMENTS"}}`, kv{"aws:PrincipalTag/team": absent}, false},
		{"StringNotEqualsIgnoreCase does not match the value in another case",
			`{"StringNotEqualsIgnoreCase":{"aws:PrincipalTag/team":"PAYMENTS"}}`, kv{"aws:PrincipalTag/team": {"payments"}}, false},
		{"StringNotEqualsIgnoreCase matches another value",
			`{"StringNotEqualsIgnoreCase":{"aws:PrincipalTag/team":"PAYMENTS"}}`, kv{"aws:PrincipalTag/team": {"ledger"}}, true},
		{"StringLike with *",
			`{"StringLike":{"s3:prefix":"home/*"}}`, kv{"s3:prefix": {"home/alice/notes"}}, true},
		{"StringLike with ?",
			`{"StringLike":{"s3:prefix":"home/?"}}`, kv{"s3:prefix": {"home/a"}}, true},
		{"StringLike ? matches exactly one character",
			`{"StringLike":{"s3:prefix":"home/?"}}`, kv{"s3:prefix": {"home/ab"}}, false},
		{"StringLike is case-sensitive",
			`{"StringLike":{"s3:prefix":"home/*"}}`, kv{"s3:prefix": {"HOME/a"}}, false},
		{"StringLike * matches colons",
			`{"StringLike":{"aws:userid":"AROAEXAMPLE:*"}}`, kv{"aws:userid": {"AROAEXAMPLE:worker:1"}}, true},
		{"StringLike on an absent key does not match",
			`{"StringLike":{"s3:prefix":"*"}}`, kv{"s3:prefix": absent}, false},
		{"StringNotLike matches a value outside the pattern",
			`{"StringNotLike":{"s3:prefix":"home/*"}}`, kv{"s3:prefix": {"tmp/x"}}, true},
		{"StringNotLike does not match a value of the pattern",
			`{"StringNotLike":{"s3:prefix":"home/*"}}`, kv{"s3:prefix": {"home/x"}}, false},
		{"StringNotLike on an absent key matches",
			`{"StringNotLike":{"s3:prefix":"home/*"}}`, kv{"s3:prefix": absent}, true},

		// ARN operators: each of the six parts compared on its own.
		{"ArnEquals matches the ARN",
			`{"ArnEquals":{"aws:SourceArn":"` + rule + `"}}`, kv{"aws:SourceArn": {rule}}, true},
		{"ArnEquals takes wildcards, as ArnLike",
			`{"ArnEquals":{"aws:SourceArn":"arn:aws:events:*:123456789012:rule/*"}}`, kv{"aws:SourceArn": {rule}}, true},
		{"ArnLike with wildcards in the region and resource",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:events:us-*:123456789012:rule/Night*"}}`, kv{"aws:SourceArn": {rule}}, true},
		{"ArnLike with a wildcard in the service",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:*:us-east-1:123456789012:rule/Nightly"}}`, kv{"aws:SourceArn": {rule}}, true},
		{"ArnLike is case-sensitive",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:events:us-east-1:123456789012:rule/nightly"}}`, kv{"aws:SourceArn": {rule}}, false},
		{"ArnLike does not match another account",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:events:us-east-1:999999999999:rule/*"}}`, kv{"aws:SourceArn": {rule}}, false},
		{"ArnLike checks the parts separately: a * ending the region does not reach the account",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:states:us-east-1*:stateMachine:Transfer"}}`,
			kv{"aws:SourceArn": {"arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"}}, false},
		{"ArnLike matches colons in the resource part",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:states:us-east-1:123456789012:execution:*"}}`,
			kv{"aws:SourceArn": {"arn:aws:states:us-east-1:123456789012:execution:Transfer:run-1"}}, true},
		{"ArnLike does not match a value that is not an ARN",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:events:*:*:*"}}`, kv{"aws:SourceArn": {"rule/Nightly"}}, false},
		{"ArnLike on an absent key does not match",
			`{"ArnLike":{"aws:SourceArn":"arn:aws:events:*:*:*"}}`, kv{"aws:SourceArn": absent}, false},
		{"ArnNotEquals matches another ARN",
			`{"ArnNotEquals":{"aws:SourceArn":"arn:aws:events:us-east-1:123456789012:rule/Other"}}`, kv{"aws:SourceArn": {rule}}, true},
		{"ArnNotEquals does not match the ARN",
			`{"ArnNotEquals":{"aws:SourceArn":"` + rule + `"}}`, kv{"aws:SourceArn": {rule}}, false},
		{"ArnNotLike does not match an ARN of the pattern",
			`{"ArnNotLike":{"aws:SourceArn":"arn:aws:events:*:*:rule/*"}}`, kv{"aws:SourceArn": {rule}}, false},
		{"ArnNotLike on an absent key matches",
			`{"ArnNotLike":{"aws:SourceArn":"arn:aws:events:*:*:rule/*"}}`, kv{"aws:SourceArn": absent}, true},

		// Numeric operators.
		{"NumericEquals", `{"NumericEquals":{"dynamodb:ReturnConsumedCapacity":"3"}}`, kv{"dynamodb:ReturnConsumedCapacity": {"3"}}, true},
		{"NumericEquals compares numbers, not text", `{"NumericEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10.0"}}, true},
		{"NumericEquals does not match another number", `{"NumericEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"11"}}, false},
		{"NumericEquals does not match a value that is not a number", `{"NumericEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"ten"}}, false},
		{"NumericEquals on an absent key does not match", `{"NumericEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": absent}, false},
		{"NumericNotEquals matches another number", `{"NumericNotEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"11"}}, true},
		{"NumericNotEquals does not match the number", `{"NumericNotEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10"}}, false},
		{"NumericNotEquals on an absent key matches", `{"NumericNotEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": absent}, true},
		{"NumericLessThan below", `{"NumericLessThan":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"9"}}, true},
		{"NumericLessThan at the bound", `{"NumericLessThan":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10"}}, false},
		{"NumericLessThanEquals at the bound", `{"NumericLessThanEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10"}}, true},
		{"NumericLessThanEquals above", `{"NumericLessThanEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10.5"}}, false},
		{"NumericGreaterThan above", `{"NumericGreaterThan":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"11"}}, true},
		{"NumericGreaterThan at the bound", `{"NumericGreaterThan":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10"}}, false},
		{"NumericGreaterThanEquals at the bound", `{"NumericGreaterThanEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"10"}}, true},
		{"NumericGreaterThanEquals below", `{"NumericGreaterThanEquals":{"s3:max-keys":10}}`, kv{"s3:max-keys": {"-1"}}, false},
		{"NumericLessThan on an absent key does not match", `{"NumericLessThan":{"s3:max-keys":10}}`, kv{"s3:max-keys": absent}, false},

		// Date operators.
		{"DateGreaterThan after", `{"DateGreaterThan":{"aws:CurrentTime":"2024-01-01T00:00:00Z"}}`, kv{"aws:CurrentTime": {"2024-06-01T12:00:00Z"}}, true},
		{"DateGreaterThan before", `{"DateGreaterThan":{"aws:CurrentTime":"2024-01-01T00:00:00Z"}}`, kv{"aws:CurrentTime": {"2023-12-31T23:59:59Z"}}, false},
		{"DateLessThan with epoch seconds", `{"DateLessThan":{"aws:EpochTime":"1700000000"}}`, kv{"aws:EpochTime": {"1699999999"}}, true},
		{"DateLessThanEquals across forms", `{"DateLessThanEquals":{"aws:CurrentTime":"2024-01-01"}}`, kv{"aws:CurrentTime": {"1704067200"}}, true},
		{"DateGreaterThanEquals with an offset", `{"DateGreaterThanEquals":{"aws:CurrentTime":"2024-01-01T01:00:00+01:00"}}`, kv{"aws:CurrentTime": {"2024-01-01T00:00:00Z"}}, true},
		{"DateEquals", `{"DateEquals":{"aws:TokenIssueTime":"2024-01-01T00:00:00Z"}}`, kv{"aws:TokenIssueTime": {"2024-01-01T00:00:00.000Z"}}, true},
		{"DateNotEquals", `{"DateNotEquals":{"aws:TokenIssueTime":"2024-01-01T00:00:00Z"}}`, kv{"aws:TokenIssueTime": {"2024-01-02T00:00:00Z"}}, true},
		{"DateLessThan does not match a value that is not a date", `{"DateLessThan":{"aws:CurrentTime":"2024-01-01"}}`, kv{"aws:CurrentTime": {"yesterday"}}, false},

		// Bool, BinaryEquals, IP address.
		{"Bool true", `{"Bool":{"aws:SecureTransport":"true"}}`, kv{"aws:SecureTransport": {"true"}}, true},
		{"Bool given as a JSON boolean", `{"Bool":{"aws:SecureTransport":true}}`, kv{"aws:SecureTransport": {"true"}}, true},
		{"Bool does not match the other value", `{"Bool":{"aws:SecureTransport":"true"}}`, kv{"aws:SecureTransport": {"false"}}, false},
		{"Bool on an absent key does not match", `{"Bool":{"aws:MultiFactorAuthPresent":"false"}}`, kv{"aws:MultiFactorAuthPresent": absent}, false},
		{"BinaryEquals", `{"BinaryEquals":{"dynamodb:LeadingKeys":"QmluYXJ5"}}`, kv{"dynamodb:LeadingKeys": {"QmluYXJ5"}}, true},
		{"BinaryEquals another value", `{"BinaryEquals":{"dynamodb:LeadingKeys":"QmluYXJ5"}}`, kv{"dynamodb:LeadingKeys": {"T3RoZXI="}}, false},
		{"IpAddress in the block", `{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`, kv{"aws:SourceIp": {"203.0.113.7"}}, true},
		{"IpAddress outside the block", `{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`, kv{"aws:SourceIp": {"198.51.100.7"}}, false},
		{"IpAddress of one address", `{"IpAddress":{"aws:SourceIp":"203.0.113.7"}}`, kv{"aws:SourceIp": {"203.0.113.7"}}, true},
		{"IpAddress IPv6", `{"IpAddress":{"aws:SourceIp":"2001:db8::/32"}}`, kv{"aws:SourceIp": {"2001:db8::1"}}, true},
		{"NotIpAddress outside the block", `{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`, kv{"aws:SourceIp": {"198.51.100.7"}}, true},
		{"NotIpAddress in the block", `{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`, kv{"aws:SourceIp": {"203.0.113.7"}}, false},

		// ...IfExists.
		{"StringEqualsIfExists on an absent key matches",
			`{"StringEqualsIfExists":{"ec2:InstanceType":"t3.micro"}}`, kv{"ec2:InstanceType": absent}, true},
		{"StringEqualsIfExists on a present key compares",
			`{"StringEqualsIfExists":{"ec2:InstanceType":"t3.micro"}}`, kv{"ec2:InstanceType": {"m5.large"}}, false},
		{"StringEqualsIfExists on a present equal key matches",
			`{"StringEqualsIfExists":{"ec2:InstanceType":"t3.micro"}}`, kv{"ec2:InstanceType": {"t3.micro"}}, true},
		{"StringNotEqualsIfExists on an absent key matches",
			`{"StringNotEqualsIfExists":{"ec2:InstanceType":"t3.micro"}}`, kv{"ec2:InstanceType": absent}, true},
		{"ArnLikeIfExists on an absent key matches",
			`{"ArnLikeIfExists":{"aws:SourceArn":"arn:aws:events:*:*:*"}}`, kv{"aws:SourceArn": absent}, true},
		{"NumericLessThanIfExists on an absent key matches",
			`{"NumericLessThanIfExists":{"s3:max-keys":10}}`, kv{"s3:max-keys": absent}, true},
		{"BoolIfExists on an absent key matches",
			`{"BoolIfExists":{"aws:MultiFactorAuthPresent":"false"}}`, kv{"aws:MultiFactorAuthPresent": absent}, true},
		{"BoolIfExists on a present key compares",
			`{"BoolIfExists":{"aws:MultiFactorAuthPresent":"false"}}`, kv{"aws:MultiFactorAuthPresent": {"true"}}, false},

		// Null.
		{`Null "true" on an absent key matches`, `{"Null":{"aws:TokenIssueTime":"true"}}`, kv{"aws:TokenIssueTime": absent}, true},
		{`Null "true" on a present key does not match`, `{"Null":{"aws:TokenIssueTime":"true"}}`, kv{"aws:TokenIssueTime": {"2024-01-01T00:00:00Z"}}, false},
		{`Null "false" on a present key matches`, `{"Null":{"aws:TokenIssueTime":false}}`, kv{"aws:TokenIssueTime": {"2024-01-01T00:00:00Z"}}, true},
		{`Null "false" on an absent key does not match`, `{"Null":{"aws:TokenIssueTime":"false"}}`, kv{"aws:TokenIssueTime": absent}, false},

		// Set operators on multivalued keys.
		{"ForAnyValue matches when one request value matches",
			`{"ForAnyValue:StringEquals":{"aws:TagKeys":["environment","cost-center"]}}`, kv{"aws:TagKeys": {"owner", "environment"}}, true},
		{"ForAnyValue does not match when no request value matches",
			`{"ForAnyValue:StringEquals":{"aws:TagKeys":["environment","cost-center"]}}`, kv{"aws:TagKeys": {"owner"}}, false},
		{"ForAnyValue on an absent key does not match",
			`{"ForAnyValue:StringEquals":{"aws:TagKeys":["environment"]}}`, kv{"aws:TagKeys": absent}, false},
		{"ForAnyValue with IfExists on an absent key matches",
			`{"ForAnyValue:StringEqualsIfExists":{"aws:TagKeys":["environment"]}}`, kv{"aws:TagKeys": absent}, true},
		{"ForAnyValue:StringLike",
			`{"ForAnyValue:StringLike":{"aws:TagKeys":"cost-*"}}`, kv{"aws:TagKeys": {"owner", "cost-center"}}, true},
		{"ForAnyValue with a negated operator matches when one request value is outside the list",
			`{"ForAnyValue:StringNotEquals":{"aws:TagKeys":["environment"]}}`, kv{"aws:TagKeys": {"environment", "owner"}}, true},
		{"ForAllValues matches when every request value is in the list",
			`{"ForAllValues:StringEquals":{"aws:TagKeys":["environment","cost-center","owner"]}}`, kv{"aws:TagKeys": {"owner", "environment"}}, true},
		{"ForAllValues does not match when one request value is outside the list",
			`{"ForAllValues:StringEquals":{"aws:TagKeys":["environment","cost-center"]}}`, kv{"aws:TagKeys": {"owner", "environment"}}, false},
		{"ForAllValues on an absent key matches",
			`{"ForAllValues:StringEquals":{"aws:TagKeys":["environment"]}}`, kv{"aws:TagKeys": absent}, true},
		{"ForAllValues with a negated operator matches when no request value is in the list",
			`{"ForAllValues:StringNotEquals":{"aws:TagKeys":["secret"]}}`, kv{"aws:TagKeys": {"owner", "environment"}}, true},
		{"ForAllValues with a negated operator does not match when one request value is in the list",
			`{"ForAllValues:StringNotEquals":{"aws:TagKeys":["secret"]}}`, kv{"aws:TagKeys": {"owner", "secret"}}, false},
		{"ForAllValues:ArnLike",
			`{"ForAllValues:ArnLike":{"aws:SourceArn":"arn:aws:events:*:123456789012:rule/*"}}`, kv{"aws:SourceArn": {rule, rule + "2"}}, true},
		{"ForAnyValue:NumericGreaterThan",
			`{"ForAnyValue:NumericGreaterThan":{"ec2:VolumeSize":100}}`, kv{"ec2:VolumeSize": {"8", "500"}}, true},

		// Combining: operators and keys AND, values OR.
		{"every operator of the block must match",
			`{"StringEquals":{"aws:SourceAccount":"123456789012"},"ArnLike":{"aws:SourceArn":"arn:aws:events:*:*:rule/*"}}`,
			kv{"aws:SourceAccount": {account}, "aws:SourceArn": {"arn:aws:sns:us-east-1:123456789012:topic"}}, false},
		{"the block matches when every operator matches",
			`{"StringEquals":{"aws:SourceAccount":"123456789012"},"ArnLike":{"aws:SourceArn":"arn:aws:events:*:*:rule/*"}}`,
			kv{"aws:SourceAccount": {account}, "aws:SourceArn": {rule}}, true},
		{"every key of an operator must match",
			`{"StringEquals":{"aws:SourceAccount":"123456789012","aws:PrincipalTag/team":"payments"}}`,
			kv{"aws:SourceAccount": {account}, "aws:PrincipalTag/team": {"risk"}}, false},
		{"the operator matches when every key matches",
			`{"StringEquals":{"aws:SourceAccount":"123456789012","aws:PrincipalTag/team":"payments"}}`,
			kv{"aws:SourceAccount": {account}, "aws:PrincipalTag/team": {"payments"}}, true},
		{"an empty block always matches", `{}`, kv{}, true},

		// Key names are case-insensitive, values are not.
		{"condition keys compare case-insensitively",
			`{"StringEquals":{"AWS:SOURCEACCOUNT":"123456789012"}}`, kv{"aws:SourceAccount": {account}}, true},
		{"context keys compare case-insensitively",
			`{"StringEquals":{"aws:SourceAccount":"123456789012"}}`, kv{"Aws:sourceaccount": {account}}, true},

		// Policy variables' special characters.
		{`"${*}" is a literal * in StringLike`,
			`{"StringLike":{"s3:prefix":"a${*}b"}}`, kv{"s3:prefix": {"a*b"}}, true},
		{`"${*}" is not a wildcard in StringLike`,
			`{"StringLike":{"s3:prefix":"a${*}b"}}`, kv{"s3:prefix": {"axb"}}, false},
		{`"${?}" and "${$}" are literal in StringEquals`,
			`{"StringEquals":{"s3:prefix":"${?}${$}"}}`, kv{"s3:prefix": {"?$"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse(t, "conditions", `{"Version":"2012-10-17","Statement":[{"Sid":"Cond","Effect":"Allow","Action":"*","Resource":"*","Condition":`+tt.condition+`}]}`)
			req := iam.Request{Principal: roleARN, Action: "s3:GetObject", Resource: "arn:aws:s3:::bucket/key", Context: tt.context}
			r, err := iam.Evaluate(req, []*iam.Policy{p}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if got := r.Decision == iam.Allow; got != tt.want {
				t.Errorf("condition %s with context %v: applies = %v, want %v", tt.condition, tt.context, got, tt.want)
			}
		})
	}
}

func TestConditionErrors(t *testing.T) {
	tests := []struct {
		name      string
		condition string
		context   kv
		wantIs    error
		wantKey   string
		wantMsg   string
	}{
		{"a key not in the context cannot be evaluated",
			`{"StringEquals":{"aws:SourceVpc":"vpc-1"}}`, kv{}, iam.ErrMissingContextKey, "aws:SourceVpc", "does not hold"},
		{"a nil context holds no key",
			`{"Null":{"aws:SourceVpc":"true"}}`, nil, iam.ErrMissingContextKey, "aws:SourceVpc", "does not hold"},
		{"IfExists does not excuse a key missing from the context",
			`{"StringEqualsIfExists":{"aws:SourceVpc":"vpc-1"}}`, kv{}, iam.ErrMissingContextKey, "aws:SourceVpc", "does not hold"},
		{"a missing key is reported even when another condition fails",
			`{"Bool":{"aws:SecureTransport":"true"},"StringEquals":{"aws:SourceVpc":"vpc-1"}}`, kv{"aws:SecureTransport": {"false"}},
			iam.ErrMissingContextKey, "aws:SourceVpc", "does not hold"},
		{"a multivalued key needs a set operator",
			`{"StringEquals":{"aws:TagKeys":"owner"}}`, kv{"aws:TagKeys": {"owner", "environment"}}, iam.ErrUnsupported, "aws:TagKeys", "ForAnyValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse(t, "fn/policy", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*"},
				{"Sid":"Vpc","Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":`+tt.condition+`}]}`)
			req := iam.Request{Principal: roleARN, Action: "s3:GetObject", Resource: "arn:aws:s3:::bucket/key", Context: tt.context}
			r, err := iam.Evaluate(req, []*iam.Policy{p}, nil)
			if err == nil {
				t.Fatalf("Evaluate = %v, want an error", r.Decision)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			var pe *iam.PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PolicyError", err)
			}
			if pe.Policy != "fn/policy" || pe.Statement != 1 || pe.Sid != "Vpc" || pe.Element != "Condition" || pe.Key != tt.wantKey {
				t.Errorf("error names policy %q statement %d sid %q element %q key %q", pe.Policy, pe.Statement, pe.Sid, pe.Element, pe.Key)
			}
			for _, want := range []string{`"fn/policy"`, `Statement[1]`, `"Vpc"`, `"` + tt.wantKey + `"`, tt.wantMsg} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %s", err, want)
				}
			}

			// A statement whose action does not apply evaluates no condition.
			req.Action = "s3:ListBucket"
			if r, err := iam.Evaluate(req, []*iam.Policy{p}, nil); err != nil || r.Decision != iam.Allow {
				t.Errorf("ListBucket: %v, %v; want Allow", r.Decision, err)
			}
		})
	}
}
