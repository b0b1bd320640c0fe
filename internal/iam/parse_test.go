package iam_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/iam"
)

func TestParsePolicy(t *testing.T) {
	const doc = `{"Version":"2012-10-17","Id":"key-policy","Statement":[
		{"Sid":"One","Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-1:123456789012:jobs",
		 "Principal":{"AWS":["123456789012","arn:aws:iam::123456789012:role/r"],"Service":"events.amazonaws.com"},
		 "Condition":{"StringEquals":{"b":"x","a":["y","z"]},"NumericLessThan":{"n":5},"Bool":{"t":true}}},
		{"Effect":"Deny","NotAction":["sqs:Delete*"],"NotResource":"*","Principal":"*"}]}`
	want := &iam.Policy{Name: "queue", Version: "2012-10-17", ID: "key-policy", Statements: []iam.Statement{
		{Sid: "One", Index: 0, Effect: "Allow",
			Principal: &iam.Principals{AWS: []string{"123456789012", "arn:aws:iam::123456789012:role/r"}, Service: []string{"events.amazonaws.com"}},
			Actions:   []string{"sqs:SendMessage"}, Resources: []string{"arn:aws:sqs:us-east-1:123456789012:jobs"},
			Conditions: []iam.Condition{
				{Operator: "Bool", Key: "t", Values: []string{"true"}},
				{Operator: "NumericLessThan", Key: "n", Values: []string{"5"}},
				{Operator: "StringEquals", Key: "a", Values: []string{"y", "z"}},
				{Operator: "StringEquals", Key: "b", Values: []string{"x"}},
			}},
		{Index: 1, Effect: "Deny", Principal: &iam.Principals{All: true}, NotActions: []string{"sqs:Delete*"}, NotResources: []string{"*"}},
	}}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(doc), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, input := range []struct {
		name string
		doc  any
	}{{"[]byte", []byte(doc)}, {"string", doc}, {"json.RawMessage", json.RawMessage(doc)}, {"map[string]any", decoded}} {
		t.Run(input.name, func(t *testing.T) {
			got, err := iam.ParsePolicy("queue", input.doc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ParsePolicy =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestParsePolicyAccepts(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"one statement as an object", `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}}`},
		{"no Version, read as 2008-10-17", `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`},
		{"Version 2008-10-17", `{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`},
		{`Action "*"`, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`},
		{"wildcards in an action", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:Get*","s?s:*","*:Describe*"],"Resource":"*"}]}`},
		{"an ARN pattern of fewer segments ending in *", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:Publish","Resource":"arn:aws:sns:*"}]}`},
		{"a literal ${...} in a 2008-10-17 condition value", `{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*","Condition":{"StringLike":{"s3:prefix":"${aws:username}/*"}}}]}`},
		{"the special characters ${*} ${?} ${$}", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${*}${?}${$}"}]}`},
		{"Federated and CanonicalUser principals", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"cognito-identity.amazonaws.com","CanonicalUser":"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"},"Action":"s3:GetObject","Resource":"*"}]}`},
		{"an assumed-role session principal", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:sts::123456789012:assumed-role/r/s"},"Action":"s3:GetObject","Resource":"*"}]}`},
		{"date, IP and binary condition values", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{
			"DateLessThan":{"aws:CurrentTime":["2030-01-01T00:00:00Z","2030-01-01","1893456000"]},"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::1"]},"BinaryEquals":{"k":"QmluYXJ5"}}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := iam.ParsePolicy("p", []byte(tt.doc)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	// stmt wraps one statement's elements as statement 1 (Sid "Second") of a
	// policy, after a valid one.
	stmt := func(elements string) string {
		return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"},{"Sid":"Second",` + elements + `}]}`
	}
	// cond is stmt with a Condition block.
	cond := func(block string) string {
		return stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":` + block)
	}
	tests := []struct {
		name string
		doc  any
		// wantStatement is -1 for an error about the document as a whole.
		wantStatement int
		wantElement   string
		wantMsg       string
		wantIs        error
	}{
		// The document.
		{"not JSON", []byte(`{"Version":`), -1, "", "not valid JSON", nil},
		{"data after the document", []byte(`{"Statement":[]} {}`), -1, "", "data after the document", nil},
		{"a document that is not an object", []byte(`[]`), -1, "", "is a JSON object", nil},
		{"a document of an unknown type", 42, -1, "", "not int", nil},
		{"an unknown top-level element", `{"Version":"2012-10-17","Statment":[]}`, -1, "Statment", "unknown top-level element", nil},
		{"a top-level element in the wrong case", `{"version":"2012-10-17","Statement":[]}`, -1, "version", `case-sensitive: "Version"?`, nil},
		{"an unknown Version", `{"Version":"2012-10-18","Statement":[]}`, -1, "Version", "not a policy language version", nil},
		{"a Version that is not a string", `{"Version":2012,"Statement":[]}`, -1, "Version", "not a string", nil},
		{"an Id that is not a string", `{"Id":1,"Statement":[]}`, -1, "Id", "not a string", nil},
		{"no Statement", `{"Version":"2012-10-17"}`, -1, "Statement", "is missing", nil},
		{"an empty Statement", `{"Version":"2012-10-17","Statement":[]}`, -1, "Statement", "is empty", nil},
		{"a Statement that is a string", `{"Version":"2012-10-17","Statement":"Allow"}`, -1, "Statement", "neither an object nor a list", nil},

		// Statement elements.
		{"a statement that is not an object", `{"Version":"2012-10-17","Statement":["Allow"]}`, 0, "", "a statement is a JSON object", nil},
		{"an unknown statement element", stmt(`"Effect":"Allow","Actions":"s3:GetObject","Resource":"*"`), 1, "Actions", "unknown statement element", nil},
		{"a statement element in the wrong case", stmt(`"Effect":"Allow","action":"s3:GetObject","Resource":"*"`), 1, "action", `case-sensitive: "Action"?`, nil},
		{"a Sid that is not a string", `{"Version":"2012-10-17","Statement":[{"Sid":1,"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`, 0, "Sid", "not a string", nil},
		{"an Effect in the wrong case", stmt(`"Effect":"allow","Action":"s3:GetObject","Resource":"*"`), 1, "Effect", `"allow" is neither "Allow" nor "Deny"`, nil},
		{"an unknown Effect", stmt(`"Effect":"Permit","Action":"s3:GetObject","Resource":"*"`), 1, "Effect", "neither", nil},
		{"no Effect", stmt(`"Action":"s3:GetObject","Resource":"*"`), 1, "Effect", "neither", nil},
		{"an Effect that is not a string", stmt(`"Effect":true,"Action":"s3:GetObject","Resource":"*"`), 1, "Effect", "not a string", nil},

		// Action and Resource.
		{"an action without a service", stmt(`"Effect":"Allow","Action":"GetObject","Resource":"*"`), 1, "Action", `not of the form "service:Action"`, nil},
		{"an action with an empty service", stmt(`"Effect":"Allow","Action":":GetObject","Resource":"*"`), 1, "Action", `not of the form "service:Action"`, nil},
		{"an action with an empty name", stmt(`"Effect":"Allow","Action":"s3:","Resource":"*"`), 1, "Action", `not of the form "service:Action"`, nil},
		{"an action with two colons", stmt(`"Effect":"Allow","Action":"s3:Get:Object","Resource":"*"`), 1, "Action", `not of the form "service:Action"`, nil},
		{"an action with a space", stmt(`"Effect":"Allow","Action":"s3:Get Object","Resource":"*"`), 1, "Action", `character " "`, nil},
		{"a NotAction that is not service:Action", stmt(`"Effect":"Allow","NotAction":"iam","Resource":"*"`), 1, "NotAction", `not of the form "service:Action"`, nil},
		{"an empty Action list", stmt(`"Effect":"Allow","Action":[],"Resource":"*"`), 1, "Action", "empty list", nil},
		{"an Action that is a number", stmt(`"Effect":"Allow","Action":5,"Resource":"*"`), 1, "Action", "neither a string nor a list", nil},
		{"an Action list with a number", stmt(`"Effect":"Allow","Action":["s3:GetObject",5],"Resource":"*"`), 1, "Action", "item 1 is not a string", nil},
		{"both Action and NotAction", stmt(`"Effect":"Allow","Action":"s3:GetObject","NotAction":"s3:PutObject","Resource":"*"`), 1, "Action", "not both", nil},
		{"neither Action nor NotAction", stmt(`"Effect":"Allow","Resource":"*"`), 1, "Action", "needs Action or NotAction", nil},
		{"both Resource and NotResource", stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"*","NotResource":"arn:aws:s3:::b"`), 1, "Resource", "not both", nil},
		{"neither Resource nor NotResource", stmt(`"Effect":"Allow","Action":"s3:GetObject"`), 1, "Resource", "needs Resource or NotResource", nil},
		{"a resource that is not an ARN", stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"table/Orders"`), 1, "Resource", `neither "*" nor an ARN`, nil},
		{"a resource ARN of too few parts", stmt(`"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-1:jobs"`), 1, "Resource", "fewer than the six", nil},
		{"a resource ARN of two parts ending in *", stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws*"`), 1, "Resource", "fewer than the six", nil},
		{"a wildcard in a resource's service segment", stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s*:::b"`), 1, "Resource", "service segment", nil},
		{"a NotResource that is not an ARN", stmt(`"Effect":"Allow","Action":"s3:GetObject","NotResource":"b/*"`), 1, "NotResource", `neither "*" nor an ARN`, nil},
		{"a policy variable in a resource", stmt(`"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"`), 1, "Resource", "policy variable ${aws:username} is not supported", iam.ErrUnsupported},

		// Principal.
		{"NotPrincipal", stmt(`"Effect":"Deny","NotPrincipal":{"AWS":"123456789012"},"Action":"s3:GetObject","Resource":"*"`), 1, "NotPrincipal", "not supported", iam.ErrUnsupported},
		{"a Principal string other than *", stmt(`"Effect":"Allow","Principal":"123456789012","Action":"s3:GetObject","Resource":"*"`), 1, "Principal", `neither "*" nor an object`, nil},
		{"an unknown principal type", stmt(`"Effect":"Allow","Principal":{"Aws":"123456789012"},"Action":"s3:GetObject","Resource":"*"`), 1, "Principal", `unknown principal type "Aws"`, nil},
		{"an empty Principal", stmt(`"Effect":"Allow","Principal":{},"Action":"s3:GetObject","Resource":"*"`), 1, "Principal", "names no principal", nil},
		{"a partial wildcard in a principal ARN", stmt(`"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:role/*"},"Action":"s3:GetObject","Resource":"*"`), 1, "Principal", "wildcard may stand only for all principals", nil},
		{"a wildcard service principal", stmt(`"Effect":"Allow","Principal":{"Service":"*.amazonaws.com"},"Action":"s3:GetObject","Resource":"*"`), 1, "Principal", "wildcard may stand only for all principals", nil},
		{"a principal's unique ID", stmt(`"Effect":"Allow","Principal":{"AWS":"AROAEXAMPLEID"},"Action":"s3:GetObject","Resource":"*"`), 1, "Principal", "unique IDs", iam.ErrUnsupported},
		{"a principal ARN that is not of a principal", stmt(`"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:group/admins"},"Action":"s3:GetObject","Resource":"*"`), 1, "Principal", "not the ARN of an account root", nil},

		// Condition.
		{"an unknown condition operator", cond(`{"StringEqualz":{"k":"v"}}`), 1, "Condition", `unknown condition operator "StringEqualz"`, nil},
		{"a condition operator in the wrong case", cond(`{"stringEquals":{"k":"v"}}`), 1, "Condition", "unknown condition operator", nil},
		{"an unknown set prefix", cond(`{"ForEachValue:StringEquals":{"k":"v"}}`), 1, "Condition", "unknown condition operator", nil},
		{"Null with IfExists", cond(`{"NullIfExists":{"k":"true"}}`), 1, "Condition", "no IfExists", nil},
		{"Null with a set prefix", cond(`{"ForAnyValue:Null":{"k":"true"}}`), 1, "Condition", "no ForAnyValue", nil},
		{"a Condition that is not an object", cond(`["StringEquals"]`), 1, "Condition", "is not an object", nil},
		{"an operator without keys", cond(`{"StringEquals":{}}`), 1, "Condition", "names no condition key", nil},
		{"an operator that is not an object", cond(`{"StringEquals":"k"}`), 1, "Condition", "is not an object", nil},
		{"a condition value that is null", cond(`{"StringEquals":{"k":null}}`), 1, "Condition", "not a string, number or boolean", nil},
		{"a condition value that is an object", cond(`{"StringEquals":{"k":{"v":1}}}`), 1, "Condition", "not a string, number or boolean", nil},
		{"an empty list of condition values", cond(`{"StringEquals":{"k":[]}}`), 1, "Condition", "empty list", nil},
		{"a numeric value that is not a number", cond(`{"NumericLessThan":{"s3:max-keys":"ten"}}`), 1, "Condition", `"ten" is not a number`, nil},
		{"a date value that is not a date", cond(`{"DateLessThan":{"aws:CurrentTime":"tomorrow"}}`), 1, "Condition", "is not a date", nil},
		{"a Bool value that is not true or false", cond(`{"Bool":{"aws:SecureTransport":"yes"}}`), 1, "Condition", `"true" or "false"`, nil},
		{"a Null value that is not true or false", cond(`{"Null":{"aws:SourceVpc":"maybe"}}`), 1, "Condition", `"true" or "false"`, nil},
		{"an IpAddress value that is not an address", cond(`{"IpAddress":{"aws:SourceIp":"10.0.0.0/33"}}`), 1, "Condition", "not an IP address", nil},
		{"a BinaryEquals value that is not base64", cond(`{"BinaryEquals":{"k":"not base64!"}}`), 1, "Condition", "not base64", nil},
		{"an ArnLike value that is not an ARN", cond(`{"ArnLike":{"aws:SourceArn":"rule/*"}}`), 1, "Condition", "needs the six colon-separated parts", nil},
		{"a policy variable in a condition value", cond(`{"StringLike":{"s3:prefix":"${aws:username}/*"}}`), 1, "Condition", "policy variable ${aws:username} is not supported", iam.ErrUnsupported},
		{"a policy variable in an ARN condition value", cond(`{"ArnEquals":{"aws:SourceArn":"arn:aws:iam::123456789012:role/${aws:PrincipalTag/role}"}}`), 1, "Condition", "policy variable", iam.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := iam.ParsePolicy("fn/policy", tt.doc)
			if err == nil {
				t.Fatalf("ParsePolicy = %+v, want an error", p)
			}
			var pe *iam.PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PolicyError", err)
			}
			if pe.Policy != "fn/policy" || pe.Statement != tt.wantStatement || pe.Element != tt.wantElement {
				t.Errorf("error names policy %q statement %d element %q, want %q %d %q",
					pe.Policy, pe.Statement, pe.Element, "fn/policy", tt.wantStatement, tt.wantElement)
			}
			wants := []string{`policy "fn/policy"`, tt.wantMsg}
			if tt.wantStatement >= 0 {
				wants = append(wants, fmt.Sprintf("Statement[%d]", tt.wantStatement))
			}
			if tt.wantStatement == 1 {
				if pe.Sid != "Second" {
					t.Errorf("error names Sid %q, want %q", pe.Sid, "Second")
				}
				wants = append(wants, `(Sid "Second")`)
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if tt.wantIs == nil && (errors.Is(err, iam.ErrUnsupported) || errors.Is(err, iam.ErrMissingContextKey)) {
				t.Errorf("error %v is about an invalid policy, yet matches %v", err, errors.Unwrap(err))
			}
		})
	}
}
