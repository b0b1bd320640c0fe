package cfn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
)

const secretTemplate = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Key:
    Type: AWS::SecretsManager::Secret
    Properties:
      GenerateSecretString: {PasswordLength: 64}
  Given:
    Type: AWS::SecretsManager::Secret
    Properties:
      SecretString: chosen by the operator
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn/
      Handler: bootstrap
      Runtime: provided.al2023
      Environment:
        Variables:
          KEY: !Sub "{{resolve:secretsmanager:${Key}:SecretString}}"
`

// A dynamic reference to a secret the template generates resolves, in
// every function and every resolution, to the one value that stands in
// for it; any other dynamic reference is unsupported locally.
func TestGeneratedSecretsResolve(t *testing.T) {
	tpl, err := cfn.Parse("t.yaml", []byte(secretTemplate))
	if err != nil {
		t.Fatal(err)
	}
	env := cfn.Env{Region: "us-east-1", AccountID: "123456789012"}
	first, err := tpl.Functions(env)
	if err != nil {
		t.Fatal(err)
	}
	again, err := tpl.Functions(env)
	if err != nil {
		t.Fatal(err)
	}
	key := first[0].Environment["KEY"]
	if len(key) < 32 || strings.Contains(key, "resolve") || again[0].Environment["KEY"] != key {
		t.Fatalf("KEY = %q, then %q: want one generated value of 32 bytes or more", key, again[0].Environment["KEY"])
	}

	given, err := cfn.Parse("t.yaml", []byte(strings.Replace(secretTemplate, "${Key}", "${Given}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := given.Functions(env); !errors.Is(err, cfn.ErrUnsupported) {
		t.Fatalf("a reference to a secret the template does not generate: %v, want ErrUnsupported", err)
	}
}
