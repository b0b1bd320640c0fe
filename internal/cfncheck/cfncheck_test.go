package cfncheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const fixturePath = "testdata/sam-transformed.json"

// fixture returns a fresh decoding of the SAM translator's output.
func fixture(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	tpl, probs := Parse(data)
	if tpl == nil {
		t.Fatalf("Parse(%s): %v", fixturePath, probs)
	}
	return tpl
}

func parse(t *testing.T, doc string) map[string]any {
	t.Helper()
	tpl, probs := Parse([]byte(doc))
	if tpl == nil {
		t.Fatalf("Parse: %v\n%s", probs, doc)
	}
	return tpl
}

// cycleMembers returns the resources a cycle Problem's message lists.
func cycleMembers(t *testing.T, p Problem) []string {
	t.Helper()
	_, rest, ok := strings.Cut(p.Message, "[")
	list, _, ok2 := strings.Cut(rest, "]")
	if !ok || !ok2 {
		t.Fatalf("cycle message without a [list]: %s", p.Message)
	}
	return strings.Split(list, ", ")
}

func ofKind(ps []Problem, kind string) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// fixtureComponent is the fixture's one strongly connected component.
var fixtureComponent = []string{
	"CreditFunctionAliaslive", "CreditFunctionDeploymentGroup",
	"DebitFunctionAliaslive", "DebitFunctionDeploymentGroup",
	"FunctionErrorsAlarm", "OrchestratorFunction", "OrchestratorFunctionRole",
	"ReaperFunction", "ReaperFunctionRole",
	"RefundFunctionAliaslive", "RefundFunctionDeploymentGroup",
	"TransferStateMachine",
}

// TestFixture: the SAM translator's output has the cycle through the
// functions' deployment groups (an alias's UpdatePolicy names its
// deployment group, whose alarm watches the orchestrator, whose
// environment names the state machine, whose substitutions name the
// alias), the three nulls of the inlined definition, and nothing else.
func TestFixture(t *testing.T) {
	probs, err := CheckFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	cycles := ofKind(probs, KindCycle)
	if len(cycles) != 1 {
		t.Fatalf("want 1 cycle, got %d: %v", len(cycles), probs)
	}
	cyc := cycles[0]
	if got := cycleMembers(t, cyc); !slices.Equal(got, fixtureComponent) {
		t.Errorf("cycle between %v, want %v", got, fixtureComponent)
	}
	for _, want := range []string{
		"Resources.CreditFunctionAliaslive.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName",
		"one cycle: CreditFunctionAliaslive -> CreditFunctionDeploymentGroup (Ref CreditFunctionDeploymentGroup at Resources.CreditFunctionAliaslive.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName)",
		"-> FunctionErrorsAlarm (Ref FunctionErrorsAlarm at Resources.CreditFunctionDeploymentGroup.Properties.AlarmConfiguration.Alarms[1].Name)",
		"-> OrchestratorFunction (Ref OrchestratorFunction at Resources.FunctionErrorsAlarm.Properties.Metrics[1].MetricStat.Metric.Dimensions[0].Value)",
		"-> TransferStateMachine (Ref TransferStateMachine at Resources.OrchestratorFunction.Properties.Environment.Variables.STATE_MACHINE_ARN)",
		"-> CreditFunctionAliaslive (Ref CreditFunctionAliaslive at Resources.TransferStateMachine.Properties.DefinitionSubstitutions.CreditFunctionArn)",
	} {
		if !strings.Contains(cyc.Message, want) {
			t.Errorf("cycle message lacks %q:\n%s", want, cyc.Message)
		}
	}
	if cyc.Resource != "CreditFunctionAliaslive" || cyc.Path != "Resources.CreditFunctionAliaslive.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName" {
		t.Errorf("cycle at %q %q", cyc.Resource, cyc.Path)
	}

	var nulls []string
	for _, p := range probs {
		switch p.Kind {
		case KindCycle:
		case KindNull:
			nulls = append(nulls, p.Path)
			if p.Resource != "TransferStateMachine" {
				t.Errorf("null owned by %q: %v", p.Resource, p)
			}
		default:
			t.Errorf("unexpected problem: %v", p)
		}
	}
	wantNulls := []string{
		"Resources.TransferStateMachine.Properties.Definition.States.MarkCompleted.ResultPath",
		"Resources.TransferStateMachine.Properties.Definition.States.MarkFailed.ResultPath",
		"Resources.TransferStateMachine.Properties.Definition.States.MarkInProgress.ResultPath",
	}
	if !slices.Equal(nulls, wantNulls) {
		t.Errorf("nulls at %v, want %v", nulls, wantNulls)
	}
	if u := UncheckedTypes(fixture(t)); len(u) != 0 {
		t.Errorf("the fixture's types should all be in the attribute table; unchecked: %v", u)
	}
}

// TestDeterministic: map order does not change what is reported.
func TestDeterministic(t *testing.T) {
	first := Check(fixture(t))
	for range 20 {
		if got := Check(fixture(t)); !slices.Equal(got, first) {
			t.Fatalf("Check differs between runs:\n%v\n%v", got, first)
		}
	}
}

// TestFixtureWithAddedCycle puts a known cycle into a copy of the fixture
// and changes nothing else: the new cycle is found, and every other
// problem is as before.
func TestFixtureWithAddedCycle(t *testing.T) {
	before := Check(fixture(t))
	tests := []struct {
		name  string
		edit  func(res map[string]any)
		want  []string // the new or changed cycle's resources
		holds string   // a text the cycle's message must hold
	}{
		{
			name: "two independent resources depend on each other",
			edit: func(res map[string]any) {
				res["CursorKey"].(map[string]any)["DependsOn"] = "ServerlessDeploymentApplication"
				res["ServerlessDeploymentApplication"].(map[string]any)["DependsOn"] = []any{"CursorKey"}
			},
			want:  []string{"CursorKey", "ServerlessDeploymentApplication"},
			holds: "one cycle: CursorKey -> ServerlessDeploymentApplication (DependsOn at Resources.CursorKey.DependsOn) -> CursorKey (DependsOn at Resources.ServerlessDeploymentApplication.DependsOn[0])",
		},
		{
			name: "a resource depends on itself",
			edit: func(res map[string]any) {
				res["Dashboard"].(map[string]any)["DependsOn"] = []any{"Dashboard"}
			},
			want:  []string{"Dashboard"},
			holds: "one cycle: Dashboard -> Dashboard (DependsOn at Resources.Dashboard.DependsOn[0])",
		},
		{
			name: "a GetAtt in the Metadata of a resource the component uses",
			edit: func(res map[string]any) {
				res["ServerlessDeploymentApplication"].(map[string]any)["Metadata"] = map[string]any{"Alarm": map[string]any{"Fn::GetAtt": "FunctionErrorsAlarm.Arn"}}
			},
			want: append(slices.Clone(fixtureComponent), "ServerlessDeploymentApplication"),
			// The shortest cycle is still the one through the UpdatePolicy.
			holds: "one cycle: CreditFunctionAliaslive -> CreditFunctionDeploymentGroup (Ref CreditFunctionDeploymentGroup at Resources.CreditFunctionAliaslive.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := fixture(t)
			tt.edit(tpl["Resources"].(map[string]any))
			got := Check(tpl)
			slices.Sort(tt.want)
			var found *Problem
			var rest []Problem
			for _, p := range got {
				if p.Kind == KindCycle && slices.Equal(cycleMembers(t, p), tt.want) {
					found = &p
					continue
				}
				rest = append(rest, p)
			}
			if found == nil {
				t.Fatalf("no cycle between %v in:\n%v", tt.want, got)
			}
			if !strings.Contains(found.Message, tt.holds) {
				t.Errorf("cycle message lacks %q:\n%s", tt.holds, found.Message)
			}
			// The fixture's cycle is the one that grew, or is unchanged.
			var wantRest []Problem
			for _, p := range before {
				if p.Kind == KindCycle && len(tt.want) > len(fixtureComponent) {
					continue
				}
				wantRest = append(wantRest, p)
			}
			if !slices.Equal(rest, wantRest) {
				t.Errorf("other problems changed:\ngot  %v\nwant %v", rest, wantRest)
			}
		})
	}
}

// TestRules checks each rule on a small template. want lists the
// problems as "kind path" in Check's order; msg, when set, is a text one
// of their messages holds.
func TestRules(t *testing.T) {
	const queue = `"Q": {"Type": "AWS::SQS::Queue"}`
	tests := []struct {
		name string
		doc  string
		want []string
		msg  string
	}{
		{
			name: "pseudo parameters are fine",
			doc: `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {
				"QueueName": {"Fn::Sub": "${AWS::AccountId}${AWS::Partition}${AWS::Region}${AWS::StackId}${AWS::StackName}${AWS::URLSuffix}"},
				"Tags": [{"Key": "k", "Value": {"Fn::Join": ["", [
					{"Ref": "AWS::AccountId"}, {"Ref": "AWS::NotificationARNs"}, {"Ref": "AWS::NoValue"}, {"Ref": "AWS::Partition"},
					{"Ref": "AWS::Region"}, {"Ref": "AWS::StackId"}, {"Ref": "AWS::StackName"}, {"Ref": "AWS::URLSuffix"}]]}}]}}}}`,
		},
		{
			name: "an unknown pseudo parameter",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Ref": "AWS::Regoin"}}}}}`,
			want: []string{"missing-reference Resources.Q.Properties.QueueName"},
			msg:  "Ref AWS::Regoin: AWS::Regoin is not a pseudo parameter",
		},
		{
			name: "Ref to a parameter",
			doc:  `{"Parameters": {"Name": {"Type": "String"}}, "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Ref": "Name"}}}}}`,
		},
		{
			name: "Ref to nothing",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Join": ["-", [{"Ref": "Nope"}]]}}}}}`,
			want: []string{"missing-reference Resources.Q.Properties.QueueName.Fn::Join[1][0]"},
			msg:  "Ref Nope: no resource, parameter or pseudo parameter named Nope",
		},
		{
			name: "Sub escapes are not references",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": "${!Q}-${!Nope}-${!Q.Arn}"}}}}}`,
		},
		{
			name: "Sub local variables shadow resources and are no dependency",
			doc: `{"Resources": {
				"A": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": ["${B}-${Local}", {"B": "b", "Local": "l"}]}}},
				"B": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::GetAtt": ["A", "QueueName"]}}}}}`,
		},
		{
			name: "a Sub variable's value is a dependency",
			doc: `{"Resources": {
				"A": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": ["${X}", {"X": {"Ref": "B"}}]}}},
				"B": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Ref": "A"}}}}}`,
			want: []string{"cycle Resources.A.Properties.QueueName.Fn::Sub[1].X"},
			msg:  "[A, B]; one cycle: A -> B (Ref B at Resources.A.Properties.QueueName.Fn::Sub[1].X) -> A (Ref A at Resources.B.Properties.QueueName)",
		},
		{
			name: "Sub resource and attribute variables are dependencies",
			doc: `{"Resources": {
				"A": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": "x-${B.QueueName}"}}},
				"B": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": ["${A}", {}]}}}}}`,
			want: []string{"cycle Resources.A.Properties.QueueName"},
			msg:  "A -> B (Fn::Sub ${B.QueueName} at Resources.A.Properties.QueueName) -> A (Fn::Sub ${A} at Resources.B.Properties.QueueName)",
		},
		{
			name: "Sub names a missing variable and a missing attribute",
			doc: `{"Resources": {` + queue + `, "T": {"Type": "AWS::SNS::Topic", "Properties": {
				"TopicName": {"Fn::Sub": "${Nope}-${Q.Url}-${Gone.Arn}"}}}}}`,
			want: []string{
				"missing-reference Resources.T.Properties.TopicName",
				"missing-reference Resources.T.Properties.TopicName",
				"missing-attribute Resources.T.Properties.TopicName",
			},
			msg: "Fn::Sub ${Q.Url}: Q (AWS::SQS::Queue) has no attribute Url; it has Arn, QueueName, QueueUrl",
		},
		{
			name: "Sub unclosed variable",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": "a-${AWS::Region"}}}}}`,
			want: []string{"invalid Resources.Q.Properties.QueueName"},
			msg:  "Fn::Sub: unclosed ${ at offset 2",
		},
		{
			name: "Sub variable name with a space",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Sub": "${AWS::Region} ${a b}"}}}}}`,
			want: []string{"invalid Resources.Q.Properties.QueueName"},
			msg:  "variable ${a b}: variable names must contain only alphanumeric characters",
		},
		{
			name: "GetAtt string form and DependsOn string make a cycle",
			doc: `{"Resources": {
				"A": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": {"Fn::GetAtt": "B.QueueName"}}},
				"B": {"Type": "AWS::SQS::Queue", "DependsOn": "A"}}}`,
			want: []string{"cycle Resources.A.Properties.TopicName"},
			msg:  "A -> B (Fn::GetAtt B.QueueName at Resources.A.Properties.TopicName) -> A (DependsOn at Resources.B.DependsOn)",
		},
		{
			name: "GetAtt of an attribute the type does not have",
			doc: `{"Resources": {"F": {"Type": "AWS::Lambda::Function"}, "L": {"Type": "AWS::Lambda::Alias"},
				"T": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": {"Fn::GetAtt": ["L", "Arn"]},
					"DisplayName": {"Fn::GetAtt": "F.SnapStartResponse.ApplyOn"}}}}}`,
			want: []string{"missing-attribute Resources.T.Properties.TopicName"},
			msg:  "Fn::GetAtt L.Arn: L (AWS::Lambda::Alias) has no attribute Arn; it has AliasArn",
		},
		{
			name: "GetAtt of a type without attributes",
			doc: `{"Resources": {"S": {"Type": "AWS::ApiGateway::Stage"},
				"T": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": {"Fn::GetAtt": ["S", "StageName"]}}}}}`,
			want: []string{"missing-attribute Resources.T.Properties.TopicName"},
			msg:  "has no attribute StageName; it has none",
		},
		{
			name: "GetAtt of a missing resource and of a parameter",
			doc: `{"Parameters": {"P": {"Type": "String"}}, "Resources": {"T": {"Type": "AWS::SNS::Topic", "Properties": {
				"TopicName": {"Fn::GetAtt": ["Nope", "Arn"]}, "DisplayName": {"Fn::GetAtt": ["P", "Arn"]}}}}}`,
			want: []string{
				"missing-reference Resources.T.Properties.DisplayName",
				"missing-reference Resources.T.Properties.TopicName",
			},
			msg: "Fn::GetAtt P.Arn: P is a parameter, not a resource with attributes",
		},
		{
			name: "GetAtt attributes of unknown and custom types are not checked",
			doc: `{"Resources": {"X": {"Type": "AWS::Foo::Bar"}, "C": {"Type": "Custom::Thing"},
				"T": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": {"Fn::GetAtt": ["X", "Whatever"]},
					"DisplayName": {"Fn::GetAtt": ["C", "Anything.At.All"]}}}}}`,
		},
		{
			name: "GetAtt attribute given by a Ref",
			doc: `{"Parameters": {"A": {"Type": "String"}}, "Resources": {` + queue + `,
				"T": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": {"Fn::GetAtt": ["Q", {"Ref": "Nope"}]}}}}}`,
			want: []string{"missing-reference Resources.T.Properties.TopicName.Fn::GetAtt[1]"},
		},
		{
			name: "DependsOn names a missing resource and a parameter",
			doc: `{"Parameters": {"P": {"Type": "String"}}, "Resources": {` + queue + `,
				"T": {"Type": "AWS::SNS::Topic", "DependsOn": ["Q", "Nope", "P"]}}}`,
			want: []string{
				"missing-reference Resources.T.DependsOn[1]",
				"missing-reference Resources.T.DependsOn[2]",
			},
			msg: "DependsOn P: P is a parameter; DependsOn names resources",
		},
		{
			name: "a self-loop",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": ["Q", "Arn"]}}}}}}`,
			want: []string{"cycle Resources.Q.Properties.RedrivePolicy.deadLetterTargetArn"},
			msg:  "circular dependency between resources: [Q]; one cycle: Q -> Q (Fn::GetAtt Q.Arn at Resources.Q.Properties.RedrivePolicy.deadLetterTargetArn)",
		},
		{
			name: "UpdatePolicy is a dependency",
			doc: `{"Resources": {
				"Alias": {"Type": "AWS::Lambda::Alias", "UpdatePolicy": {"CodeDeployLambdaAliasUpdate": {"DeploymentGroupName": {"Ref": "Group"}}}},
				"Group": {"Type": "AWS::CodeDeploy::DeploymentGroup", "Properties": {"AlarmConfiguration": {"Alarms": [{"Name": {"Ref": "Alarm"}}]}}},
				"Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"AlarmName": {"Fn::GetAtt": ["Alias", "AliasArn"]}}}}}`,
			want: []string{"cycle Resources.Alarm.Properties.AlarmName"},
			msg:  "[Alarm, Alias, Group]; one cycle: Alarm -> Alias (Fn::GetAtt Alias.AliasArn at Resources.Alarm.Properties.AlarmName) -> Group (Ref Group at Resources.Alias.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName) -> Alarm",
		},
		{
			name: "CreationPolicy and Metadata are dependencies",
			doc: `{"Resources": {
				"A": {"Type": "AWS::SQS::Queue", "CreationPolicy": {"X": {"Ref": "B"}}},
				"B": {"Type": "AWS::SQS::Queue", "Metadata": {"Y": {"Fn::Sub": "${A}"}}}}}`,
			want: []string{"cycle Resources.A.CreationPolicy.X"},
		},
		{
			name: "Condition is not a dependency, and resources of a false condition still count",
			doc: `{"Parameters": {"P": {"Type": "String"}}, "Conditions": {"C": {"Fn::Equals": [{"Ref": "P"}, "x"]}}, "Resources": {
				"A": {"Type": "AWS::SQS::Queue", "Condition": "C", "Properties": {"QueueName": {"Fn::If": ["C", {"Ref": "B"}, {"Ref": "AWS::NoValue"}]}}},
				"B": {"Type": "AWS::SQS::Queue", "Condition": "C", "DependsOn": "A"},
				"D": {"Type": "AWS::SQS::Queue", "Condition": "C"}}}`,
			want: []string{"cycle Resources.A.Properties.QueueName.Fn::If[1]"},
			msg:  "[A, B]",
		},
		{
			name: "a missing condition in a resource, an output, Fn::If and the Condition function",
			doc: `{"Conditions": {"C": {"Fn::And": [{"Condition": "Gone"}, {"Fn::Equals": ["a", "a"]}]}}, "Resources": {
				"A": {"Type": "AWS::SQS::Queue", "Condition": "Nope", "Properties": {"QueueName": {"Fn::If": ["Missing", "a", "b"]}}}},
				"Outputs": {"O": {"Condition": "Absent", "Value": "v"}}}`,
			want: []string{
				"missing-condition Conditions.C.Fn::And[0]",
				"missing-condition Outputs.O.Condition",
				"missing-condition Resources.A.Condition",
				"missing-condition Resources.A.Properties.QueueName",
			},
			msg: "Fn::If Missing: no condition named Missing in Conditions",
		},
		{
			name: "a null deep in a state machine definition",
			doc: `{"Resources": {"SM": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"Definition": {"States": {
				"Done": {"Type": "Pass", "ResultPath": null},
				"Mark.Done": {"Type": "Task", "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": null}]}}}}}}}`,
			want: []string{
				"null Resources.SM.Properties.Definition.States.Done.ResultPath",
				`null Resources.SM.Properties.Definition.States["Mark.Done"].Catch[0].ResultPath`,
			},
			msg: "'null' values are not allowed in templates",
		},
		{
			name: "nulls in every section",
			doc: `{"Description": null, "Parameters": {"P": {"Type": "String", "Default": null}}, "Mappings": {"M": {"k": {"v": null}}},
				"Conditions": {"C": null}, "Resources": {"Q": null}, "Outputs": {"O": {"Value": null}}}`,
			want: []string{
				"null Conditions.C",
				"null Description",
				"null Mappings.M.k.v",
				"null Outputs.O.Value",
				"null Parameters.P.Default",
				"null Resources.Q",
			},
		},
		{
			name: "outputs reference missing things",
			doc:  `{"Resources": {` + queue + `}, "Outputs": {"O": {"Value": {"Ref": "Nope"}, "Export": {"Name": {"Fn::GetAtt": ["Q", "Name"]}}}}}`,
			want: []string{
				"missing-reference Outputs.O.Value",
				"missing-attribute Outputs.O.Export.Name",
			},
		},
		{
			name: "conditions cannot reference resources",
			doc:  `{"Conditions": {"C": {"Fn::Equals": [{"Ref": "Q"}, ""]}}, "Resources": {` + queue + `}}`,
			want: []string{"invalid Conditions.C.Fn::Equals[0]"},
			msg:  "Ref Q: conditions cannot reference resources",
		},
		{
			name: "circular conditions",
			doc: `{"Conditions": {
				"A": {"Fn::And": [{"Condition": "B"}, {"Fn::Equals": ["x", "x"]}]},
				"B": {"Fn::Not": [{"Condition": "A"}]}}, "Resources": {` + queue + `}}`,
			want: []string{"cycle Conditions.A.Fn::And[0]"},
			msg:  "circular dependency between conditions: [A, B]; one cycle: A -> B (Condition at Conditions.A.Fn::And[0]) -> A (Condition at Conditions.B.Fn::Not[0])",
		},
		{
			name: "FindInMap of a missing mapping",
			doc: `{"Mappings": {"M": {"a": {"b": "c"}}}, "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {
				"QueueName": {"Fn::FindInMap": ["Nope", "a", "b"]}, "DelaySeconds": {"Fn::FindInMap": ["M", {"Ref": "AWS::Region"}, "b"]}}}}}`,
			want: []string{"missing-reference Resources.Q.Properties.QueueName"},
			msg:  "no mapping named Nope",
		},
		{
			name: "two independent cycles are two problems",
			doc: `{"Resources": {
				"A": {"Type": "AWS::SQS::Queue", "DependsOn": "B"}, "B": {"Type": "AWS::SQS::Queue", "DependsOn": "A"},
				"C": {"Type": "AWS::SQS::Queue", "DependsOn": ["D"]}, "D": {"Type": "AWS::SQS::Queue", "DependsOn": ["C"]},
				"E": {"Type": "AWS::SQS::Queue", "DependsOn": ["A", "C"]}}}`,
			want: []string{"cycle Resources.A.DependsOn", "cycle Resources.C.DependsOn[0]"},
		},
		{
			name: "a multi-key object holding Ref is data, not an intrinsic",
			doc:  `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"Tags": [{"Ref": "Nope", "Other": 1}]}}}}`,
		},
		{
			name: "Resources is not an object",
			doc:  `{"Resources": []}`,
			want: []string{"invalid Resources"},
		},
		{
			name: "no Resources",
			doc:  `{"Parameters": {}}`,
			want: []string{"invalid template"},
		},
		{
			name: "a resource without Type and one that is not an object",
			doc:  `{"Resources": {"A": {"Properties": {}}, "B": "x", "C": {"Type": 3}, "D": {"Type": "AWS::SQS::Queue", "Properties": []}}}`,
			want: []string{
				"invalid Resources.A",
				"invalid Resources.B",
				"invalid Resources.C.Type",
				"invalid Resources.D.Properties",
			},
			msg: "resource A has no Type",
		},
		{
			name: "malformed intrinsic functions",
			doc: `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "DependsOn": {"x": 1}, "Condition": 5, "Properties": {
				"A": {"Ref": 1}, "B": {"Fn::GetAtt": []}, "C": {"Fn::GetAtt": "NoDot"}, "D": {"Fn::GetAtt": [1, "Arn"]},
				"E": {"Fn::Sub": []}, "F": {"Fn::Sub": [1, {}]}, "G": {"Fn::Sub": ["x", 3]}, "H": {"Fn::Sub": 7},
				"I": {"Fn::If": "x"}, "J": {"Fn::FindInMap": 3}, "K": {"Fn::If": [1, "a", "b"]}}}}}`,
			want: []string{
				"invalid Resources.Q.Condition",
				"invalid Resources.Q.DependsOn",
				"invalid Resources.Q.Properties.A",
				"invalid Resources.Q.Properties.B",
				"invalid Resources.Q.Properties.C",
				"invalid Resources.Q.Properties.D",
				"invalid Resources.Q.Properties.E",
				"invalid Resources.Q.Properties.F",
				"invalid Resources.Q.Properties.G",
				"invalid Resources.Q.Properties.H",
				"invalid Resources.Q.Properties.I",
				"invalid Resources.Q.Properties.J",
				"invalid Resources.Q.Properties.K",
			},
		},
		{
			name: "template structure",
			doc: `{"AWSTemplateFormatVersion": "2011-01-01", "Bogus": 1, "Parameters": {"P": {"Default": "x"}, "Q": {"Type": "String"}, "bad-id": {"Type": "String"}},
				"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {"O": {"Description": "d"}, "P": "x"}}`,
			want: []string{
				"invalid AWSTemplateFormatVersion",
				"invalid Bogus",
				"invalid Outputs.O",
				"invalid Outputs.P",
				"invalid Parameters.P",
				"invalid Parameters.bad-id",
				"invalid Resources.Q",
			},
			msg: "Q is both a parameter and a resource",
		},
		{
			name: "sections that are not objects",
			doc:  `{"Parameters": [], "Conditions": "x", "Mappings": 1, "Outputs": true, "Resources": {` + queue + `}}`,
			want: []string{"invalid Conditions", "invalid Mappings", "invalid Outputs", "invalid Parameters"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probs := Check(parse(t, tt.doc))
			var got []string
			var msgs strings.Builder
			for _, p := range probs {
				where := p.Path
				if where == "" {
					where = "template"
				}
				got = append(got, p.Kind+" "+where)
				msgs.WriteString(p.Message + "\n")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q\n%s", got, tt.want, msgs.String())
			}
			if tt.msg != "" && !strings.Contains(msgs.String(), tt.msg) {
				t.Errorf("no message holds %q:\n%s", tt.msg, msgs.String())
			}
		})
	}
}

func TestUncheckedTypes(t *testing.T) {
	tpl := parse(t, `{"Resources": {
		"A": {"Type": "AWS::S3::Bucket"}, "B": {"Type": "AWS::S3::Bucket"}, "C": {"Type": "AWS::SQS::Queue"},
		"D": {"Type": "Custom::Thing"}, "E": {"Type": "AWS::CloudFormation::CustomResource"}, "F": {"Type": "AWS::Serverless::Function"},
		"G": {}, "H": 3}}`)
	want := []string{"AWS::S3::Bucket", "AWS::Serverless::Function"}
	if got := UncheckedTypes(tpl); !slices.Equal(got, want) {
		t.Errorf("UncheckedTypes = %v, want %v", got, want)
	}
	if got := UncheckedTypes(nil); got != nil {
		t.Errorf("UncheckedTypes(nil) = %v", got)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "", "not JSON: empty document"},
		{"syntax error", `{"Resources": `, "not JSON: unexpected EOF"},
		{"an array", `[]`, "the template is not a JSON object"},
		{"two values", `{} {}`, "not one JSON value: data after offset 2"},
		{"an object", `{"Resources": {}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, probs := Parse([]byte(tt.doc))
			if tt.want == "" {
				if tpl == nil || probs != nil {
					t.Fatalf("Parse = %v, %v", tpl, probs)
				}
				return
			}
			if tpl != nil || len(probs) != 1 || probs[0].Kind != KindInvalid || probs[0].Message != tt.want {
				t.Errorf("Parse = %v, %v; want the invalid problem %q", tpl, probs, tt.want)
			}
		})
	}
}

func TestCheckFile(t *testing.T) {
	if _, err := CheckFile(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("CheckFile of a missing file: no error")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	probs, err := CheckFile(bad)
	if err != nil || len(probs) != 1 || probs[0].Kind != KindInvalid {
		t.Errorf("CheckFile(not JSON) = %v, %v", probs, err)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{Kind: KindNull, Resource: "R", Path: "Resources.R.X", Message: "m"}, "null Resources.R.X: m"},
		{Problem{Kind: KindInvalid, Resource: "Outputs.O", Message: "m"}, "invalid Outputs.O: m"},
		{Problem{Kind: KindInvalid, Message: "m"}, "invalid template: m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestSummary(t *testing.T) {
	if got, want := Summary(fixture(t)), "73 resources, no cycle, no missing reference, no null"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got, want := Summary(parse(t, `{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}`)), "1 resource, no cycle, no missing reference, no null"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

// FuzzCheck: no input makes Parse, Check or UncheckedTypes panic.
func FuzzCheck(f *testing.F) {
	if data, err := os.ReadFile(fixturePath); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		`{}`, `{"Resources": null}`, `{"Resources": {"A": {"Type": "X", "DependsOn": ["A", 1, null]}}}`,
		`{"Resources": {"A": {"Type": "X", "Properties": {"P": {"Fn::Sub": ["${A.B.C}${!x}${", {"A": null}]}}}}}`,
		`{"Conditions": {"C": {"Fn::If": ["C", {"Condition": "C"}, {"Fn::GetAtt": [null, {"Ref": "C"}]}]}}}`,
		`{"Outputs": {"O": {"Value": {"Fn::GetAtt": "A."}}}, "Resources": {"A": {"Type": 1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tpl, _ := Parse(data)
		if tpl == nil {
			return
		}
		for _, p := range Check(tpl) {
			if p.Kind == "" || p.Message == "" {
				t.Errorf("incomplete problem %#v", p)
			}
		}
		UncheckedTypes(tpl)
	})
}
