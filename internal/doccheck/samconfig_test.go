package doccheck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/exactlyonce/transfers/internal/cfn"
)

// TestSAMConfig: samconfig.toml's environments are consistent with each
// other and with the template: every overridden parameter exists, every
// build runs the Makefile's recipes in source, every deploy has the same
// changeset settings, prod shifts traffic with a canary and dev at once.
func TestSAMConfig(t *testing.T) {
	var cfg map[string]any
	if _, err := toml.DecodeFile(filepath.Join(root, "samconfig.toml"), &cfg); err != nil {
		t.Fatal(err)
	}
	tpl, err := cfn.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	section := func(env, cmd string) map[string]any {
		e, _ := cfg[env].(map[string]any)
		c, _ := e[cmd].(map[string]any)
		p, _ := c["parameters"].(map[string]any)
		return p
	}
	wantDeployment := map[string]string{"default": "AllAtOnce", "dev": "AllAtOnce", "prod": "Canary10Percent5Minutes"}
	for env, deployment := range wantDeployment {
		t.Run(env, func(t *testing.T) {
			build := section(env, "build")
			if build["build_in_source"] != true {
				t.Errorf("[%s.build.parameters] build_in_source = %v, want true (the Makefile's recipes, as make build)", env, build["build_in_source"])
			}
			deploy := section(env, "deploy")
			if deploy == nil {
				t.Fatalf("no [%s.deploy.parameters]", env)
			}
			if deploy["fail_on_empty_changeset"] != false {
				t.Errorf("[%s.deploy.parameters] fail_on_empty_changeset = %v, want false", env, deploy["fail_on_empty_changeset"])
			}
			for _, cmd := range []string{"deploy", "sync"} {
				p := section(env, cmd)
				if p == nil {
					continue
				}
				overrides, _ := p["parameter_overrides"].(string)
				got := map[string]string{}
				for _, kv := range strings.Fields(overrides) {
					k, v, _ := strings.Cut(kv, "=")
					got[k] = v
					if _, ok := tpl.Parameters[k]; !ok {
						t.Errorf("[%s.%s.parameters] overrides %s, which template.yaml does not declare", env, cmd, k)
					}
				}
				if got["DeploymentType"] != deployment {
					t.Errorf("[%s.%s.parameters] DeploymentType=%q, want %q", env, cmd, got["DeploymentType"], deployment)
				}
			}
		})
	}
	if section("prod", "sync") != nil {
		t.Error("samconfig.toml has a [prod.sync.parameters]: sam sync must never target prod")
	}
}
