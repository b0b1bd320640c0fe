package iam_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/iam"
)

const (
	account  = "123456789012"
	roleARN  = "arn:aws:iam::123456789012:role/OrchestratorFunctionRole"
	table    = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"
	function = "arn:aws:lambda:us-east-1:123456789012:function:Worker"
	rule     = "arn:aws:events:us-east-1:123456789012:rule/Nightly"
)

// parse parses doc as the policy name, failing the test on an error.
func parse(t testing.TB, name, doc string) *iam.Policy {
	t.Helper()
	p, err := iam.ParsePolicy(name, []byte(doc))
	if err != nil {
		t.Fatalf("ParsePolicy(%s): %v", name, err)
	}
	return p
}

// parseAll parses docs as policies named prefix0, prefix1, ...
func parseAll(t testing.TB, prefix string, docs []string) []*iam.Policy {
	t.Helper()
	var out []*iam.Policy
	for i, d := range docs {
		out = append(out, parse(t, fmt.Sprintf("%s%d", prefix, i), d))
	}
	return out
}

// allow is an identity policy of one Allow statement.
func allow(action, resource string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":%q,"Resource":%q}]}`, action, resource)
}

// deny is an identity policy of one Deny statement.
func deny(action, resource string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":%q,"Resource":%q}]}`, action, resource)
}

// resourceAllow is a resource policy of one Allow statement for principal
// (JSON).
func resourceAllow(principal, action, resource string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":%s,"Action":%q,"Resource":%q}]}`, principal, action, resource)
}

// roleRequest is a request by the role, with an empty context.
func roleRequest(action, resource string) iam.Request {
	return iam.Request{Principal: roleARN, Account: account, Action: action, Resource: resource, Context: map[string][]string{}}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name     string
		identity []string
		resource []string
		req      iam.Request
		want     iam.Decision
	}{
		// The evaluation order: explicit deny, then allow, else implicit deny.
		{"an identity Allow of the action and resource allows",
			[]string{allow("dynamodb:GetItem", table)}, nil, roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"no policy at all is an implicit deny",
			nil, nil, roleRequest("dynamodb:GetItem", table), iam.ImplicitDeny},
		{"no statement for the action is an implicit deny",
			[]string{allow("dynamodb:GetItem", table)}, nil, roleRequest("dynamodb:DeleteItem", table), iam.ImplicitDeny},
		{"no statement for the resource is an implicit deny",
			[]string{allow("dynamodb:GetItem", table)}, nil, roleRequest("dynamodb:GetItem", table+"2"), iam.ImplicitDeny},
		{"an explicit Deny in another identity policy overrides an Allow",
			[]string{allow("dynamodb:*", "*"), deny("dynamodb:DeleteItem", table)}, nil,
			roleRequest("dynamodb:DeleteItem", table), iam.ExplicitDeny},
		{"a Deny of another action leaves the Allow",
			[]string{allow("dynamodb:*", "*"), deny("dynamodb:DeleteItem", table)}, nil,
			roleRequest("dynamodb:PutItem", table), iam.Allow},
		{"an explicit Deny without any Allow is an explicit deny",
			[]string{deny("dynamodb:*", "*")}, nil, roleRequest("dynamodb:PutItem", table), iam.ExplicitDeny},
		{"a Deny in the same policy as the Allow wins",
			[]string{`{"Version":"2012-10-17","Statement":[
				{"Effect":"Allow","Action":"dynamodb:*","Resource":"*"},
				{"Effect":"Deny","Action":"dynamodb:DeleteTable","Resource":"*"}]}`}, nil,
			roleRequest("dynamodb:DeleteTable", table), iam.ExplicitDeny},
		{"an explicit Deny in a resource policy overrides an identity Allow",
			[]string{allow("lambda:InvokeFunction", function)},
			[]string{`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"lambda:*","Resource":"*"}]}`},
			roleRequest("lambda:InvokeFunction", function), iam.ExplicitDeny},
		{"a resource policy Deny naming the account denies its roles",
			[]string{allow("lambda:InvokeFunction", function)},
			[]string{`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"123456789012"},"Action":"lambda:*","Resource":"*"}]}`},
			roleRequest("lambda:InvokeFunction", function), iam.ExplicitDeny},
		{"a resource policy Deny naming another role does not deny",
			[]string{allow("lambda:InvokeFunction", function)},
			[]string{`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::123456789012:role/Other"},"Action":"lambda:*","Resource":"*"}]}`},
			roleRequest("lambda:InvokeFunction", function), iam.Allow},
		{"a Deny whose condition does not match does not deny",
			[]string{allow("dynamodb:*", "*"), `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"dynamodb:*","Resource":"*",
				"Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`}, nil,
			withContext(roleRequest("dynamodb:PutItem", table), "aws:SecureTransport", "true"), iam.Allow},
		{"a Deny whose condition matches denies",
			[]string{allow("dynamodb:*", "*"), `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"dynamodb:*","Resource":"*",
				"Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`}, nil,
			withContext(roleRequest("dynamodb:PutItem", table), "aws:SecureTransport", "false"), iam.ExplicitDeny},

		// Resource-based policies and their Principal.
		{"a resource policy allows a service principal with ArnLike aws:SourceArn and StringEquals aws:SourceAccount",
			nil, []string{schedulerPermission}, eventsRequest(rule, account), iam.Allow},
		{"a service principal from another rule is implicitly denied",
			nil, []string{schedulerPermission}, eventsRequest("arn:aws:events:us-east-1:123456789012:rule-other/Nightly", account), iam.ImplicitDeny},
		{"a service principal on behalf of another account is implicitly denied",
			nil, []string{schedulerPermission}, eventsRequest(rule, "999999999999"), iam.ImplicitDeny},
		{"a service principal the policy does not name is implicitly denied",
			nil, []string{schedulerPermission},
			iam.Request{Principal: "sns.amazonaws.com", PrincipalIsService: true, Account: account, Action: "lambda:InvokeFunction", Resource: function,
				Context: map[string][]string{"aws:SourceArn": {rule}, "aws:SourceAccount": {account}}}, iam.ImplicitDeny},
		{"a resource policy with Principal * allows a role without identity policies",
			nil, []string{resourceAllow(`"*"`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.Allow},
		{`{"AWS": "*"} names a service principal too`,
			nil, []string{resourceAllow(`{"AWS":"*"}`, "lambda:InvokeFunction", function)},
			iam.Request{Principal: "events.amazonaws.com", PrincipalIsService: true, Action: "lambda:InvokeFunction", Resource: function}, iam.Allow},
		{"a resource policy naming the role's ARN allows without identity policies",
			nil, []string{resourceAllow(`{"AWS":["arn:aws:iam::123456789012:role/Other","`+roleARN+`"]}`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.Allow},
		{"a resource policy naming another role does not allow",
			nil, []string{resourceAllow(`{"AWS":"arn:aws:iam::123456789012:role/Other"}`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.ImplicitDeny},
		{"a resource policy naming the role allows a session of the role",
			nil, []string{resourceAllow(`{"AWS":"arn:aws:iam::123456789012:role/service-role/OrchestratorFunctionRole"}`, "sqs:SendMessage", "*")},
			iam.Request{Principal: "arn:aws:sts::123456789012:assumed-role/OrchestratorFunctionRole/worker-1", Action: "sqs:SendMessage",
				Resource: "arn:aws:sqs:us-east-1:123456789012:jobs"}, iam.Allow},
		{"a resource policy naming the account ID only delegates: alone it does not allow",
			nil, []string{resourceAllow(`{"AWS":"123456789012"}`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.ImplicitDeny},
		{"a resource policy naming the account root only delegates: alone it does not allow",
			nil, []string{resourceAllow(`{"AWS":"arn:aws:iam::123456789012:root"}`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.ImplicitDeny},
		{"a resource policy naming the account root with an identity Allow allows",
			[]string{allow("sqs:SendMessage", "*")}, []string{resourceAllow(`{"AWS":"arn:aws:iam::123456789012:root"}`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.Allow},
		{"a resource policy naming an account does not name a service principal",
			nil, []string{resourceAllow(`{"AWS":"123456789012"}`, "lambda:InvokeFunction", function)},
			iam.Request{Principal: "events.amazonaws.com", PrincipalIsService: true, Account: account, Action: "lambda:InvokeFunction", Resource: function}, iam.ImplicitDeny},
		{"a resource policy naming another account's root does not name the role",
			[]string{allow("sqs:SendMessage", "*")}, []string{`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::999999999999:root"},"Action":"sqs:*","Resource":"*"}]}`},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.Allow},
		{"a Federated principal names no role",
			nil, []string{resourceAllow(`{"Federated":"cognito-identity.amazonaws.com"}`, "sqs:SendMessage", "*")},
			roleRequest("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:jobs"), iam.ImplicitDeny},

		// NotAction and NotResource.
		{"a NotAction Allow applies to an action outside its list",
			[]string{`{"Version":"2012-10-17","Statement":{"Effect":"Allow","NotAction":["iam:*","sts:*"],"Resource":"*"}}`}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a NotAction Allow does not apply to an action in its list",
			[]string{`{"Version":"2012-10-17","Statement":{"Effect":"Allow","NotAction":["iam:*","sts:*"],"Resource":"*"}}`}, nil,
			roleRequest("iam:CreateRole", "arn:aws:iam::123456789012:role/x"), iam.ImplicitDeny},
		{"a NotAction Deny denies an action outside its list",
			[]string{allow("dynamodb:*", "*"), `{"Version":"2012-10-17","Statement":{"Effect":"Deny","NotAction":"dynamodb:GetItem","Resource":"*"}}`}, nil,
			roleRequest("dynamodb:PutItem", table), iam.ExplicitDeny},
		{"a NotAction Deny leaves an action in its list",
			[]string{allow("dynamodb:*", "*"), `{"Version":"2012-10-17","Statement":{"Effect":"Deny","NotAction":"dynamodb:GetItem","Resource":"*"}}`}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a NotResource Allow applies to a resource outside its list",
			[]string{`{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"dynamodb:*","NotResource":"arn:aws:dynamodb:*:*:table/Ledger*"}}`}, nil,
			roleRequest("dynamodb:PutItem", table), iam.Allow},
		{"a NotResource Allow does not apply to a resource in its list",
			[]string{`{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"dynamodb:*","NotResource":"arn:aws:dynamodb:*:*:table/Ledger*"}}`}, nil,
			roleRequest("dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:123456789012:table/Ledger/index/ByAccount"), iam.ImplicitDeny},
		{"a NotResource Deny denies a resource outside its list",
			[]string{allow("s3:*", "*"), `{"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":"s3:*","NotResource":["arn:aws:s3:::reports","arn:aws:s3:::reports/*"]}}`}, nil,
			roleRequest("s3:GetObject", "arn:aws:s3:::payroll/2024.csv"), iam.ExplicitDeny},
		{"a NotResource Deny leaves a resource in its list",
			[]string{allow("s3:*", "*"), `{"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":"s3:*","NotResource":["arn:aws:s3:::reports","arn:aws:s3:::reports/*"]}}`}, nil,
			roleRequest("s3:GetObject", "arn:aws:s3:::reports/2024.csv"), iam.Allow},

		// Action matching: wildcards, case-insensitive.
		{`Action "*" matches every action`,
			[]string{allow("*", "*")}, nil, roleRequest("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"), iam.Allow},
		{"a * in an action matches a run of characters",
			[]string{allow("dynamodb:Get*", table)}, nil, roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a * at the end of an action does not match before its prefix",
			[]string{allow("dynamodb:Get*", table)}, nil, roleRequest("dynamodb:BatchGetItem", table), iam.ImplicitDeny},
		{"a * in the middle of an action",
			[]string{allow("dynamodb:*Item", table)}, nil, roleRequest("dynamodb:BatchWriteItem", table), iam.Allow},
		{"a ? in an action matches one character",
			[]string{allow("dynamodb:?etItem", table)}, nil, roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a ? in an action matches no more than one character",
			[]string{allow("dynamodb:?etItem", table)}, nil, roleRequest("dynamodb:BatchGetItem", table), iam.ImplicitDeny},
		{"a * in the service prefix of an action",
			[]string{allow("dynamo*:GetItem", table)}, nil, roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"actions in the policy match case-insensitively",
			[]string{allow("DynamoDB:getitem", table)}, nil, roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"actions in the request match case-insensitively",
			[]string{allow("dynamodb:Get*", table)}, nil, roleRequest("DYNAMODB:GETITEM", table), iam.Allow},
		{"an action of another service with the same name does not match",
			[]string{allow("dynamodb:GetItem", "*")}, nil, roleRequest("sdb:GetItem", "*"), iam.ImplicitDeny},

		// Resource matching: case-sensitive, segment by segment.
		{"resources match case-sensitively",
			[]string{allow("dynamodb:GetItem", table)}, nil,
			roleRequest("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/orders"), iam.ImplicitDeny},
		{"a * in the partition segment",
			[]string{allow("dynamodb:GetItem", "arn:aws*:dynamodb:us-east-1:123456789012:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a * in the region segment",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-*-1:123456789012:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a * in the region segment does not match another region",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-west-*:123456789012:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.ImplicitDeny},
		{"a ? in the region segment",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-east-?:123456789012:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"an empty region segment does not match a region",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb::123456789012:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.ImplicitDeny},
		{"a * in the account segment",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:*:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a ? in the account segment",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:12345678901?:table/Orders")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a * in the resource part matches across slashes",
			[]string{allow("dynamodb:Query", "arn:aws:dynamodb:us-east-1:123456789012:table/Orders/*")}, nil,
			roleRequest("dynamodb:Query", table+"/index/ByCustomer"), iam.Allow},
		{"a * in the resource part matches across colons",
			[]string{allow("states:DescribeExecution", "arn:aws:states:us-east-1:123456789012:execution:*")}, nil,
			roleRequest("states:DescribeExecution", "arn:aws:states:us-east-1:123456789012:execution:Transfer:run-1"), iam.Allow},
		{"a * ending the resource part matches a longer name",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/Order*")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a ? in the resource part",
			[]string{allow("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/Orde?s")}, nil,
			roleRequest("dynamodb:GetItem", table), iam.Allow},
		{"a * inside one of the first five segments does not match a colon",
			[]string{allow("states:StartExecution", "arn:aws:states:us-*2:stateMachine:Transfer")}, nil,
			roleRequest("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"), iam.ImplicitDeny},
		{"a ? in one of the first five segments does not match a colon",
			[]string{allow("states:StartExecution", "arn:aws:states:us-east-1?123456789012:stateMachine:Transfer")}, nil,
			roleRequest("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"), iam.ImplicitDeny},
		// AWS: "If the * wildcard is the last character of a resource ARN
		// segment, it can expand to match beyond the colon boundaries."
		{"a * ending one of the first five segments expands beyond its colon",
			[]string{allow("states:StartExecution", "arn:aws:states:*:stateMachine:Transfer")}, nil,
			roleRequest("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"), iam.Allow},
		{"an ARN pattern of fewer segments ending in * matches the rest",
			[]string{allow("states:StartExecution", "arn:aws:states:*")}, nil,
			roleRequest("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"), iam.Allow},
		{`Resource "*" matches a request for no particular resource`,
			[]string{allow("sqs:ListQueues", "*")}, nil, roleRequest("sqs:ListQueues", "*"), iam.Allow},
		{"an ARN pattern does not match a request for no particular resource",
			[]string{allow("sqs:ListQueues", "arn:aws:sqs:*:*:*")}, nil, roleRequest("sqs:ListQueues", "*"), iam.ImplicitDeny},

		// Policy variables and their special characters.
		{`"${*}" in a 2012-10-17 resource is a literal *`,
			[]string{allow("s3:GetObject", "arn:aws:s3:::reports/${*}")}, nil, roleRequest("s3:GetObject", "arn:aws:s3:::reports/*"), iam.Allow},
		{`"${*}" in a 2012-10-17 resource is not a wildcard`,
			[]string{allow("s3:GetObject", "arn:aws:s3:::reports/${*}")}, nil, roleRequest("s3:GetObject", "arn:aws:s3:::reports/a"), iam.ImplicitDeny},
		{`"${...}" in a 2008-10-17 resource is literal text`,
			[]string{`{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}"}]}`}, nil,
			roleRequest("s3:GetObject", "arn:aws:s3:::home/${aws:username}"), iam.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := iam.Evaluate(tt.req, parseAll(t, "identity", tt.identity), parseAll(t, "resource", tt.resource))
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if got.Decision != tt.want {
				t.Errorf("Decision = %v, want %v (allowed %v, denied %v)", got.Decision, tt.want, got.Allowed, got.Denied)
			}
			switch {
			case got.Decision == iam.ExplicitDeny && len(got.Denied) == 0:
				t.Errorf("ExplicitDeny with no Denied match")
			case got.Decision == iam.Allow && len(got.Allowed) == 0:
				t.Errorf("Allow with no Allowed match")
			case got.Decision != iam.ExplicitDeny && len(got.Denied) > 0:
				t.Errorf("Denied %v without ExplicitDeny", got.Denied)
			}
		})
	}
}

// schedulerPermission is the resource policy of a Lambda function that an
// EventBridge rule invokes, as AWS::Lambda::Permission writes it.
const schedulerPermission = `{"Version":"2012-10-17","Id":"default","Statement":[{"Sid":"NightlyInvoke","Effect":"Allow",
	"Principal":{"Service":"events.amazonaws.com"},"Action":"lambda:InvokeFunction",
	"Resource":"arn:aws:lambda:us-east-1:123456789012:function:Worker",
	"Condition":{"ArnLike":{"AWS:SourceArn":"arn:aws:events:us-east-1:123456789012:rule/*"},
		"StringEquals":{"aws:SourceAccount":"123456789012"}}}]}`

// eventsRequest is EventBridge invoking the function for sourceArn on
// behalf of sourceAccount.
func eventsRequest(sourceArn, sourceAccount string) iam.Request {
	return iam.Request{Principal: "events.amazonaws.com", PrincipalIsService: true, Account: account,
		Action: "lambda:InvokeFunction", Resource: function,
		Context: map[string][]string{"aws:SourceArn": {sourceArn}, "aws:SourceAccount": {sourceAccount}}}
}

func withContext(req iam.Request, key string, values ...string) iam.Request {
	ctx := map[string][]string{key: values}
	for k, v := range req.Context {
		ctx[k] = v
	}
	req.Context = ctx
	return req
}

// samRole is the inline policy SAM generates for a function's
// DynamoDBCrudPolicy-like statements on one table and one of its indexes.
const samRole = `{"Version":"2012-10-17","Statement":[
	{"Effect":"Allow","Action":["dynamodb:PutItem","dynamodb:GetItem"],"Resource":"arn:aws:dynamodb:us-east-1:123456789012:table/stack-IdempotencyTable-ABC"},
	{"Effect":"Allow","Action":"dynamodb:Query","Resource":["arn:aws:dynamodb:us-east-1:123456789012:table/stack-IdempotencyTable-ABC/index/ByScope"]}]}`

func TestSAMExecutionRole(t *testing.T) {
	const name = "OrchestratorFunctionRole/OrchestratorFunctionRolePolicy0"
	const idem = "arn:aws:dynamodb:us-east-1:123456789012:table/stack-IdempotencyTable-ABC"
	policy := parse(t, name, samRole)
	tests := []struct {
		name     string
		action   string
		resource string
		want     iam.Decision
		allowed  []iam.Match
	}{
		{"PutItem on the table is allowed", "dynamodb:PutItem", idem, iam.Allow,
			[]iam.Match{{Policy: name, Statement: 0, Action: "dynamodb:PutItem", Resource: idem}}},
		{"GetItem on the table is allowed", "dynamodb:GetItem", idem, iam.Allow,
			[]iam.Match{{Policy: name, Statement: 0, Action: "dynamodb:GetItem", Resource: idem}}},
		{"UpdateItem on the table is implicitly denied", "dynamodb:UpdateItem", idem, iam.ImplicitDeny, nil},
		{"DeleteItem on the table is implicitly denied", "dynamodb:DeleteItem", idem, iam.ImplicitDeny, nil},
		{"Query on the ByScope index is allowed", "dynamodb:Query", idem + "/index/ByScope", iam.Allow,
			[]iam.Match{{Policy: name, Statement: 1, Action: "dynamodb:Query", Resource: idem + "/index/ByScope"}}},
		{"Query on another index is implicitly denied", "dynamodb:Query", idem + "/index/ByOwner", iam.ImplicitDeny, nil},
		{"Query on the table itself is implicitly denied", "dynamodb:Query", idem, iam.ImplicitDeny, nil},
		{"GetItem on another table is implicitly denied", "dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/stack-LedgerTable-XYZ", iam.ImplicitDeny, nil},
		{"GetItem on the table in another region is implicitly denied", "dynamodb:GetItem", strings.Replace(idem, "us-east-1", "eu-west-1", 1), iam.ImplicitDeny, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := iam.Request{Principal: "arn:aws:iam::123456789012:role/stack-OrchestratorFunctionRole-1A2B", Account: account,
				Action: tt.action, Resource: tt.resource}
			got, err := iam.Evaluate(req, []*iam.Policy{policy}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.want {
				t.Errorf("Decision = %v, want %v", got.Decision, tt.want)
			}
			if !reflect.DeepEqual(got.Allowed, tt.allowed) {
				t.Errorf("Allowed = %+v, want %+v", got.Allowed, tt.allowed)
			}
		})
	}
}

func TestEvaluateMatches(t *testing.T) {
	identity := parse(t, "role/inline", `{"Version":"2012-10-17","Statement":[
		{"Sid":"Tables","Effect":"Allow","Action":["dynamodb:Get*","dynamodb:*Item"],"Resource":["arn:aws:dynamodb:*:*:table/Orders","*"]},
		{"Sid":"NotIAM","Effect":"Allow","NotAction":"iam:*","NotResource":"arn:aws:s3:::*"},
		{"Sid":"NoDelete","Effect":"Deny","Action":"dynamodb:Delete*","Resource":"*"}]}`)
	tests := []struct {
		name            string
		action          string
		want            iam.Decision
		allowed, denied []iam.Match
	}{
		{"every matching pair of action and resource pattern is listed", "dynamodb:GetItem", iam.Allow,
			[]iam.Match{
				{Policy: "role/inline", Statement: 0, Sid: "Tables", Action: "dynamodb:Get*", Resource: "arn:aws:dynamodb:*:*:table/Orders"},
				{Policy: "role/inline", Statement: 0, Sid: "Tables", Action: "dynamodb:Get*", Resource: "*"},
				{Policy: "role/inline", Statement: 0, Sid: "Tables", Action: "dynamodb:*Item", Resource: "arn:aws:dynamodb:*:*:table/Orders"},
				{Policy: "role/inline", Statement: 0, Sid: "Tables", Action: "dynamodb:*Item", Resource: "*"},
				{Policy: "role/inline", Statement: 1, Sid: "NotIAM", NotAction: true, NotResource: true},
			}, nil},
		{"a Deny lists the Allows it overrides too", "dynamodb:DeleteItem", iam.ExplicitDeny,
			[]iam.Match{
				{Policy: "role/inline", Statement: 0, Sid: "Tables", Action: "dynamodb:*Item", Resource: "arn:aws:dynamodb:*:*:table/Orders"},
				{Policy: "role/inline", Statement: 0, Sid: "Tables", Action: "dynamodb:*Item", Resource: "*"},
				{Policy: "role/inline", Statement: 1, Sid: "NotIAM", NotAction: true, NotResource: true},
			},
			[]iam.Match{{Policy: "role/inline", Statement: 2, Sid: "NoDelete", Action: "dynamodb:Delete*", Resource: "*"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := iam.Evaluate(roleRequest(tt.action, table), []*iam.Policy{identity}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.want {
				t.Errorf("Decision = %v, want %v", got.Decision, tt.want)
			}
			if !reflect.DeepEqual(got.Allowed, tt.allowed) {
				t.Errorf("Allowed = %+v\nwant %+v", got.Allowed, tt.allowed)
			}
			if !reflect.DeepEqual(got.Denied, tt.denied) {
				t.Errorf("Denied = %+v\nwant %+v", got.Denied, tt.denied)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	good := allow("dynamodb:GetItem", table)
	handBuilt := &iam.Policy{Name: "handBuilt", Version: "2012-10-17", Statements: []iam.Statement{
		{Index: 0, Effect: "allow", Actions: []string{"dynamodb:GetItem"}, Resources: []string{"*"}}}}
	tests := []struct {
		name     string
		req      iam.Request
		identity []*iam.Policy
		resource []*iam.Policy
		// wantIs, when set, is matched with errors.Is; otherwise the error is a
		// *RequestError for wantField or a *PolicyError for wantElement.
		wantIs      error
		wantField   string
		wantElement string
		wantMsg     string
	}{
		{"an identity policy with a Principal",
			roleRequest("dynamodb:GetItem", table),
			[]*iam.Policy{parse(t, "p", resourceAllow(`"*"`, "dynamodb:GetItem", "*"))}, nil,
			nil, "", "Principal", "identity-based policy has no Principal"},
		{"a resource policy without a Principal",
			roleRequest("dynamodb:GetItem", table),
			nil, []*iam.Policy{parse(t, "p", good)},
			nil, "", "Principal", "is missing"},
		{"a hand-built policy is checked as ParsePolicy checks a document",
			roleRequest("dynamodb:GetItem", table), []*iam.Policy{handBuilt}, nil,
			nil, "", "Effect", `"allow" is neither "Allow" nor "Deny"`},
		{"a nil policy",
			roleRequest("dynamodb:GetItem", table), []*iam.Policy{nil}, nil,
			nil, "", "", "nil policy"},
		{"identity policies for a service principal",
			iam.Request{Principal: "events.amazonaws.com", PrincipalIsService: true, Action: "lambda:InvokeFunction", Resource: function},
			[]*iam.Policy{parse(t, "p", good)}, nil,
			nil, "Principal", "", "has no identity-based policies"},
		{"a principal of another account",
			iam.Request{Principal: "arn:aws:iam::999999999999:role/x", Account: account, Action: "dynamodb:GetItem", Resource: table},
			nil, nil, iam.ErrUnsupported, "Account", "", "cross-account"},
		{"a resource of another account",
			roleRequest("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:999999999999:table/Orders"),
			nil, nil, iam.ErrUnsupported, "Resource", "", "cross-account"},
		{"a request action that is not service:Action",
			roleRequest("GetItem", table), nil, nil, nil, "Action", "", "not of the form"},
		{"a request action with a wildcard",
			roleRequest("dynamodb:Get*", table), nil, nil, nil, "Action", "", "not allowed in an action"},
		{"a request resource that is not an ARN",
			roleRequest("dynamodb:GetItem", "table/Orders"), nil, nil, nil, "Resource", "", "neither"},
		{"a request principal that is not a role ARN",
			iam.Request{Principal: "OrchestratorFunctionRole", Action: "dynamodb:GetItem", Resource: table},
			nil, nil, nil, "Principal", "", "not a role ARN"},
		{"a service principal name that is an ARN",
			iam.Request{Principal: roleARN, PrincipalIsService: true, Action: "dynamodb:GetItem", Resource: table},
			nil, nil, nil, "Principal", "", "not a service principal"},
		{"a context holding one key in two cases",
			iam.Request{Principal: roleARN, Action: "dynamodb:GetItem", Resource: table,
				Context: map[string][]string{"aws:SourceIp": {"10.0.0.1"}, "aws:sourceip": {"10.0.0.2"}}},
			nil, nil, nil, "Context", "", "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := iam.Evaluate(tt.req, tt.identity, tt.resource)
			if err == nil {
				t.Fatal("Evaluate succeeded")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			var re *iam.RequestError
			var pe *iam.PolicyError
			switch {
			case tt.wantField != "":
				if !errors.As(err, &re) || re.Field != tt.wantField {
					t.Errorf("error %v is not a *RequestError for %s", err, tt.wantField)
				}
			default:
				if !errors.As(err, &pe) || pe.Element != tt.wantElement {
					t.Errorf("error %v is not a *PolicyError for element %q", err, tt.wantElement)
				}
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
		})
	}
}

func TestGrants(t *testing.T) {
	a := parse(t, "a", samRole)
	b := parse(t, "b", `{"Version":"2012-10-17","Statement":[
		{"Sid":"Deny","Effect":"Deny","Action":"dynamodb:DeleteTable","Resource":"*"},
		{"Sid":"Logs","Effect":"Allow","Action":["logs:CreateLogStream","logs:PutLogEvents"],"Resource":["arn:aws:logs:*:*:log-group:/aws/lambda/w:*","arn:aws:logs:*:*:log-group:/aws/lambda/o:*"]},
		{"Sid":"Rest","Effect":"Allow","NotAction":"iam:*","NotResource":"arn:aws:s3:::*"}]}`)
	idem := "arn:aws:dynamodb:us-east-1:123456789012:table/stack-IdempotencyTable-ABC"
	want := []iam.Match{
		{Policy: "a", Statement: 0, Action: "dynamodb:PutItem", Resource: idem},
		{Policy: "a", Statement: 0, Action: "dynamodb:GetItem", Resource: idem},
		{Policy: "a", Statement: 1, Action: "dynamodb:Query", Resource: idem + "/index/ByScope"},
		{Policy: "b", Statement: 1, Sid: "Logs", Action: "logs:CreateLogStream", Resource: "arn:aws:logs:*:*:log-group:/aws/lambda/w:*"},
		{Policy: "b", Statement: 1, Sid: "Logs", Action: "logs:CreateLogStream", Resource: "arn:aws:logs:*:*:log-group:/aws/lambda/o:*"},
		{Policy: "b", Statement: 1, Sid: "Logs", Action: "logs:PutLogEvents", Resource: "arn:aws:logs:*:*:log-group:/aws/lambda/w:*"},
		{Policy: "b", Statement: 1, Sid: "Logs", Action: "logs:PutLogEvents", Resource: "arn:aws:logs:*:*:log-group:/aws/lambda/o:*"},
		{Policy: "b", Statement: 2, Sid: "Rest", NotAction: true, NotResource: true},
	}
	if got := iam.Grants(a, nil, b); !reflect.DeepEqual(got, want) {
		t.Errorf("Grants =\n%+v\nwant\n%+v", got, want)
	}
	if got := iam.Grants(); got != nil {
		t.Errorf("Grants() = %v, want nil", got)
	}

	// Every grant a request used is one of Grants: the unused ones are the
	// difference.
	used := map[iam.Match]bool{}
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:Query"} {
		resource := idem
		if action == "dynamodb:Query" {
			resource += "/index/ByScope"
		}
		r, err := iam.Evaluate(roleRequest(action, resource), []*iam.Policy{a}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Allowed {
			used[m] = true
		}
	}
	var unused []iam.Match
	for _, g := range iam.Grants(a) {
		if !used[g] {
			unused = append(unused, g)
		}
	}
	if want := []iam.Match{{Policy: "a", Statement: 0, Action: "dynamodb:GetItem", Resource: idem}}; !reflect.DeepEqual(unused, want) {
		t.Errorf("unused grants = %+v, want %+v", unused, want)
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[iam.Decision]string{
		iam.ImplicitDeny: "ImplicitDeny", iam.Allow: "Allow", iam.ExplicitDeny: "ExplicitDeny", iam.Decision(7): "Decision(7)",
	} {
		if got := d.String(); got != want {
			t.Errorf("Decision(%d).String() = %q, want %q", int(d), got, want)
		}
	}
}
