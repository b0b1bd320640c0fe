// Package cfn reads this project's AWS SAM / CloudFormation template, the
// single source of truth for the stack, so the local runtime and the tests
// build their tables, functions, state machines, event rules and API routes
// from the same declarations that are deployed to AWS.
//
// Parse keeps YAML line numbers and normalises short-form intrinsic tags
// (!Ref, !GetAtt, !Sub, ...) and their long forms to one representation.
// A Resolver evaluates intrinsic functions for a local Env. The typed views
// (Tables, Functions, StateMachines, Rules, APIRoutes) apply SAM semantics.
package cfn

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Resource types this package gives a meaning to.
const (
	TypeTable             = "AWS::DynamoDB::Table"
	TypeServerlessFunc    = "AWS::Serverless::Function"
	TypeLambdaFunc        = "AWS::Lambda::Function"
	TypeLambdaAlias       = "AWS::Lambda::Alias"
	TypeServerlessSM      = "AWS::Serverless::StateMachine"
	TypeStepFunctionsSM   = "AWS::StepFunctions::StateMachine"
	TypeServerlessAPI     = "AWS::Serverless::Api"
	TypeRestAPI           = "AWS::ApiGateway::RestApi"
	TypeQueue             = "AWS::SQS::Queue"
	TypeTopic             = "AWS::SNS::Topic"
	TypeEventRule         = "AWS::Events::Rule"
	TypeEventBus          = "AWS::Events::EventBus"
	TypeSchedule          = "AWS::Scheduler::Schedule"
	TypeRole              = "AWS::IAM::Role"
	TypeLogGroup          = "AWS::Logs::LogGroup"
	implicitRestAPIID     = "ServerlessRestApi"
	serverlessTransform   = "AWS::Serverless-2016-10-31"
	implicitRoleIDPostfix = "Role"
)

// Template is a parsed template.
type Template struct {
	// File is the name given to Load or Parse; Dir is its directory, the
	// base of relative CodeUri and DefinitionUri paths.
	File string
	Dir  string
	// Root is the whole document.
	Root *Node

	Transform  []string
	Parameters map[string]*Parameter
	Mappings   *Node
	Conditions map[string]*Node
	// Globals is the SAM Globals section as written. Its values are
	// already merged into Resources.
	Globals *Node
	// Resources by logical ID; ResourceOrder lists them in document order.
	// Resources that SAM creates implicitly and templates may reference
	// (a function's or state machine's "<LogicalId>Role", the
	// "ServerlessRestApi" of Api events without RestApiId) are included
	// with Implicit set.
	Resources     map[string]*Resource
	ResourceOrder []string
	Outputs       map[string]*Output
	OutputOrder   []string

	// aliases are the aliases SAM publishes for functions with
	// AutoPublishAlias, by their generated logical ID
	// ("<Function>Alias<name>").
	aliases map[string]lambdaAlias
}

// lambdaAlias is an alias SAM generates: its function and its name.
type lambdaAlias struct{ function, name string }

// Parameter is an entry of the Parameters section.
type Parameter struct {
	Name          string
	Type          string
	Default       string
	HasDefault    bool
	AllowedValues []string
	// AllowedPattern, when set, must match the whole value (each value of
	// a CommaDelimitedList), as CloudFormation checks it.
	AllowedPattern *regexp.Regexp
	Line           int
}

// Resource is an entry of the Resources section.
type Resource struct {
	LogicalID string
	Type      string
	// Properties, with SAM Globals merged in for AWS::Serverless::*
	// resources. Never nil: an absent section is an empty mapping.
	Properties *Node
	// Condition names the condition that decides whether the resource
	// exists; "" when it always does.
	Condition string
	DependsOn []string
	Line      int
	Implicit  bool
}

// Output is an entry of the Outputs section.
type Output struct {
	Name        string
	Description string
	Value       *Node
	Export      *Node
	Condition   string
	Line        int
}

var (
	topLevelSections = map[string]bool{
		"AWSTemplateFormatVersion": true, "Description": true, "Metadata": true,
		"Parameters": true, "Rules": true, "Mappings": true, "Conditions": true,
		"Transform": true, "Globals": true, "Resources": true, "Outputs": true,
	}
	resourceAttributes = map[string]bool{
		"Type": true, "Properties": true, "Condition": true, "DependsOn": true,
		"Metadata": true, "DeletionPolicy": true, "UpdateReplacePolicy": true,
		"CreationPolicy": true, "UpdatePolicy": true, "Connectors": true,
	}
	// globalsSections maps the SAM Globals sections to the resource type
	// they apply to.
	globalsSections = map[string]string{
		"Function":     TypeServerlessFunc,
		"Api":          TypeServerlessAPI,
		"HttpApi":      "AWS::Serverless::HttpApi",
		"SimpleTable":  "AWS::Serverless::SimpleTable",
		"StateMachine": TypeServerlessSM,
		"LayerVersion": "AWS::Serverless::LayerVersion",
	}
)

// Load reads and parses a template file.
func Load(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cfn: read template: %w", err)
	}
	return Parse(path, data)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse parses template text; name is used in errors and to find files
// referenced relative to the template.
func Parse(name string, data []byte) (*Template, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		line := 0
		msg := err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %s", ErrSyntax, msg)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: name, Line: extra.Line, Err: fmt.Errorf("%w: more than one YAML document", ErrSyntax)}
	}
	c := &converter{file: name}
	root, err := c.convert(&doc, "")
	if err != nil {
		return nil, err
	}
	t := &Template{
		File:       name,
		Dir:        filepath.Dir(name),
		Root:       root,
		Parameters: map[string]*Parameter{},
		Conditions: map[string]*Node{},
		Resources:  map[string]*Resource{},
		Outputs:    map[string]*Output{},
		aliases:    map[string]lambdaAlias{},
	}
	if err := t.load(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Template) errAt(n *Node, sentinel error, format string, args ...any) error {
	e := &Error{File: t.File, Err: sentinel}
	if n != nil {
		e.Line, e.Path = n.Line, n.Path
	}
	if format != "" {
		e.Err = fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
	}
	return e
}

func (t *Template) load() error {
	root := t.Root
	if root.Kind != KindMapping {
		return t.errAt(root, ErrInvalid, "a template must be a mapping, not a %s", root.Kind)
	}
	for _, k := range root.Keys {
		if !topLevelSections[k] {
			return t.errAt(root.Get(k), ErrInvalid, "unknown top-level section %q", k)
		}
	}
	if err := t.loadTransform(root.Get("Transform")); err != nil {
		return err
	}
	if err := t.loadParameters(root.Get("Parameters")); err != nil {
		return err
	}
	if m := root.Get("Mappings"); !m.IsNull() {
		if m.Kind != KindMapping {
			return t.errAt(m, ErrInvalid, "Mappings must be a mapping")
		}
		t.Mappings = m
	}
	if conds := root.Get("Conditions"); !conds.IsNull() {
		if conds.Kind != KindMapping {
			return t.errAt(conds, ErrInvalid, "Conditions must be a mapping")
		}
		for _, k := range conds.Keys {
			t.Conditions[k] = conds.Get(k)
		}
	}
	if err := t.loadResources(root.Get("Resources")); err != nil {
		return err
	}
	if err := t.applyGlobals(root.Get("Globals")); err != nil {
		return err
	}
	t.addImplicitResources()
	return t.loadOutputs(root.Get("Outputs"))
}

func (t *Template) loadTransform(n *Node) error {
	switch {
	case n.IsNull():
		return nil
	case n.Kind == KindScalar:
		t.Transform = []string{n.Value}
	case n.Kind == KindSequence:
		for _, it := range n.Items {
			s, ok := it.Str()
			if !ok {
				return t.errAt(it, ErrUnsupported, "only named transforms are supported")
			}
			t.Transform = append(t.Transform, s)
		}
	default:
		return t.errAt(n, ErrInvalid, "Transform must be a name or a list of names")
	}
	for _, tr := range t.Transform {
		if tr != serverlessTransform {
			return t.errAt(n, ErrUnsupported, "transform %s", tr)
		}
	}
	return nil
}

func (t *Template) loadParameters(n *Node) error {
	if n.IsNull() {
		return nil
	}
	if n.Kind != KindMapping {
		return t.errAt(n, ErrInvalid, "Parameters must be a mapping")
	}
	for _, name := range n.Keys {
		pn := n.Get(name)
		if pn.Kind != KindMapping {
			return t.errAt(pn, ErrInvalid, "a parameter must be a mapping")
		}
		p := &Parameter{Name: name, Line: pn.Line}
		typ, ok := pn.Get("Type").Str()
		if !ok {
			return t.errAt(pn, ErrInvalid, "parameter %s needs a Type", name)
		}
		p.Type = typ
		if d := pn.Get("Default"); d != nil {
			s, err := t.literalString(d)
			if err != nil {
				return err
			}
			p.Default, p.HasDefault = s, true
		}
		if av := pn.Get("AllowedValues"); av != nil {
			if av.Kind != KindSequence {
				return t.errAt(av, ErrInvalid, "AllowedValues must be a list")
			}
			for _, it := range av.Items {
				s, err := t.literalString(it)
				if err != nil {
					return err
				}
				p.AllowedValues = append(p.AllowedValues, s)
			}
		}
		if ap := pn.Get("AllowedPattern"); ap != nil {
			s, err := t.literalString(ap)
			if err != nil {
				return err
			}
			// CloudFormation matches the whole value.
			re, err := regexp.Compile(`^(?:` + s + `)$`)
			if err != nil {
				return t.errAt(ap, ErrInvalid, "AllowedPattern of %s: %v", name, err)
			}
			p.AllowedPattern = re
		}
		t.Parameters[name] = p
	}
	return nil
}

// literalString reads a scalar that may not contain intrinsic functions.
// A list of scalars is joined with commas, as CloudFormation does for
// list parameter defaults.
func (t *Template) literalString(n *Node) (string, error) {
	switch n.Kind {
	case KindScalar:
		return n.Value, nil
	case KindNull:
		return "", nil
	case KindSequence:
		parts := make([]string, 0, len(n.Items))
		for _, it := range n.Items {
			s, ok := it.Str()
			if !ok {
				return "", t.errAt(it, ErrInvalid, "expected a literal value")
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	}
	return "", t.errAt(n, ErrInvalid, "expected a literal value, not a %s", n.Kind)
}

func (t *Template) loadResources(n *Node) error {
	if n.IsNull() {
		return t.errAt(t.Root, ErrInvalid, "the Resources section is required")
	}
	if n.Kind != KindMapping {
		return t.errAt(n, ErrInvalid, "Resources must be a mapping")
	}
	for _, id := range n.Keys {
		rn := n.Get(id)
		if strings.HasPrefix(id, "Fn::") {
			return t.errAt(rn, ErrUnsupported, "%s", id)
		}
		if rn.Kind != KindMapping {
			return t.errAt(rn, ErrInvalid, "a resource must be a mapping")
		}
		for _, k := range rn.Keys {
			if !resourceAttributes[k] {
				return t.errAt(rn.Get(k), ErrInvalid, "unknown resource attribute %q", k)
			}
		}
		typ, ok := rn.Get("Type").Str()
		if !ok || typ == "" {
			return t.errAt(rn, ErrInvalid, "resource %s needs a Type", id)
		}
		r := &Resource{LogicalID: id, Type: typ, Line: rn.Line, Properties: rn.Get("Properties")}
		if r.Properties.IsNull() {
			r.Properties = newMapping(childPath(rn.Path, "Properties"), rn.Line, rn.Column)
		} else if r.Properties.Kind != KindMapping {
			return t.errAt(r.Properties, ErrInvalid, "Properties must be a mapping")
		}
		if c := rn.Get("Condition"); c != nil {
			s, ok := c.Str()
			if !ok {
				return t.errAt(c, ErrInvalid, "Condition must be a condition name")
			}
			if _, ok := t.Conditions[s]; !ok {
				return t.errAt(c, ErrUnresolved, "condition %s is not declared", s)
			}
			r.Condition = s
		}
		if d := rn.Get("DependsOn"); d != nil {
			deps, err := t.literalString(d)
			if err != nil {
				return err
			}
			r.DependsOn = strings.Split(deps, ",")
		}
		t.Resources[id] = r
		t.ResourceOrder = append(t.ResourceOrder, id)
	}
	return nil
}

// applyGlobals merges the SAM Globals section into the resources of the
// matching types, as the SAM transform does: scalars and intrinsic
// functions of the resource win, mappings merge key by key (recursively),
// and lists concatenate (global entries first).
func (t *Template) applyGlobals(g *Node) error {
	if g.IsNull() {
		return nil
	}
	if g.Kind != KindMapping {
		return t.errAt(g, ErrInvalid, "Globals must be a mapping")
	}
	t.Globals = g
	for _, section := range g.Keys {
		typ, ok := globalsSections[section]
		if !ok {
			return t.errAt(g.Get(section), ErrInvalid, "Globals section %q is not one of Function, Api, HttpApi, SimpleTable, StateMachine, LayerVersion", section)
		}
		props := g.Get(section)
		if props.Kind != KindMapping {
			return t.errAt(props, ErrInvalid, "Globals.%s must be a mapping", section)
		}
		for _, id := range t.ResourceOrder {
			r := t.Resources[id]
			if r.Type == typ {
				r.Properties = mergeGlobal(props, r.Properties)
			}
		}
	}
	return nil
}

type mergeToken uint8

const (
	tokenPrimitive mergeToken = iota
	tokenDict
	tokenList
)

func tokenOf(n *Node) mergeToken {
	switch n.Kind {
	case KindMapping:
		return tokenDict
	case KindSequence:
		return tokenList
	}
	return tokenPrimitive
}

func mergeGlobal(global, local *Node) *Node {
	if local == nil {
		return global
	}
	tg, tl := tokenOf(global), tokenOf(local)
	switch {
	case tg != tl || tg == tokenPrimitive:
		return local
	case tg == tokenDict:
		out := newMapping(local.Path, local.Line, local.Column)
		for _, k := range global.Keys {
			out.set(k, global.Get(k))
		}
		for _, k := range local.Keys {
			if g := global.Get(k); g != nil {
				out.set(k, mergeGlobal(g, local.Get(k)))
			} else {
				out.set(k, local.Get(k))
			}
		}
		return out
	default:
		out := *local
		out.Items = append(append([]*Node{}, global.Items...), local.Items...)
		return &out
	}
}

// addImplicitResources declares the resources SAM generates that
// templates commonly reference by their generated logical IDs.
func (t *Template) addImplicitResources() {
	add := func(id, typ string, line int) {
		if _, exists := t.Resources[id]; exists {
			return
		}
		t.Resources[id] = &Resource{LogicalID: id, Type: typ, Line: line, Implicit: true,
			Properties: newMapping("Resources."+id+".Properties", line, 0)}
		t.ResourceOrder = append(t.ResourceOrder, id)
	}
	for _, id := range append([]string(nil), t.ResourceOrder...) {
		r := t.Resources[id]
		switch r.Type {
		case TypeServerlessFunc, TypeServerlessSM:
			if !r.Properties.Has("Role") {
				add(id+implicitRoleIDPostfix, TypeRole, r.Line)
			}
		}
		if r.Type != TypeServerlessFunc {
			continue
		}
		// AutoPublishAlias: SAM publishes a version and points the alias
		// "<Function>Alias<name>" at it; a Ref to the alias is its ARN.
		if name, ok := r.Properties.Get("AutoPublishAlias").Str(); ok && name != "" {
			aliasID := id + "Alias" + name
			add(aliasID, TypeLambdaAlias, r.Line)
			t.aliases[aliasID] = lambdaAlias{function: id, name: name}
		}
		events := r.Properties.Get("Events")
		if !events.Is(KindMapping) {
			continue
		}
		for _, name := range events.Keys {
			ev := events.Get(name)
			if typ, _ := ev.Get("Type").Str(); typ == "Api" && !ev.Get("Properties").Has("RestApiId") {
				add(implicitRestAPIID, TypeServerlessAPI, ev.Line)
			}
		}
	}
}

func (t *Template) loadOutputs(n *Node) error {
	if n.IsNull() {
		return nil
	}
	if n.Kind != KindMapping {
		return t.errAt(n, ErrInvalid, "Outputs must be a mapping")
	}
	for _, name := range n.Keys {
		on := n.Get(name)
		if on.Kind != KindMapping || !on.Has("Value") {
			return t.errAt(on, ErrInvalid, "output %s needs a Value", name)
		}
		o := &Output{Name: name, Value: on.Get("Value"), Export: on.Get("Export"), Line: on.Line}
		o.Description, _ = on.Get("Description").Str()
		if c := on.Get("Condition"); c != nil {
			s, ok := c.Str()
			if !ok {
				return t.errAt(c, ErrInvalid, "Condition must be a condition name")
			}
			o.Condition = s
		}
		t.Outputs[name] = o
		t.OutputOrder = append(t.OutputOrder, name)
	}
	return nil
}

// ResourcesOfType returns the resources of the given types in document
// order.
func (t *Template) ResourcesOfType(types ...string) []*Resource {
	var out []*Resource
	for _, id := range t.ResourceOrder {
		r := t.Resources[id]
		for _, typ := range types {
			if r.Type == typ {
				out = append(out, r)
				break
			}
		}
	}
	return out
}
