// Package deployparams composes an environment's deploy parameters: the
// parameter_overrides of its [ENV.deploy.parameters] in samconfig.toml,
// with values given on the command line added or replacing them, checked
// against the template's parameters and Rules.
package deployparams

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/exactlyonce/transfers/internal/cfn"
)

// Parse reads sam's "K=V K2=V2" parameter_overrides. A value may be
// double-quoted to hold spaces.
func Parse(s string) (map[string]string, []string, error) {
	out := map[string]string{}
	var order []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \"") {
			return nil, nil, fmt.Errorf("parameter overrides: %q is not KEY=VALUE", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, nil, fmt.Errorf("parameter overrides: the value of %s has no closing quote", k)
			}
			v, s = rest[1:1+end], rest[2+end:]
		} else {
			v, s, _ = strings.Cut(rest, " ")
		}
		if _, seen := out[k]; !seen {
			order = append(order, k)
		}
		out[k] = v
	}
	return out, order, nil
}

// Format writes overrides back in sam's syntax, in order, quoting values
// that hold a space.
func Format(values map[string]string, order []string) string {
	parts := make([]string, 0, len(order))
	for _, k := range order {
		v := values[k]
		if strings.ContainsAny(v, " ") {
			v = `"` + v + `"`
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// Overrides returns env's parameter overrides from the SAM configuration
// at configPath with extra (KEY=VALUE) added or replacing, after checking
// that the template at templatePath declares each key, accepts each value
// and that its Rules hold for the result.
func Overrides(configPath, templatePath, env string, extra []string) (string, error) {
	var cfg map[string]map[string]map[string]struct {
		ParameterOverrides string `toml:"parameter_overrides"`
	}
	if _, err := toml.DecodeFile(configPath, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", configPath, err)
	}
	section, ok := cfg[env]["deploy"]["parameters"]
	if !ok {
		return "", fmt.Errorf("%s has no [%s.deploy.parameters]", configPath, env)
	}
	values, order, err := Parse(section.ParameterOverrides)
	if err != nil {
		return "", fmt.Errorf("[%s.deploy.parameters]: %w", env, err)
	}
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", fmt.Errorf("%q is not KEY=VALUE", kv)
		}
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
		values[k] = v
	}
	tpl, err := cfn.Load(templatePath)
	if err != nil {
		return "", err
	}
	for _, k := range order {
		if _, ok := tpl.Parameters[k]; !ok {
			return "", fmt.Errorf("%s declares no parameter %s", templatePath, k)
		}
	}
	r, err := cfn.NewResolver(tpl, cfn.Env{Parameters: values})
	if err != nil {
		return "", err
	}
	if err := r.CheckRules(); err != nil {
		return "", fmt.Errorf("environment %s: %w", env, err)
	}
	return Format(values, order), nil
}
