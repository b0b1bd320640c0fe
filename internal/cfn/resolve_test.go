package cfn

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

var fixtureEnv = Env{Region: "eu-west-1", AccountID: "111122223333", StackName: "stack"}

// resolveExpr adds an output whose Value is expr to the resolver fixture
// and resolves it.
func resolveExpr(t *testing.T, expr string, env Env) (any, error) {
	t.Helper()
	base, err := os.ReadFile("testdata/resolve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(base) + "\nOutputs:\n  Out:\n    Value: " + expr + "\n"
	tmpl, err := Parse("resolve.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r, err := NewResolver(tmpl, env)
	if err != nil {
		t.Fatalf("NewResolver: %v", err)
	}
	return r.Value(tmpl.Outputs["Out"].Value)
}

func withParams(p map[string]string) Env {
	e := fixtureEnv
	e.Parameters = p
	return e
}

func TestResolve(t *testing.T) {
	const arnPrefix = ":eu-west-1:111122223333:"
	prod := withParams(map[string]string{"Stage": "prod"})
	tests := []struct {
		name string
		expr string
		env  Env
		want any
	}{
		{"Ref parameter default", `!Ref Stage`, fixtureEnv, "dev"},
		{"Ref parameter from Env", `!Ref Stage`, prod, "prod"},
		{"Ref long form", `{Ref: Stage}`, fixtureEnv, "dev"},
		{"Ref list parameter", `!Ref Names`, fixtureEnv, []any{"a", "b", "c"}},
		{"Ref number parameter", `!Ref Count`, fixtureEnv, "3"},
		{"Ref AWS::Region", `!Ref AWS::Region`, fixtureEnv, "eu-west-1"},
		{"Ref AWS::AccountId", `!Ref AWS::AccountId`, fixtureEnv, "111122223333"},
		{"Ref AWS::StackName", `!Ref AWS::StackName`, fixtureEnv, "stack"},
		{"Ref AWS::Partition", `!Ref AWS::Partition`, fixtureEnv, "aws"},
		{"Ref AWS::URLSuffix", `!Ref AWS::URLSuffix`, fixtureEnv, "amazonaws.com"},
		{"Env defaults", `!Sub "${AWS::Region}/${AWS::AccountId}/${AWS::StackName}"`, Env{}, "us-east-1/123456789012/local"},
		{"Ref table with TableName", `!Ref Table`, fixtureEnv, "stack-table"},
		{"Ref table without TableName", `!Ref NamelessTable`, fixtureEnv, "NamelessTable"},
		{"Ref function with FunctionName", `!Ref Fn`, fixtureEnv, "my-fn"},
		{"Ref function without FunctionName", `!Ref PlainFn`, fixtureEnv, "PlainFn"},
		{"Ref Lambda function", `!Ref LambdaFn`, fixtureEnv, "LambdaFn"},
		{"Ref state machine", `!Ref Machine`, fixtureEnv, "arn:aws:states" + arnPrefix + "stateMachine:machine"},
		{"Ref queue", `!Ref Queue`, fixtureEnv, "https://sqs.eu-west-1.amazonaws.com/111122223333/Queue"},
		{"Ref FIFO queue", `!Ref FifoQueue`, fixtureEnv, "https://sqs.eu-west-1.amazonaws.com/111122223333/FifoQueue.fifo"},
		{"Ref topic", `!Ref Topic`, fixtureEnv, "arn:aws:sns" + arnPrefix + "Topic"},
		{"Ref other type", `!Ref Bucket`, fixtureEnv, "Bucket"},
		{"Ref API", `!Ref Api`, fixtureEnv, "Api"},
		{"Ref resource whose condition holds", `!Ref ProdOnly`, prod, "https://sqs.eu-west-1.amazonaws.com/111122223333/ProdOnly"},
		{"GetAtt table Arn", `!GetAtt Table.Arn`, fixtureEnv, "arn:aws:dynamodb" + arnPrefix + "table/stack-table"},
		{"GetAtt list form", `!GetAtt [Table, Arn]`, fixtureEnv, "arn:aws:dynamodb" + arnPrefix + "table/stack-table"},
		{"GetAtt long form", `{"Fn::GetAtt": [NamelessTable, Arn]}`, fixtureEnv, "arn:aws:dynamodb" + arnPrefix + "table/NamelessTable"},
		{"GetAtt function Arn", `!GetAtt Fn.Arn`, fixtureEnv, "arn:aws:lambda" + arnPrefix + "function:my-fn"},
		{"GetAtt Lambda function Arn", `!GetAtt LambdaFn.Arn`, fixtureEnv, "arn:aws:lambda" + arnPrefix + "function:LambdaFn"},
		{"GetAtt state machine Arn", `!GetAtt Machine.Arn`, fixtureEnv, "arn:aws:states" + arnPrefix + "stateMachine:machine"},
		{"GetAtt state machine Name", `!GetAtt Machine.Name`, fixtureEnv, "machine"},
		{"GetAtt queue Arn", `!GetAtt Queue.Arn`, fixtureEnv, "arn:aws:sqs" + arnPrefix + "Queue"},
		{"GetAtt queue QueueName", `!GetAtt NamedQueue.QueueName`, fixtureEnv, "named"},
		{"GetAtt queue QueueUrl", `!GetAtt NamedQueue.QueueUrl`, fixtureEnv, "https://sqs.eu-west-1.amazonaws.com/111122223333/named"},
		{"GetAtt rule Arn", `!GetAtt Rule.Arn`, fixtureEnv, "arn:aws:events" + arnPrefix + "rule/my-rule"},
		{"GetAtt rule on a custom bus", `!GetAtt BusRule.Arn`, fixtureEnv, "arn:aws:events" + arnPrefix + "rule/custom/BusRule"},
		{"GetAtt role Arn", `!GetAtt Role.Arn`, fixtureEnv, "arn:aws:iam::111122223333:role/svc/my-role"},
		{"GetAtt implicit function role", `!GetAtt PlainFnRole.Arn`, fixtureEnv, "arn:aws:iam::111122223333:role/PlainFnRole"},
		{"GetAtt topic name", `!GetAtt Topic.TopicName`, fixtureEnv, "Topic"},
		{"GetAtt attribute from a function", `!GetAtt [Machine, !Join ["", [Na, me]]]`, fixtureEnv, "machine"},
		{"Sub everything", `!Sub "${Stage}-${AWS::Region}-${Table}-${Table.Arn}-${!Literal}"`, fixtureEnv,
			"dev-eu-west-1-stack-table-arn:aws:dynamodb" + arnPrefix + "table/stack-table-${Literal}"},
		{"Sub variables", `!Sub ["${Greeting}, ${Who}", {Greeting: hello, Who: !Ref Stage}]`, fixtureEnv, "hello, dev"},
		{"Sub variable shadows parameter", `!Sub ["${Stage}", {Stage: shadow}]`, fixtureEnv, "shadow"},
		{"Sub long form", `{"Fn::Sub": "${AWS::AccountId}"}`, fixtureEnv, "111122223333"},
		{"Sub unclosed placeholder is literal", `!Sub "cost ${"`, fixtureEnv, "cost ${"},
		{"Join", `!Join [",", [a, !Ref Stage, 3]]`, fixtureEnv, "a,dev,3"},
		{"Join list parameter", `!Join ["+", !Ref Names]`, fixtureEnv, "a+b+c"},
		{"Select", `!Select [1, !Ref Names]`, fixtureEnv, "b"},
		{"Select string index", `!Select ["0", [x, y]]`, fixtureEnv, "x"},
		{"Split", `!Split [",", "a,b"]`, fixtureEnv, []any{"a", "b"}},
		{"Select of Split", `!Select [2, !Split ["-", "x-y-z"]]`, fixtureEnv, "z"},
		{"If false", `!If [IsProd, prod-value, dev-value]`, fixtureEnv, "dev-value"},
		{"If true", `!If [IsProd, prod-value, dev-value]`, prod, "prod-value"},
		{"If on And with region", `!If [DevInUsEast, "yes", "no"]`, fixtureEnv, "no"},
		{"If on And in us-east-1", `!If [DevInUsEast, "yes", "no"]`, Env{}, "yes"},
		{"If on Or", `!If [ProdOrDev, "yes", "no"]`, fixtureEnv, "yes"},
		{"If on long-form Equals", `!If [LongForm, "yes", "no"]`, fixtureEnv, "yes"},
		{"If on Not", `!If [IsDev, "yes", "no"]`, prod, "no"},
		{"If leaves the other branch unresolved", `!If [IsProd, !ImportValue shared, ok]`, fixtureEnv, "ok"},
		{"NoValue drops a key", `{A: 1, B: !If [IsProd, 2, !Ref AWS::NoValue]}`, fixtureEnv, map[string]any{"A": int64(1)}},
		{"NoValue drops a list item", `[a, !If [IsProd, b, !Ref AWS::NoValue]]`, fixtureEnv, []any{"a"}},
		{"NoValue at the top", `!Ref AWS::NoValue`, fixtureEnv, nil},
		{"FindInMap", `!FindInMap [StageConfig, !Ref Stage, Memory]`, fixtureEnv, int64(128)},
		{"FindInMap long form", `{"Fn::FindInMap": [StageConfig, prod, Memory]}`, fixtureEnv, int64(1024)},
		{"Base64", `!Base64 hi`, fixtureEnv, "aGk="},
		{"plain values", `{s: x, i: 1, f: 1.5, b: true, n: null, l: [1]}`, fixtureEnv,
			map[string]any{"s": "x", "i": int64(1), "f": 1.5, "b": true, "n": nil, "l": []any{int64(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveExpr(t, tt.expr, tt.env)
			if err != nil {
				t.Fatalf("%s: %v", tt.expr, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s = %#v, want %#v", tt.expr, got, tt.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		env     Env
		wantErr error
		want    string // in the message, after "resolve.yaml:LINE: Outputs.Out.Value..."
	}{
		{"ImportValue", `!ImportValue shared`, fixtureEnv, ErrUnsupported, "Fn::ImportValue is not supported locally"},
		{"GetAZs", `!GetAZs ""`, fixtureEnv, ErrUnsupported, "Fn::GetAZs is not supported locally"},
		{"Cidr", `!Cidr [10.0.0.0/16, 2, 8]`, fixtureEnv, ErrUnsupported, "Fn::Cidr is not supported locally"},
		{"Transform", `!Transform {Name: M}`, fixtureEnv, ErrUnsupported, "Fn::Transform is not supported locally"},
		{"unknown attribute", `!GetAtt Table.StreamArn`, fixtureEnv, ErrUnsupported, "Fn::GetAtt Table.StreamArn (AWS::DynamoDB::Table) is not supported locally"},
		{"attribute of a type without attributes", `!GetAtt Bucket.Arn`, fixtureEnv, ErrUnsupported, "Fn::GetAtt Bucket.Arn"},
		{"Ref unknown", `!Ref Nope`, fixtureEnv, ErrUnresolved, "Ref Nope: no parameter or resource of that name"},
		{"Ref unknown pseudo parameter", `!Ref AWS::Nope`, fixtureEnv, ErrUnresolved, "unknown pseudo parameter AWS::Nope"},
		{"GetAtt unknown", `!GetAtt Nope.Arn`, fixtureEnv, ErrUnresolved, "no resource Nope"},
		{"GetAtt attribute name unresolved", `!GetAtt [Machine, !Ref Suffix]`, fixtureEnv, ErrUnresolved, "Ref Suffix"},
		{"Sub unknown variable", `!Sub "x-${Nope}"`, fixtureEnv, ErrUnresolved, "Fn::Sub variable ${Nope}"},
		{"Sub list variable", `!Sub "${Names}"`, fixtureEnv, ErrInvalid, "${Names} is a list"},
		{"If unknown condition", `!If [Nope, a, b]`, fixtureEnv, ErrUnresolved, "condition Nope is not declared"},
		{"Select out of range", `!Select [5, [a]]`, fixtureEnv, ErrInvalid, "index 5 is out of range"},
		{"Select non-numeric index", `!Select [x, [a]]`, fixtureEnv, ErrInvalid, "index must be a number"},
		{"Join of a string", `!Join [",", abc]`, fixtureEnv, ErrInvalid, "Fn::Join needs a list"},
		{"Equals outside Conditions", `!Equals [a, b]`, fixtureEnv, ErrInvalid, "Fn::Equals is only valid in Conditions"},
		{"Condition outside Conditions", `!Condition IsProd`, fixtureEnv, ErrInvalid, "Condition is only valid in Conditions"},
		{"Ref resource whose condition is false", `!Ref ProdOnly`, fixtureEnv, ErrUnresolved, "resource ProdOnly is not created: its condition IsProd is false"},
		{"FindInMap unknown key", `!FindInMap [StageConfig, test, Memory]`, fixtureEnv, ErrUnresolved, "Mappings has no StageConfig.test.Memory"},
		{"FindInMap default value", `!FindInMap [StageConfig, test, Memory, {DefaultValue: 1}]`, fixtureEnv, ErrUnsupported, "Fn::FindInMap with a default value"},
		{"Split with an empty delimiter", `!Split ["", abc]`, fixtureEnv, ErrInvalid, "non-empty delimiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolveExpr(t, tt.expr, tt.env)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s: err = %v, want %v", tt.expr, err, tt.wantErr)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "resolve.yaml:") || !strings.Contains(msg, ": Outputs.Out.Value") {
				t.Errorf("error %q does not name the file, line and place", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
		})
	}
}

func TestResolveErrorLine(t *testing.T) {
	src := `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          OK: fine
          BAD: !ImportValue shared
`
	tmpl, err := Parse("template.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Functions(Env{})
	want := "template.yaml:8: Resources.Fn.Properties.Environment.Variables.BAD: Fn::ImportValue is not supported locally"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
}

func TestNewResolverChecksParameters(t *testing.T) {
	tmpl, err := Load("testdata/resolve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noDefault, err := Parse("p.yaml", []byte("Parameters:\n  P: {Type: String}\nResources:\n  R: {Type: X}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tmpl    *Template
		params  map[string]string
		wantErr error
	}{
		{"defaults", tmpl, nil, nil},
		{"allowed value", tmpl, map[string]string{"Stage": "prod"}, nil},
		{"undeclared parameter", tmpl, map[string]string{"Stag": "prod"}, ErrUnresolved},
		{"value not allowed", tmpl, map[string]string{"Stage": "qa"}, ErrInvalid},
		{"no value and no default", noDefault, nil, ErrInvalid},
		{"value without default", noDefault, map[string]string{"P": "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewResolver(tt.tmpl, Env{Parameters: tt.params})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestConditionErrors(t *testing.T) {
	src := `Conditions:
  A: !Condition B
  B: !Not [!Condition A]
  NotAFunction: plain
  LongCycle: !And [{Condition: LongCycle}, !Equals [a, a]]
Resources:
  R: {Type: X}
`
	tmpl, err := Parse("cond.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResolver(tmpl, Env{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cond    string
		wantErr error
		want    string
	}{
		{"cycle", "A", ErrInvalid, "circular reference"},
		{"long-form cycle", "LongCycle", ErrInvalid, "circular reference"},
		{"not a condition function", "NotAFunction", ErrInvalid, "expected a condition function"},
		{"undeclared", "Nope", ErrUnresolved, "condition Nope is not declared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Condition(tt.cond)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Condition(%s) = %v, want %v containing %q", tt.cond, err, tt.wantErr, tt.want)
			}
		})
	}
}

func TestPhysicalNameCycle(t *testing.T) {
	src := "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n      TableName: !Sub '${T}-x'\n"
	tmpl, err := Parse("cycle.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResolver(tmpl, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RefString("T"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "circular reference") {
		t.Errorf("RefString(T) = %v, want a circular reference error", err)
	}
}
