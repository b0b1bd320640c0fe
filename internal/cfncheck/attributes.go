package cfncheck

import (
	"slices"
	"strings"
)

// attributes are the Fn::GetAtt attributes of the resource types whose
// return values are known here: the read-only properties of each type's
// CloudFormation resource schema, nested ones joined by '.'. A type listed
// with none has no attribute to get.
var attributes = map[string][]string{
	"AWS::ApiGateway::Deployment":      {"DeploymentId"},
	"AWS::ApiGateway::RestApi":         {"RestApiId", "RootResourceId"},
	"AWS::ApiGateway::Stage":           {},
	"AWS::CloudWatch::Alarm":           {"Arn"},
	"AWS::CloudWatch::Dashboard":       {"Id"},
	"AWS::CodeDeploy::Application":     {},
	"AWS::CodeDeploy::DeploymentGroup": {"Id"},
	"AWS::DynamoDB::Table":             {"Arn", "StreamArn"},
	"AWS::Events::Rule":                {"Arn"},
	"AWS::IAM::Policy":                 {"Id"},
	"AWS::IAM::Role":                   {"Arn", "RoleId"},
	"AWS::KMS::Key":                    {"Arn", "KeyId"},
	"AWS::Lambda::Alias":               {"AliasArn"},
	"AWS::Lambda::EventInvokeConfig":   {},
	"AWS::Lambda::Function":            {"Arn", "SnapStartResponse", "SnapStartResponse.ApplyOn", "SnapStartResponse.OptimizationStatus"},
	"AWS::Lambda::Permission":          {"Id"},
	"AWS::Lambda::Version":             {"FunctionArn", "Id", "Version"},
	"AWS::Logs::LogGroup":              {"Arn"},
	"AWS::SNS::Topic":                  {"TopicArn", "TopicName"},
	"AWS::SQS::Queue":                  {"Arn", "QueueName", "QueueUrl"},
	"AWS::SQS::QueuePolicy":            {"Id"},
	"AWS::SecretsManager::Secret":      {"Id"},
	"AWS::StepFunctions::StateMachine": {"Arn", "Name", "StateMachineRevisionId"},
	"AWS::WAFv2::WebACL":               {"Arn", "Capacity", "Id", "LabelNamespace"},
	"AWS::WAFv2::WebACLAssociation":    {},
}

// anyAttribute reports whether a type takes any attribute: a custom
// resource returns whatever its provider sends.
func anyAttribute(typ string) bool {
	return typ == "AWS::CloudFormation::CustomResource" || strings.HasPrefix(typ, "Custom::")
}

// attrOK reports whether typ, a type of the attributes table, has attr.
func attrOK(typ, attr string) bool {
	return slices.Contains(attributes[typ], attr)
}

// UncheckedTypes returns, sorted, the resource types of tpl whose
// Fn::GetAtt attributes Check does not know and so does not check.
// Custom resources, which take any attribute, are not among them.
func UncheckedTypes(tpl map[string]any) []string {
	res, _ := tpl["Resources"].(map[string]any)
	var out []string
	for _, r := range res {
		body, _ := r.(map[string]any)
		typ, _ := body["Type"].(string)
		if typ == "" || anyAttribute(typ) {
			continue
		}
		if _, known := attributes[typ]; !known {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
