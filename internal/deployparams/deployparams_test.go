package deployparams_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/deployparams"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
)

func TestParseAndFormat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		order    []string
		err      string
	}{
		{"plain", "A=1 B=two", map[string]string{"A": "1", "B": "two"}, []string{"A", "B"}, ""},
		{"empty value", "A= B=2", map[string]string{"A": "", "B": "2"}, []string{"A", "B"}, ""},
		{"quoted value", `A="x y" B=2`, map[string]string{"A": "x y", "B": "2"}, []string{"A", "B"}, ""},
		{"a later value wins", "A=1 A=2", map[string]string{"A": "2"}, []string{"A"}, ""},
		{"nothing", "  ", map[string]string{}, nil, ""},
		{"no equals sign", "A", nil, nil, "not KEY=VALUE"},
		{"an unclosed quote", `A="x`, nil, nil, "no closing quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, order, err := deployparams.Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(order, tc.order) {
				t.Fatalf("Parse = %v %v %v, want %v %v", got, order, err, tc.want, tc.order)
			}
			again, _, err := deployparams.Parse(deployparams.Format(got, order))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("Format does not read back: %v %v", again, err)
			}
		})
	}
}

func TestOverrides(t *testing.T) {
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(root, "samconfig.toml")
	template := filepath.Join(root, "template.yaml")
	const topic = "AlarmTopicArn=arn:aws:sns:eu-west-1:123456789012:oncall"
	for _, tc := range []struct {
		name  string
		env   string
		extra []string
		want  string // a substring of the result
		err   error
		msg   string
	}{
		{"prod without a topic is refused by the template's rule", "prod", nil, "", cfn.ErrRuleFailed, "AlarmTopicArn"},
		{"prod with a topic", "prod", []string{topic}, "DeploymentType=Canary10Percent5Minutes " + topic, nil, ""},
		{"dev shifts at once and needs none", "dev", nil, "DeploymentType=AllAtOnce", nil, ""},
		{"a value replaces the configuration's", "dev", []string{"LogLevel=WARN"}, "LogLevel=WARN", nil, ""},
		{"an unknown parameter", "dev", []string{"Nope=1"}, "", nil, "declares no parameter Nope"},
		{"a value the template refuses", "dev", []string{"AlarmTopicArn=not-an-arn"}, "", nil, "AlarmTopicArn"},
		{"an unknown environment", "staging", nil, "", nil, "no [staging.deploy.parameters]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := deployparams.Overrides(config, template, tc.env, tc.extra)
			if tc.err != nil || tc.msg != "" {
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %v, want %v naming %q", err, tc.err, tc.msg)
				}
				return
			}
			if err != nil || !strings.Contains(got, tc.want) {
				t.Fatalf("Overrides = %q, %v; want it to contain %q", got, err, tc.want)
			}
		})
	}
}
