package cfn

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestAutoPublishAlias: a function with AutoPublishAlias (directly or
// from Globals) has the alias SAM generates, "<Function>Alias<name>",
// whose Ref is the function's ARN qualified by the alias; an API
// integration on the alias routes to the function.
func TestAutoPublishAlias(t *testing.T) {
	const doc = `Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    AutoPublishAlias: live
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Handler: bootstrap
      Runtime: provided.al2023
  Other:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: other/
      Handler: bootstrap
      Runtime: provided.al2023
      AutoPublishAlias: canary
Outputs:
  FnAlias:
    Value: !Ref FnAliaslive
  OtherAlias:
    Value: !Sub "${OtherAliascanary}"
  NoAlias:
    Value: !Ref FnAliascanary
`
	tmpl, err := Parse("alias.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResolver(tmpl, Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		output, want string
		wantErr      error
	}{
		{output: "FnAlias", want: "arn:aws:lambda:us-east-1:123456789012:function:Fn:live"},
		{output: "OtherAlias", want: "arn:aws:lambda:us-east-1:123456789012:function:Other:canary"},
		{output: "NoAlias", wantErr: ErrUnresolved},
	} {
		t.Run(tc.output, func(t *testing.T) {
			got, err := r.String(tmpl.Root.Get("Outputs").Get(tc.output).Get("Value"))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %q, %v; want error %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFunctionOfQualifiedURI(t *testing.T) {
	const fn = "arn:aws:lambda:us-east-1:123456789012:function:Fn"
	arns := map[string]string{fn: "Fn"}
	const prefix = "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/"
	for _, tc := range []struct {
		name, uri, want string
		ok              bool
	}{
		{"unqualified", prefix + fn + "/invocations", "Fn", true},
		{"an alias", prefix + fn + ":live/invocations", "Fn", true},
		{"a version", prefix + fn + ":7/invocations", "Fn", true},
		{"another function", prefix + fn + "x:live/invocations", "", false},
		{"not an invocation", prefix + fn, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := functionOfURI(tc.uri, arns)
			if !reflect.DeepEqual([]any{got, ok}, []any{tc.want, tc.ok}) {
				t.Errorf("functionOfURI(%s) = %q, %v; want %q, %v", strings.TrimPrefix(tc.uri, prefix), got, ok, tc.want, tc.ok)
			}
		})
	}
}
