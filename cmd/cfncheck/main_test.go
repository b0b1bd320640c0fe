package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixture = "../../internal/cfncheck/testdata/sam-transformed.json"

func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := write("clean.json", `{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}, "B": {"Type": "AWS::S3::Bucket", "DependsOn": "Q"}}}`)
	missing := write("missing.json", `{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Ref": "Nope"}}}}}`)
	notJSON := write("bad.json", `{"Resources":`)

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // its lines, exactly; nil to skip
		stdoutHas  string
		stderrHas  string
		stdoutNone bool
	}{
		{
			name: "the fixture's nulls and cycle",
			args: []string{fixture},
			code: 1,
			stdout: []string{
				fixture + ": null Resources.TransferStateMachine.Properties.Definition.States.MarkCompleted.ResultPath: 'null' values are not allowed in templates",
				fixture + ": null Resources.TransferStateMachine.Properties.Definition.States.MarkFailed.ResultPath: 'null' values are not allowed in templates",
				fixture + ": null Resources.TransferStateMachine.Properties.Definition.States.MarkInProgress.ResultPath: 'null' values are not allowed in templates",
				fixture + ": cycle Resources.CreditFunctionAliaslive.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName: circular dependency between resources: " +
					"[CreditFunctionAliaslive, CreditFunctionDeploymentGroup, DebitFunctionAliaslive, DebitFunctionDeploymentGroup, FunctionErrorsAlarm, OrchestratorFunction, OrchestratorFunctionRole, ReaperFunction, ReaperFunctionRole, RefundFunctionAliaslive, RefundFunctionDeploymentGroup, TransferStateMachine]; " +
					"one cycle: CreditFunctionAliaslive -> CreditFunctionDeploymentGroup (Ref CreditFunctionDeploymentGroup at Resources.CreditFunctionAliaslive.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName) " +
					"-> FunctionErrorsAlarm (Ref FunctionErrorsAlarm at Resources.CreditFunctionDeploymentGroup.Properties.AlarmConfiguration.Alarms[1].Name) " +
					"-> OrchestratorFunction (Ref OrchestratorFunction at Resources.FunctionErrorsAlarm.Properties.Metrics[1].MetricStat.Metric.Dimensions[0].Value) " +
					"-> TransferStateMachine (Ref TransferStateMachine at Resources.OrchestratorFunction.Properties.Environment.Variables.STATE_MACHINE_ARN) " +
					"-> CreditFunctionAliaslive (Ref CreditFunctionAliaslive at Resources.TransferStateMachine.Properties.DefinitionSubstitutions.CreditFunctionArn)",
			},
		},
		{
			name: "a clean template, with a type whose attributes are not known",
			args: []string{clean},
			code: 0,
			stdout: []string{
				clean + ": note: Fn::GetAtt attributes not checked for AWS::S3::Bucket",
				clean + ": 2 resources, no cycle, no missing reference, no null",
			},
		},
		{
			name:   "a missing reference",
			args:   []string{missing},
			code:   1,
			stdout: []string{missing + ": missing-reference Resources.Q.Properties.QueueName: Ref Nope: no resource, parameter or pseudo parameter named Nope"},
		},
		{
			name:      "not JSON",
			args:      []string{notJSON},
			code:      1,
			stdoutHas: notJSON + ": invalid template: not JSON: unexpected EOF",
		},
		{name: "no argument", args: nil, code: 2, stderrHas: "usage: cfncheck FILE.json", stdoutNone: true},
		{name: "two arguments", args: []string{clean, clean}, code: 2, stderrHas: "usage", stdoutNone: true},
		{name: "an unknown flag", args: []string{"-x", clean}, code: 2, stderrHas: "usage", stdoutNone: true},
		{name: "a missing file", args: []string{filepath.Join(dir, "none.json")}, code: 2, stderrHas: "no such file", stdoutNone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout.String(), stderr.String())
			}
			if tt.stdout != nil {
				if got, want := stdout.String(), strings.Join(tt.stdout, "\n")+"\n"; got != want {
					t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
				}
			}
			if !strings.Contains(stdout.String(), tt.stdoutHas) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdoutHas, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrHas) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrHas, stderr.String())
			}
			if tt.stdoutNone && stdout.Len() > 0 {
				t.Errorf("stdout: %s", stdout.String())
			}
		})
	}
}
