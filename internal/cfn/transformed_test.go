package cfn_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/cfncheck"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
)

// transformedPath is the project's template.cfn.json.
func transformedPath(t *testing.T) string {
	t.Helper()
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return cfn.TransformedPath(filepath.Join(root, "template.yaml"))
}

// transformedDoc is template.cfn.json decoded.
func transformedDoc(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(transformedPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestTransformedTemplateIsCurrent(t *testing.T) {
	if _, err := cfn.LoadTransformed(transformedPath(t)); err != nil {
		t.Fatalf("%v (make cfn writes template.cfn.json from template.yaml)", err)
	}
}

func TestLoadTransformedRefusesAStaleTemplate(t *testing.T) {
	dir := t.TempDir()
	src := transformedPath(t)
	for _, name := range []string{"template.yaml", "template.cfn.json", "api/openapi.gateway.json"} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(src), name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "api/openapi.gateway.json" {
			data = append(data, '\n')
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := cfn.LoadTransformed(filepath.Join(dir, "template.cfn.json"))
	if !errors.Is(err, cfn.ErrStale) || !strings.Contains(err.Error(), "api/openapi.gateway.json") {
		t.Fatalf("error %v, want ErrStale naming the changed include", err)
	}
}

// TestTransformedTemplateDeploys checks the template as CloudFormation
// orders it: no dependency cycle, no reference to what does not exist, no
// null value.
func TestTransformedTemplateDeploys(t *testing.T) {
	problems, err := cfncheck.CheckFile(transformedPath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestTransformedTemplateCheckSeesACycle puts back the cycle the state
// machine's substitutions made when they referenced the legs' aliases
// (alias -> deployment group -> rollback alarm -> orchestrator -> state
// machine -> alias) and expects the check to refuse it.
func TestTransformedTemplateCheckSeesACycle(t *testing.T) {
	doc := transformedDoc(t)
	sm := doc["Resources"].(map[string]any)["TransferStateMachine"].(map[string]any)
	subs := sm["Properties"].(map[string]any)["DefinitionSubstitutions"].(map[string]any)
	subs["DebitFunctionArn"] = map[string]any{"Ref": "DebitFunctionAliaslive"}
	alarm := doc["Resources"].(map[string]any)["DebitFunctionDeploymentGroup"].(map[string]any)
	props := alarm["Properties"].(map[string]any)
	props["AlarmConfiguration"] = map[string]any{"Enabled": true, "Alarms": []any{map[string]any{"Name": map[string]any{"Ref": "FunctionErrorsAlarm"}}}}
	found := false
	for _, p := range cfncheck.Check(doc) {
		if p.Kind == cfncheck.KindCycle && strings.Contains(p.Message, "TransferStateMachine") && strings.Contains(p.Message, "DebitFunctionAliaslive") {
			found = true
		}
	}
	if !found {
		t.Fatal("the check did not report the cycle through the state machine and the debit's alias")
	}
}

// TestTransformedTemplateHasOneProtectedStage checks that the API is
// deployed to its stage only: SAM deploys a second stage named "Stage",
// without the stage's throttling, access logs and web ACL, when the API
// sets no OpenApiVersion.
func TestTransformedTemplateHasOneProtectedStage(t *testing.T) {
	res := transformedDoc(t)["Resources"].(map[string]any)
	var stages []string
	for id, v := range res {
		r := v.(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::ApiGateway::Stage":
			stages = append(stages, id)
			if props["MethodSettings"] == nil || props["AccessLogSetting"] == nil {
				t.Errorf("stage %s has no throttling or no access logs", id)
			}
		case "AWS::ApiGateway::Deployment":
			if _, ok := props["StageName"]; ok {
				t.Errorf("deployment %s creates a stage of its own (StageName %v)", id, props["StageName"])
			}
		}
	}
	if len(stages) != 1 {
		t.Fatalf("stages %v, want one", stages)
	}
	assoc, _ := res["ApiWebAclAssociation"].(map[string]any)
	if !strings.Contains(mustJSON(t, assoc), stages[0]) && !strings.Contains(mustJSON(t, assoc), "TransfersApi.Stage") {
		t.Errorf("the web ACL is not associated with stage %s: %s", stages[0], mustJSON(t, assoc))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParametersAcceptWhatAWSAccepts checks the parameters whose values
// AWS refuses at deployment, or which would clash with what SAM creates.
func TestParametersAcceptWhatAWSAccepts(t *testing.T) {
	tmpl := projectTemplate(t)
	for _, tc := range []struct {
		name, param, value string
		ok                 bool
	}{
		{"no web ACL", "CallerRateLimit", "0", true},
		{"WAF's minimum", "CallerRateLimit", "10", true},
		{"the default", "CallerRateLimit", "300", true},
		{"WAF's maximum", "CallerRateLimit", "2000000000", true},
		{"below WAF's minimum", "CallerRateLimit", "9", false},
		{"one", "CallerRateLimit", "1", false},
		{"above WAF's maximum", "CallerRateLimit", "2000000001", false},
		{"a fraction", "CallerRateLimit", "10.5", false},
		{"one minute", "SweepSchedule", "rate(1 minute)", true},
		{"five minutes", "SweepSchedule", "rate(5 minutes)", true},
		{"two hours", "SweepSchedule", "rate(2 hours)", true},
		{"one minutes", "SweepSchedule", "rate(1 minutes)", false},
		{"five minute", "SweepSchedule", "rate(5 minute)", false},
		{"zero minutes", "SweepSchedule", "rate(0 minutes)", false},
		{"no collector layer", "OtelCollectorLayerArn", "", true},
		{"AWS's ADOT layer", "OtelCollectorLayerArn", "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-115-0:3", true},
		{"another account's layer", "OtelCollectorLayerArn", "arn:aws:lambda:eu-west-1:123456789012:layer:aws-otel-collector-arm64-ver-0-115-0:3", false},
		{"AWS's layer for x86_64", "OtelCollectorLayerArn", "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-amd64-ver-0-115-0:3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cfn.NewResolver(tmpl, cfn.Env{Parameters: map[string]string{tc.param: tc.value}})
			if (err == nil) != tc.ok {
				t.Fatalf("%s=%q: error %v, want accepted %v", tc.param, tc.value, err, tc.ok)
			}
		})
	}
}
