// Package doccheck keeps the docs' checkable claims true: the parameter
// table of docs/deploy.md is generated from template.yaml (ParameterTable,
// `make docs-parameters`), CONTRIBUTING.md's licence tables from the
// bootstraps (internal/licences, `make docs-licences`), and its tests
// check that every make target, port, stage name, relative link, stack
// output, index and cmd/seed example the docs name exists or is accepted,
// and that the tool versions and the CI workflow agree with the docs.
package doccheck

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Markers delimit the generated table in a Markdown page.
const (
	BeginMarker = "<!-- parameters:begin (generated from template.yaml by `make docs-parameters`; do not edit) -->"
	EndMarker   = "<!-- parameters:end -->"
)

// ParameterTable is the Markdown table of the template's parameters, in
// the template's order: name, default, allowed values or range, and
// description.
func ParameterTable(templatePath string) (string, error) {
	data, err := os.ReadFile(templatePath)
	if err != nil {
		return "", fmt.Errorf("doccheck: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("doccheck: %s: %w", templatePath, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", fmt.Errorf("doccheck: %s is not a mapping", templatePath)
	}
	params := value(doc.Content[0], "Parameters")
	if params == nil || params.Kind != yaml.MappingNode {
		return "", fmt.Errorf("doccheck: %s has no Parameters mapping", templatePath)
	}
	var b strings.Builder
	b.WriteString("| parameter | default | allowed | description |\n|---|---|---|---|\n")
	for i := 0; i+1 < len(params.Content); i += 2 {
		name, p := params.Content[i].Value, params.Content[i+1]
		def := "(none)"
		if d := value(p, "Default"); d != nil {
			def = "`" + d.Value + "`"
			if d.Value == "" {
				def = "empty"
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, def, allowed(p), cell(scalar(p, "Description")))
	}
	return b.String(), nil
}

// allowed describes a parameter's allowed values, range or pattern.
func allowed(p *yaml.Node) string {
	if v := value(p, "AllowedValues"); v != nil && v.Kind == yaml.SequenceNode {
		vals := make([]string, len(v.Content))
		for i, c := range v.Content {
			vals[i] = "`" + c.Value + "`"
		}
		return strings.Join(vals, ", ")
	}
	lo, hi := scalar(p, "MinValue"), scalar(p, "MaxValue")
	switch {
	case lo != "" && hi != "":
		return lo + " to " + hi
	case lo != "":
		return "≥ " + lo
	case hi != "":
		return "≤ " + hi
	}
	if pat := scalar(p, "AllowedPattern"); pat != "" {
		return "`" + strings.ReplaceAll(pat, "|", `\|`) + "`"
	}
	typ := scalar(p, "Type")
	if typ == "String" {
		return "any string"
	}
	return typ
}

// cell makes s fit a Markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// value is the value of key in mapping m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalar is the scalar value of key in m, or "".
func scalar(m *yaml.Node, key string) string {
	if v := value(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// Splice replaces what lies between the markers in page with table. It
// fails when the markers are missing or out of order.
func Splice(page, table string) (string, error) {
	i := strings.Index(page, BeginMarker)
	j := strings.Index(page, EndMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("doccheck: no %q ... %q section", BeginMarker, EndMarker)
	}
	return page[:i+len(BeginMarker)] + "\n" + table + page[j:], nil
}
