package cfn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
)

func TestCheckRules(t *testing.T) {
	const tpl = `
Parameters:
  Mode: {Type: String, Default: fast}
  Topic: {Type: String, Default: ""}
Rules:
  SlowNeedsTopic:
    RuleCondition: !Equals [!Ref Mode, slow]
    Assertions:
      - Assert: !Not [!Equals [!Ref Topic, ""]]
        AssertDescription: slow needs a topic
  Always:
    Assertions:
      - Assert: !Or [!Equals [!Ref Mode, fast], !Equals [!Ref Mode, slow]]
        AssertDescription: fast or slow
Resources:
  Q: {Type: AWS::SQS::Queue}
`
	parsed, err := cfn.Parse("rules.yaml", []byte(tpl))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		params map[string]string
		fails  string
	}{
		{"the condition does not hold", nil, ""},
		{"the condition holds and the assertion too", map[string]string{"Mode": "slow", "Topic": "t"}, ""},
		{"the condition holds, the assertion does not", map[string]string{"Mode": "slow"}, "rule SlowNeedsTopic: slow needs a topic"},
		{"a rule without a condition", map[string]string{"Mode": "other"}, "rule Always: fast or slow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := cfn.NewResolver(parsed, cfn.Env{Parameters: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			err = r.CheckRules()
			if tc.fails == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, cfn.ErrRuleFailed) || !strings.Contains(err.Error(), tc.fails) {
				t.Fatalf("error %v, want ErrRuleFailed with %q", err, tc.fails)
			}
		})
	}
}
