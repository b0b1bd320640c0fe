// Package cfncheck reports what CloudFormation refuses in a plain
// CloudFormation JSON template (for example the output of the SAM
// translator) before it orders a stack: resources whose dependencies form
// a cycle ("Circular dependency between resources: [...]"), references to
// resources, parameters, conditions, mappings or attributes that do not
// exist, JSON null values ("'null' values are not allowed in templates"),
// Fn::Sub strings it cannot parse, and a structure it does not accept.
//
// A dependency is every Ref, Fn::GetAtt and Fn::Sub variable naming a
// resource anywhere in a resource (Properties, Metadata, UpdatePolicy,
// CreationPolicy, ...), and every DependsOn. A resource's Condition is
// not a dependency, and since conditions are not evaluated, every resource
// counts as present.
package cfncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Problem kinds.
const (
	KindCycle            = "cycle"
	KindMissingReference = "missing-reference"
	KindMissingAttribute = "missing-attribute"
	KindMissingCondition = "missing-condition"
	KindNull             = "null"
	KindInvalid          = "invalid"
)

// Problem is one thing CloudFormation refuses in a template.
type Problem struct {
	// Kind is one of the Kind constants.
	Kind string
	// Resource is the logical ID of the resource the problem is in, or
	// "Outputs.X", "Conditions.X", "Parameters.X", "Mappings.X" for
	// the other sections' entries, "" when it is template-wide. For a
	// cycle it is the resource the reported cycle starts at.
	Resource string
	// Path is the JSON path of the value, such as
	// "Resources.Fn.Properties.Environment.Variables.ARN" ("" when
	// template-wide). Array elements are written [i], and keys that are
	// empty or hold a '.', '[', ']' or '"' as ["key"]. For a cycle it is
	// where the cycle's first dependency is.
	Path string
	// Message says what is wrong. A cycle's names every resource of its
	// strongly connected component, then one cycle through it with, for
	// each dependency, the intrinsic (Ref, Fn::GetAtt, Fn::Sub or
	// DependsOn) that makes it and where.
	Message string
}

// String returns "kind path: message" (the resource, or "template", when
// there is no path).
func (p Problem) String() string {
	where := p.Path
	if where == "" {
		where = p.Resource
	}
	if where == "" {
		where = "template"
	}
	return p.Kind + " " + where + ": " + p.Message
}

// pseudo are CloudFormation's pseudo parameters.
var pseudo = map[string]bool{
	"AWS::AccountId":        true,
	"AWS::NotificationARNs": true,
	"AWS::NoValue":          true,
	"AWS::Partition":        true,
	"AWS::Region":           true,
	"AWS::StackId":          true,
	"AWS::StackName":        true,
	"AWS::URLSuffix":        true,
}

// sections are the top-level keys CloudFormation accepts.
var sections = map[string]bool{
	"AWSTemplateFormatVersion": true,
	"Conditions":               true,
	"Description":              true,
	"Hooks":                    true,
	"Mappings":                 true,
	"Metadata":                 true,
	"Outputs":                  true,
	"Parameters":               true,
	"Resources":                true,
	"Rules":                    true,
	"Transform":                true,
}

// CheckFile reads the JSON template at path and checks it. The error is
// for a file that cannot be read; a file that is not a JSON object is a
// Problem of Kind "invalid".
func CheckFile(path string) ([]Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tpl, probs := Parse(data)
	if tpl == nil {
		return probs, nil
	}
	return Check(tpl), nil
}

// Parse decodes a JSON template. When data is not one JSON object it
// returns nil and a Problem of Kind "invalid" saying why.
func Parse(data []byte) (map[string]any, []Problem) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty document")
		}
		return nil, []Problem{{Kind: KindInvalid, Message: "not JSON: " + err.Error()}}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, []Problem{{Kind: KindInvalid, Message: fmt.Sprintf("not one JSON value: data after offset %d", end)}}
	}
	tpl, ok := v.(map[string]any)
	if !ok {
		return nil, []Problem{{Kind: KindInvalid, Message: "the template is not a JSON object"}}
	}
	return tpl, nil
}

// Summary is the line for a template without problems: "N resources, no
// cycle, no missing reference, no null".
func Summary(tpl map[string]any) string {
	res, _ := tpl["Resources"].(map[string]any)
	noun := "resources"
	if len(res) == 1 {
		noun = "resource"
	}
	return fmt.Sprintf("%d %s, no cycle, no missing reference, no null", len(res), noun)
}

// Check checks a decoded JSON template and returns its problems ordered
// as CloudFormation validates: the template's structure and nulls first,
// then references, conditions and attributes, then cycles; within a kind
// by path. It does not panic on any input.
func Check(tpl map[string]any) []Problem {
	c := &checker{
		resources: map[string]string{},
		params:    map[string]bool{},
		conds:     map[string]bool{},
		mappings:  map[string]bool{},
		edges:     map[string][]edge{},
		condEdges: map[string][]edge{},
	}
	c.nulls(tpl, "", "")
	c.structure(tpl)
	c.walkConditions(tpl["Conditions"])
	c.walkResources(tpl["Resources"])
	c.walkOutputs(tpl["Outputs"])
	c.cycles("resources", c.edges, func(id string) string { return id })
	c.cycles("conditions", c.condEdges, func(id string) string { return "Conditions." + id })
	return sortProblems(c.problems)
}

type checker struct {
	resources map[string]string // logical ID -> Type ("" when it has none)
	params    map[string]bool
	conds     map[string]bool
	mappings  map[string]bool
	edges     map[string][]edge // resource -> resources it depends on
	condEdges map[string][]edge // condition -> conditions it names
	problems  []Problem
}

// edge is a dependency on to, made by via (such as "Ref" or
// "Fn::GetAtt X.Arn") at path.
type edge struct {
	to, via, path string
}

func (c *checker) add(kind, owner, path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Kind: kind, Resource: owner, Path: path, Message: fmt.Sprintf(format, args...)})
}

// section is the part of the template a value is in.
type section int

const (
	inOther section = iota
	inConditions
	inResources
	inOutputs
)

// scope is what a value's references are checked against.
type scope struct {
	sec   section
	owner string // Problem.Resource
	from  string // the resource or condition that depends on what is named
	// condFn is set inside Fn::And, Fn::Or and Fn::Not and in the
	// Conditions section, where {"Condition": "Name"} names a condition.
	condFn bool
}

// nulls reports every null, with the owner its section gives it.
func (c *checker) nulls(v any, path, owner string) {
	switch v := v.(type) {
	case nil:
		c.add(KindNull, owner, path, "'null' values are not allowed in templates")
	case map[string]any:
		for _, k := range sortedKeys(v) {
			o := owner
			switch path {
			case "Resources":
				o = k
			case "Outputs", "Conditions", "Parameters", "Mappings":
				o = path + "." + k
			}
			c.nulls(v[k], child(path, k), o)
		}
	case []any:
		for i, e := range v {
			c.nulls(e, index(path, i), owner)
		}
	}
}

// structure checks the sections' shapes and collects the names of the
// resources, parameters, conditions and mappings.
func (c *checker) structure(tpl map[string]any) {
	for _, k := range sortedKeys(tpl) {
		if !sections[k] {
			c.add(KindInvalid, "", k, "invalid template property %q: the top-level sections are %s", k, strings.Join(sortedKeys(sections), ", "))
		}
	}
	if v, ok := tpl["AWSTemplateFormatVersion"]; ok && v != nil && v != "2010-09-09" {
		c.add(KindInvalid, "", "AWSTemplateFormatVersion", "AWSTemplateFormatVersion must be \"2010-09-09\"")
	}
	if v, ok := tpl["Description"]; ok && v != nil {
		if _, isStr := v.(string); !isStr {
			c.add(KindInvalid, "", "Description", "Description must be a string")
		}
	}

	if params, ok := c.object(tpl, "Parameters"); ok {
		for _, id := range sortedKeys(params) {
			owner, path := "Parameters."+id, child("Parameters", id)
			c.logicalID(id, owner, path, "parameter")
			c.params[id] = true
			switch p := params[id].(type) {
			case nil:
			case map[string]any:
				switch t := p["Type"].(type) {
				case string:
					if t == "" {
						c.add(KindInvalid, owner, child(path, "Type"), "parameter %s has an empty Type", id)
					}
				case nil:
					if !hasKey(p, "Type") {
						c.add(KindInvalid, owner, path, "parameter %s has no Type", id)
					}
				default:
					c.add(KindInvalid, owner, child(path, "Type"), "parameter %s: Type must be a string", id)
				}
			default:
				c.add(KindInvalid, owner, path, "parameter %s is not an object", id)
			}
		}
	}
	if conds, ok := c.object(tpl, "Conditions"); ok {
		for id := range conds {
			c.conds[id] = true
		}
	}
	if maps, ok := c.object(tpl, "Mappings"); ok {
		for id := range maps {
			c.mappings[id] = true
		}
	}

	res, ok := tpl["Resources"]
	switch r := res.(type) {
	case nil:
		if !ok {
			c.add(KindInvalid, "", "", "the template has no Resources section")
		}
	case map[string]any:
		if len(r) == 0 {
			c.add(KindInvalid, "", "Resources", "at least one resource must be defined")
		}
		for _, id := range sortedKeys(r) {
			path := child("Resources", id)
			c.logicalID(id, id, path, "resource")
			if c.params[id] {
				c.add(KindInvalid, id, path, "%s is both a parameter and a resource: logical IDs must be unique", id)
			}
			typ := ""
			switch body := r[id].(type) {
			case nil:
			case map[string]any:
				switch t := body["Type"].(type) {
				case string:
					if t == "" {
						c.add(KindInvalid, id, child(path, "Type"), "resource %s has an empty Type", id)
					}
					typ = t
				case nil:
					if !hasKey(body, "Type") {
						c.add(KindInvalid, id, path, "resource %s has no Type", id)
					}
				default:
					c.add(KindInvalid, id, child(path, "Type"), "resource %s: Type must be a string", id)
				}
				if p, has := body["Properties"]; has && p != nil {
					if _, isObj := p.(map[string]any); !isObj {
						c.add(KindInvalid, id, child(path, "Properties"), "resource %s: Properties must be an object", id)
					}
				}
			default:
				c.add(KindInvalid, id, path, "resource %s is not an object", id)
			}
			c.resources[id] = typ
		}
	default:
		c.add(KindInvalid, "", "Resources", "Resources must be an object")
	}
	if outs, ok := c.object(tpl, "Outputs"); ok {
		for _, id := range sortedKeys(outs) {
			c.logicalID(id, "Outputs."+id, child("Outputs", id), "output")
		}
	}
}

// object returns the section key of tpl when it is an object, reporting
// one that is something else.
func (c *checker) object(tpl map[string]any, key string) (map[string]any, bool) {
	switch v := tpl[key].(type) {
	case nil:
		return nil, false
	case map[string]any:
		return v, true
	default:
		c.add(KindInvalid, "", key, "%s must be an object", key)
		return nil, false
	}
}

// logicalID reports an ID that is not alphanumeric.
func (c *checker) logicalID(id, owner, path, what string) {
	ok := id != ""
	for _, r := range id {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			ok = false
			break
		}
	}
	if !ok {
		c.add(KindInvalid, owner, path, "%s logical ID %q must be alphanumeric (A-Za-z0-9)", what, id)
	}
}

func (c *checker) walkConditions(v any) {
	conds, _ := v.(map[string]any)
	for _, id := range sortedKeys(conds) {
		path := child("Conditions", id)
		sc := scope{sec: inConditions, owner: "Conditions." + id, from: id, condFn: true}
		switch body := conds[id].(type) {
		case nil:
		case map[string]any:
			c.walk(body, path, sc)
		default:
			c.add(KindInvalid, sc.owner, path, "condition %s must be a condition function (Fn::And, Fn::Equals, Fn::If, Fn::Not, Fn::Or)", id)
		}
	}
}

func (c *checker) walkResources(v any) {
	res, _ := v.(map[string]any)
	for _, id := range sortedKeys(res) {
		body, ok := res[id].(map[string]any)
		if !ok {
			continue
		}
		path := child("Resources", id)
		sc := scope{sec: inResources, owner: id, from: id}
		for _, k := range sortedKeys(body) {
			p := child(path, k)
			switch k {
			case "Type":
			case "Condition":
				c.conditionName(body[k], "Condition", id, p)
			case "DependsOn":
				c.dependsOn(id, body[k], p)
			default:
				c.walk(body[k], p, sc)
			}
		}
	}
}

func (c *checker) walkOutputs(v any) {
	outs, _ := v.(map[string]any)
	for _, id := range sortedKeys(outs) {
		owner, path := "Outputs."+id, child("Outputs", id)
		switch body := outs[id].(type) {
		case nil:
		case map[string]any:
			if !hasKey(body, "Value") {
				c.add(KindInvalid, owner, path, "output %s has no Value", id)
			}
			sc := scope{sec: inOutputs, owner: owner}
			for _, k := range sortedKeys(body) {
				if k == "Condition" {
					c.conditionName(body[k], "Condition", owner, child(path, k))
					continue
				}
				c.walk(body[k], child(path, k), sc)
			}
		default:
			c.add(KindInvalid, owner, path, "output %s is not an object", id)
		}
	}
}

// dependsOn checks a resource's DependsOn and adds its dependencies.
func (c *checker) dependsOn(id string, v any, path string) {
	var names []string
	var paths []string
	switch v := v.(type) {
	case nil:
		return
	case string:
		names, paths = []string{v}, []string{path}
	case []any:
		for i, e := range v {
			switch e := e.(type) {
			case nil:
			case string:
				names = append(names, e)
				paths = append(paths, index(path, i))
			default:
				c.add(KindInvalid, id, index(path, i), "DependsOn takes logical IDs (strings)")
			}
		}
	default:
		c.add(KindInvalid, id, path, "DependsOn must be a logical ID or a list of them")
		return
	}
	for i, name := range names {
		switch _, isRes := c.resources[name]; {
		case isRes:
			c.edges[id] = append(c.edges[id], edge{to: name, via: "DependsOn", path: paths[i]})
		case c.params[name]:
			c.add(KindMissingReference, id, paths[i], "DependsOn %s: %s is a parameter; DependsOn names resources", name, name)
		default:
			c.add(KindMissingReference, id, paths[i], "DependsOn %s: no resource named %s", name, name)
		}
	}
}

// conditionName checks a Condition attribute (of a resource or output).
func (c *checker) conditionName(v any, how, owner, path string) {
	switch v := v.(type) {
	case nil:
	case string:
		if !c.conds[v] {
			c.add(KindMissingCondition, owner, path, "%s %s: no condition named %s in Conditions", how, v, v)
		}
	default:
		c.add(KindInvalid, owner, path, "%s must be the name of a condition (a string)", how)
	}
}

// walk visits v, checking the intrinsic functions in it.
func (c *checker) walk(v any, path string, sc scope) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				if c.intrinsic(k, arg, path, sc) {
					return
				}
			}
		}
		inner := sc
		inner.condFn = sc.sec == inConditions
		for _, k := range sortedKeys(v) {
			c.walk(v[k], child(path, k), inner)
		}
	case []any:
		for i, e := range v {
			c.walk(e, index(path, i), sc)
		}
	}
}

// intrinsic checks the one-key object {k: arg} at path when k is an
// intrinsic function it knows, and reports whether it did.
func (c *checker) intrinsic(k string, arg any, path string, sc scope) bool {
	argPath := child(path, k)
	plain := sc
	plain.condFn = sc.sec == inConditions
	switch k {
	case "Ref":
		switch a := arg.(type) {
		case nil:
		case string:
			c.name(a, "", false, "Ref "+a, path, sc)
		default:
			c.add(KindInvalid, sc.owner, path, "every Ref must have a single string value")
		}
	case "Fn::GetAtt":
		c.getAtt(arg, path, sc)
	case "Fn::Sub":
		c.sub(arg, path, sc)
	case "Fn::If":
		args, ok := arg.([]any)
		if !ok || len(args) != 3 {
			if arg != nil {
				c.add(KindInvalid, sc.owner, path, "Fn::If takes [condition name, value if true, value if false]")
			}
			c.walk(arg, argPath, plain)
			return true
		}
		c.condRef(args[0], "Fn::If", path, sc)
		c.walk(args[1], index(argPath, 1), plain)
		c.walk(args[2], index(argPath, 2), plain)
	case "Fn::And", "Fn::Or", "Fn::Not":
		inner := sc
		inner.condFn = true
		c.walk(arg, argPath, inner)
	case "Condition":
		if !sc.condFn {
			return false
		}
		c.condRef(arg, "Condition", path, sc)
	case "Fn::FindInMap":
		if args, ok := arg.([]any); ok && len(args) >= 3 {
			if m, isStr := args[0].(string); isStr && !c.mappings[m] {
				c.add(KindMissingReference, sc.owner, path, "Fn::FindInMap %s: no mapping named %s in Mappings", m, m)
			}
		} else if arg != nil {
			c.add(KindInvalid, sc.owner, path, "Fn::FindInMap takes [map name, top-level key, second-level key]")
		}
		c.walk(arg, argPath, plain)
	default:
		return false
	}
	return true
}

// condRef checks a condition named by Fn::If or the Condition function,
// and in the Conditions section adds the dependency between conditions.
func (c *checker) condRef(v any, how, path string, sc scope) {
	switch name := v.(type) {
	case nil:
	case string:
		if !c.conds[name] {
			c.add(KindMissingCondition, sc.owner, path, "%s %s: no condition named %s in Conditions", how, name, name)
			return
		}
		if sc.sec == inConditions {
			c.condEdges[sc.from] = append(c.condEdges[sc.from], edge{to: name, via: how, path: path})
		}
	default:
		c.add(KindInvalid, sc.owner, path, "%s takes the name of a condition (a string)", how)
	}
}

func (c *checker) getAtt(arg any, path string, sc scope) {
	const usage = `Fn::GetAtt takes [logical ID, attribute] or "logicalID.attribute"`
	switch a := arg.(type) {
	case nil:
	case string:
		id, attr, ok := strings.Cut(a, ".")
		if !ok || id == "" || attr == "" {
			c.add(KindInvalid, sc.owner, path, "%s, not %q", usage, a)
			return
		}
		c.name(id, attr, true, "Fn::GetAtt "+a, path, sc)
	case []any:
		if len(a) != 2 {
			c.add(KindInvalid, sc.owner, path, "%s", usage)
			c.walk(a, child(path, "Fn::GetAtt"), sc)
			return
		}
		id, ok := a[0].(string)
		if !ok {
			if a[0] != nil {
				c.add(KindInvalid, sc.owner, path, "%s: the logical ID must be a string", usage)
			}
			c.walk(a[1], index(child(path, "Fn::GetAtt"), 1), sc)
			return
		}
		switch attr := a[1].(type) {
		case string:
			c.name(id, attr, true, "Fn::GetAtt "+id+"."+attr, path, sc)
		case nil:
			c.name(id, "", true, "Fn::GetAtt "+id, path, sc)
		default:
			// An attribute given by an intrinsic function is not known
			// until the stack is ordered; the resource still is.
			c.name(id, "", true, "Fn::GetAtt "+id, path, sc)
			c.walk(attr, index(child(path, "Fn::GetAtt"), 1), sc)
		}
	default:
		c.add(KindInvalid, sc.owner, path, "%s", usage)
	}
}

func (c *checker) sub(arg any, path string, sc scope) {
	const usage = "Fn::Sub takes a string or [string, {variable: value}]"
	var s string
	var vars map[string]any
	switch a := arg.(type) {
	case nil:
		return
	case string:
		s = a
	case []any:
		if len(a) != 2 {
			c.add(KindInvalid, sc.owner, path, "%s", usage)
			c.walk(a, child(path, "Fn::Sub"), sc)
			return
		}
		str, ok := a[0].(string)
		if !ok {
			if a[0] != nil {
				c.add(KindInvalid, sc.owner, path, "%s: the first element must be a string", usage)
			}
			c.walk(a[1], index(child(path, "Fn::Sub"), 1), sc)
			return
		}
		s = str
		switch m := a[1].(type) {
		case nil:
		case map[string]any:
			vars = m
			varsPath := index(child(path, "Fn::Sub"), 1)
			for _, k := range sortedKeys(m) {
				c.walk(m[k], child(varsPath, k), sc)
			}
		default:
			c.add(KindInvalid, sc.owner, path, "%s: the second element must be an object", usage)
		}
	default:
		c.add(KindInvalid, sc.owner, path, "%s", usage)
		return
	}
	names, errs := subVariables(s)
	for _, e := range errs {
		c.add(KindInvalid, sc.owner, path, "Fn::Sub: %s", e)
	}
	for _, n := range names {
		if _, local := vars[n]; local {
			continue
		}
		how := "Fn::Sub ${" + n + "}"
		if id, attr, dotted := strings.Cut(n, "."); dotted {
			c.name(id, attr, true, how, path, sc)
		} else {
			c.name(n, "", false, how, path, sc)
		}
	}
}

// subVariables returns the variables of an Fn::Sub string in order, and
// what is wrong with its syntax. "${!x}" is the literal "${x}".
func subVariables(s string) (names, errs []string) {
	for i := 0; ; {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			return names, errs
		}
		j += i
		if strings.HasPrefix(s[j+2:], "!") {
			i = j + 3
			continue
		}
		k := strings.IndexByte(s[j+2:], '}')
		if k < 0 {
			errs = append(errs, fmt.Sprintf("unclosed ${ at offset %d", j))
			return names, errs
		}
		name := s[j+2 : j+2+k]
		if validSubName(name) {
			names = append(names, name)
		} else {
			errs = append(errs, fmt.Sprintf("variable ${%s}: variable names must contain only alphanumeric characters, underscores, periods, and colons", name))
		}
		i = j + 2 + k + 1
	}
}

func validSubName(n string) bool {
	if n == "" {
		return false
	}
	for _, r := range n {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == ':') {
			return false
		}
	}
	return true
}

// name checks a name given to Ref (hasAttr false) or to Fn::GetAtt (hasAttr
// true; attr "" when it is not known), or in an Fn::Sub variable, and adds
// the dependency on a resource. how says which intrinsic names it.
func (c *checker) name(id, attr string, hasAttr bool, how, path string, sc scope) {
	typ, isRes := c.resources[id]
	if !hasAttr && (pseudo[id] || c.params[id]) {
		return
	}
	if isRes && sc.sec == inConditions {
		c.add(KindInvalid, sc.owner, path, "%s: conditions cannot reference resources, only parameters and pseudo parameters", how)
		return
	}
	switch {
	case isRes:
		if sc.from != "" {
			c.edges[sc.from] = append(c.edges[sc.from], edge{to: id, via: how, path: path})
		}
		if hasAttr && attr != "" {
			c.attribute(id, typ, attr, how, path, sc.owner)
		}
	case hasAttr && (c.params[id] || pseudo[id]):
		c.add(KindMissingReference, sc.owner, path, "%s: %s is a parameter, not a resource with attributes", how, id)
	case hasAttr:
		c.add(KindMissingReference, sc.owner, path, "%s: no resource named %s", how, id)
	case strings.HasPrefix(id, "AWS::"):
		c.add(KindMissingReference, sc.owner, path, "%s: %s is not a pseudo parameter", how, id)
	default:
		c.add(KindMissingReference, sc.owner, path, "%s: no resource, parameter or pseudo parameter named %s", how, id)
	}
}

func (c *checker) attribute(id, typ, attr, how, path, owner string) {
	attrs, known := attributes[typ]
	if !known || attrOK(typ, attr) {
		return
	}
	has := "it has none"
	if len(attrs) > 0 {
		has = "it has " + strings.Join(attrs, ", ")
	}
	c.add(KindMissingAttribute, owner, path, "%s: %s (%s) has no attribute %s; %s", how, id, typ, attr, has)
}

// cycles reports each strongly connected component of more than one node,
// and each node that depends on itself, with one shortest cycle through
// it.
func (c *checker) cycles(what string, g map[string][]edge, owner func(string) string) {
	for _, comp := range components(g) {
		cyc := shortestCycle(g, comp)
		if len(cyc) == 0 {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "circular dependency between %s: [%s]; one cycle: %s", what, strings.Join(comp, ", "), cyc[0].from)
		for _, e := range cyc {
			fmt.Fprintf(&b, " -> %s (%s at %s)", e.to, e.via, e.path)
		}
		c.add(KindCycle, owner(cyc[0].from), cyc[0].path, "%s", b.String())
	}
}

var kindOrder = map[string]int{
	KindInvalid:          0,
	KindNull:             1,
	KindMissingReference: 2,
	KindMissingCondition: 3,
	KindMissingAttribute: 4,
	KindCycle:            5,
}

func sortProblems(ps []Problem) []Problem {
	slices.SortFunc(ps, func(a, b Problem) int {
		if d := kindOrder[a.Kind] - kindOrder[b.Kind]; d != 0 {
			return d
		}
		if d := strings.Compare(a.Path, b.Path); d != 0 {
			return d
		}
		if d := strings.Compare(a.Resource, b.Resource); d != 0 {
			return d
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(ps)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// child is the path of key k of the object at path.
func child(path, k string) string {
	if k == "" || strings.ContainsAny(k, ".[]\"") {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
