package cfn

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Defaults used for empty Env fields.
const (
	DefaultRegion    = "us-east-1"
	DefaultAccountID = "123456789012"
	DefaultStackName = "local"
	DefaultPartition = "aws"
)

// Env is the local deployment a Resolver resolves for: the values of the
// pseudo parameters and of the template parameters.
type Env struct {
	Region    string // "" = DefaultRegion
	AccountID string // "" = DefaultAccountID
	StackName string // "" = DefaultStackName
	Partition string // "" = DefaultPartition
	// Parameters override the template's parameter defaults.
	Parameters map[string]string
}

func (e Env) withDefaults() Env {
	if e.Region == "" {
		e.Region = DefaultRegion
	}
	if e.AccountID == "" {
		e.AccountID = DefaultAccountID
	}
	if e.StackName == "" {
		e.StackName = DefaultStackName
	}
	if e.Partition == "" {
		e.Partition = DefaultPartition
	}
	return e
}

// URLSuffix is the AWS::URLSuffix of the environment's partition.
func (e Env) URLSuffix() string {
	if e.Partition == "aws-cn" {
		return "amazonaws.com.cn"
	}
	return "amazonaws.com"
}

// noValue is the result of Ref AWS::NoValue: the enclosing property or
// list element is dropped.
type noValue struct{}

// Resolver evaluates intrinsic functions of one template for one Env.
// Results are the Go values of the YAML: string, int64, float64, bool,
// nil, []any and map[string]any. A Resolver is not safe for concurrent use.
type Resolver struct {
	t        *Template
	env      Env
	params   map[string]string
	conds    map[string]bool
	condBusy map[string]bool
	names    map[string]string
	nameBusy map[string]bool
}

// NewResolver returns a Resolver for t in env. It fails when env names a
// parameter the template does not declare, when a value is not one of the
// parameter's AllowedValues, or when a parameter has neither a value nor
// a default (CloudFormation refuses such a stack too).
func NewResolver(t *Template, env Env) (*Resolver, error) {
	r := &Resolver{
		t:        t,
		env:      env.withDefaults(),
		params:   map[string]string{},
		conds:    map[string]bool{},
		condBusy: map[string]bool{},
		names:    map[string]string{},
		nameBusy: map[string]bool{},
	}
	for name := range env.Parameters {
		if _, ok := t.Parameters[name]; !ok {
			return nil, &Error{File: t.File, Err: fmt.Errorf("%w: parameter %s is not declared in the template", ErrUnresolved, name)}
		}
	}
	for name, p := range t.Parameters {
		v, ok := env.Parameters[name]
		if !ok {
			if !p.HasDefault {
				return nil, &Error{File: t.File, Line: p.Line, Path: "Parameters." + name, Err: fmt.Errorf("%w: parameter %s has no value and no default", ErrInvalid, name)}
			}
			v = p.Default
		}
		if len(p.AllowedValues) > 0 && !slices.Contains(p.AllowedValues, v) {
			return nil, &Error{File: t.File, Line: p.Line, Path: "Parameters." + name, Err: fmt.Errorf("%w: %q is not one of AllowedValues %v", ErrInvalid, v, p.AllowedValues)}
		}
		if p.AllowedPattern != nil {
			values := []string{v}
			if p.Type == "CommaDelimitedList" {
				values = strings.Split(v, ",")
			}
			for _, each := range values {
				if !p.AllowedPattern.MatchString(strings.TrimSpace(each)) {
					return nil, &Error{File: t.File, Line: p.Line, Path: "Parameters." + name, Err: fmt.Errorf("%w: %q does not match AllowedPattern %s", ErrInvalid, each, p.AllowedPattern)}
				}
			}
		}
		r.params[name] = v
	}
	return r, nil
}

// Template returns the template the Resolver resolves.
func (r *Resolver) Template() *Template { return r.t }

// Parameter is the value of a template parameter: Env.Parameters' or its
// default. ok is false for a parameter the template does not declare.
func (r *Resolver) Parameter(name string) (value string, ok bool) {
	if _, declared := r.t.Parameters[name]; !declared {
		return "", false
	}
	return r.params[name], true
}

// Env returns the environment with defaults applied.
func (r *Resolver) Env() Env { return r.env }

// Value resolves every intrinsic function in n. Properties set to
// Ref AWS::NoValue are dropped; a top-level AWS::NoValue yields nil.
func (r *Resolver) Value(n *Node) (any, error) {
	v, err := r.value(n)
	if _, ok := v.(noValue); ok {
		return nil, err
	}
	return v, err
}

// String resolves n to a string. Numbers and booleans are formatted, as
// CloudFormation passes them to string properties.
func (r *Resolver) String(n *Node) (string, error) {
	v, err := r.Value(n)
	if err != nil {
		return "", err
	}
	s, ok := stringify(v)
	if !ok {
		return "", r.t.errAt(n, ErrInvalid, "expected a string, got %s", describe(v))
	}
	return s, nil
}

// Exists reports whether a resource exists in the environment: it has no
// Condition, or its condition is true.
func (r *Resolver) Exists(res *Resource) (bool, error) {
	if res.Condition == "" {
		return true, nil
	}
	return r.Condition(res.Condition)
}

// existing returns the template's resources of the given types whose
// condition holds, in document order.
func (r *Resolver) existing(types ...string) ([]*Resource, error) {
	var out []*Resource
	for _, res := range r.t.ResourcesOfType(types...) {
		ok, err := r.Exists(res)
		if err != nil {
			return nil, r.wrapAt(res.Properties, err)
		}
		if ok {
			out = append(out, res)
		}
	}
	return out, nil
}

func (r *Resolver) errAt(n *Node, sentinel error, format string, args ...any) error {
	return r.t.errAt(n, sentinel, format, args...)
}

func (r *Resolver) unsupported(n *Node, what string) error {
	return &Error{File: r.t.File, Line: n.Line, Path: n.Path, Err: fmt.Errorf("%s is %w", what, ErrUnsupported)}
}

func scalarValue(n *Node) any {
	switch n.Tag {
	case "!!int":
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			return i
		}
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f
		}
	case "!!bool":
		return strings.EqualFold(n.Value, "true")
	}
	return n.Value
}

func (r *Resolver) value(n *Node) (any, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case KindNull:
		return nil, nil
	case KindScalar:
		return scalarValue(n), nil
	case KindSequence:
		out := make([]any, 0, len(n.Items))
		for _, it := range n.Items {
			v, err := r.value(it)
			if err != nil {
				return nil, err
			}
			if _, drop := v.(noValue); drop {
				continue
			}
			out = append(out, v)
		}
		return out, nil
	case KindMapping:
		out := make(map[string]any, len(n.Keys))
		for _, k := range n.Keys {
			v, err := r.value(n.Get(k))
			if err != nil {
				return nil, err
			}
			if _, drop := v.(noValue); drop {
				continue
			}
			out[k] = v
		}
		return out, nil
	case KindIntrinsic:
		return r.intrinsic(n)
	}
	return nil, r.errAt(n, ErrInvalid, "unexpected %s", n.Kind)
}

func (r *Resolver) intrinsic(n *Node) (any, error) {
	a := n.Arg
	switch n.Fn {
	case "Ref":
		return r.ref(n, a.Value)
	case "Fn::GetAtt":
		id, err := r.String(a.Items[0])
		if err != nil {
			return nil, err
		}
		attr, err := r.String(a.Items[1])
		if err != nil {
			return nil, err
		}
		return r.getAtt(n, id, attr)
	case "Fn::Sub":
		return r.sub(n)
	case "Fn::Join":
		return r.join(n)
	case "Fn::Select":
		return r.selectFn(n)
	case "Fn::Split":
		delim, err := r.String(a.Items[0])
		if err != nil {
			return nil, err
		}
		src, err := r.String(a.Items[1])
		if err != nil {
			return nil, err
		}
		if delim == "" {
			return nil, r.errAt(n, ErrInvalid, "Fn::Split needs a non-empty delimiter")
		}
		parts := strings.Split(src, delim)
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "Fn::If":
		name, ok := a.Items[0].Str()
		if !ok {
			return nil, r.errAt(a.Items[0], ErrInvalid, "Fn::If takes a condition name first")
		}
		c, err := r.Condition(name)
		if err != nil {
			return nil, r.wrapAt(a.Items[0], err)
		}
		// Only the chosen branch is resolved, as in CloudFormation.
		if c {
			return r.value(a.Items[1])
		}
		return r.value(a.Items[2])
	case "Fn::FindInMap":
		return r.findInMap(n)
	case "Fn::Base64":
		s, err := r.String(a)
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "Fn::Transform":
		if name, _ := a.Get("Name").Str(); name == includeTransform {
			return r.include(n)
		}
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition":
		return nil, r.errAt(n, ErrInvalid, "%s is only valid in Conditions", n.Fn)
	}
	// Fn::ImportValue, Fn::GetAZs, Fn::Cidr, Fn::Transform other than
	// AWS::Include, Fn::Length, Fn::ToJsonString: valid in AWS, without a
	// local meaning here.
	return nil, r.unsupported(n, n.Fn)
}

// wrapAt places an error without a location (a condition that is not
// declared, for example) at n.
func (r *Resolver) wrapAt(n *Node, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := asError(err); ok {
		return err
	}
	return &Error{File: r.t.File, Line: n.Line, Path: n.Path, Err: err}
}

// pseudo resolves AWS:: pseudo parameters.
func (r *Resolver) pseudo(n *Node, name string) (any, error) {
	e := r.env
	switch name {
	case "AWS::Region":
		return e.Region, nil
	case "AWS::AccountId":
		return e.AccountID, nil
	case "AWS::StackName":
		return e.StackName, nil
	case "AWS::Partition":
		return e.Partition, nil
	case "AWS::URLSuffix":
		return e.URLSuffix(), nil
	case "AWS::StackId":
		return r.arn("cloudformation", "stack/"+e.StackName+"/00000000-0000-0000-0000-000000000000"), nil
	case "AWS::NotificationARNs":
		return []any{}, nil
	case "AWS::NoValue":
		return noValue{}, nil
	}
	return nil, r.errAt(n, ErrUnresolved, "unknown pseudo parameter %s", name)
}

func (r *Resolver) arn(service, resource string) string {
	return "arn:" + r.env.Partition + ":" + service + ":" + r.env.Region + ":" + r.env.AccountID + ":" + resource
}

func (r *Resolver) ref(n *Node, name string) (any, error) {
	if strings.HasPrefix(name, "AWS::") {
		return r.pseudo(n, name)
	}
	if p, ok := r.t.Parameters[name]; ok {
		v := r.params[name]
		if strings.HasPrefix(p.Type, "AWS::SSM::Parameter::Value<") {
			if _, given := r.env.Parameters[name]; !given {
				return nil, r.unsupported(n, "SSM parameter type of "+name+" (give its value in Env.Parameters)")
			}
		}
		if p.Type == "CommaDelimitedList" || strings.HasPrefix(p.Type, "List<") {
			parts := strings.Split(v, ",")
			out := make([]any, len(parts))
			for i, s := range parts {
				out[i] = strings.TrimSpace(s)
			}
			return out, nil
		}
		return v, nil
	}
	res, ok := r.t.Resources[name]
	if !ok {
		if v, ok, err := r.publishedRef(n, name); ok || err != nil {
			return v, err
		}
		return nil, r.errAt(n, ErrUnresolved, "Ref %s: no parameter or resource of that name", name)
	}
	if err := r.checkExists(n, res); err != nil {
		return nil, err
	}
	k := kindOf(res.Type)
	physical, err := r.PhysicalName(res)
	if err != nil {
		return nil, err
	}
	if k.ref == nil {
		return physical, nil
	}
	return k.ref(r, res, physical)
}

// LocalVersion is the one version a function has locally: Ref
// Function.Version is its ARN qualified by it.
const LocalVersion = "1"

// publishedRef resolves SAM's references to what AutoPublishAlias
// publishes: Function.Alias (the alias's ARN) and Function.Version (the
// ARN of the version it points at; locally LocalVersion). ok is false
// for any other name.
func (r *Resolver) publishedRef(n *Node, name string) (v any, ok bool, err error) {
	fn, what, found := strings.Cut(name, ".")
	if !found || (what != "Alias" && what != "Version") {
		return nil, false, nil
	}
	for id, a := range r.t.aliases {
		if a.function != fn {
			continue
		}
		if what == "Alias" {
			v, err := r.ref(n, id)
			return v, true, err
		}
		arn, err := r.getAtt(n, fn, "Arn")
		if err != nil {
			return nil, true, err
		}
		s, _ := arn.(string)
		return s + ":" + LocalVersion, true, nil
	}
	return nil, false, nil
}

func (r *Resolver) checkExists(n *Node, res *Resource) error {
	ok, err := r.Exists(res)
	if err != nil {
		return r.wrapAt(n, err)
	}
	if !ok {
		return r.errAt(n, ErrUnresolved, "resource %s is not created: its condition %s is false", res.LogicalID, res.Condition)
	}
	return nil
}

func (r *Resolver) getAtt(n *Node, id, attr string) (any, error) {
	res, ok := r.t.Resources[id]
	if !ok {
		return nil, r.errAt(n, ErrUnresolved, "Fn::GetAtt %s.%s: no resource %s", id, attr, id)
	}
	if err := r.checkExists(n, res); err != nil {
		return nil, err
	}
	f, ok := kindOf(res.Type).attrs[attr]
	if !ok {
		return nil, r.unsupported(n, fmt.Sprintf("Fn::GetAtt %s.%s (%s)", id, attr, res.Type))
	}
	physical, err := r.PhysicalName(res)
	if err != nil {
		return nil, err
	}
	return f(r, res, physical)
}

// RefString returns what Ref of a resource or parameter yields, as a
// string.
func (r *Resolver) RefString(name string) (string, error) {
	n := &Node{Kind: KindIntrinsic, Fn: "Ref", Arg: &Node{Kind: KindScalar, Tag: "!!str", Value: name}}
	if res, ok := r.t.Resources[name]; ok {
		n.Line, n.Path = res.Line, "Resources."+name
	}
	return r.String(n)
}

// GetAttString returns what Fn::GetAtt id.attr yields, as a string.
func (r *Resolver) GetAttString(id, attr string) (string, error) {
	var at *Node
	if res, ok := r.t.Resources[id]; ok {
		at = &Node{Line: res.Line, Path: "Resources." + id}
	}
	v, err := r.getAtt(at, id, attr)
	if err != nil {
		return "", err
	}
	s, ok := stringify(v)
	if !ok {
		return "", r.errAt(at, ErrInvalid, "Fn::GetAtt %s.%s is %s, not a string", id, attr, describe(v))
	}
	return s, nil
}

// PhysicalName returns the name a resource gets locally: its name
// property (TableName, FunctionName, ...) when set, else its logical ID.
// (CloudFormation would generate "stack-LogicalId-RANDOM"; a stable name
// is what the local runtime needs.)
func (r *Resolver) PhysicalName(res *Resource) (string, error) {
	if name, ok := r.names[res.LogicalID]; ok {
		return name, nil
	}
	if r.nameBusy[res.LogicalID] {
		return "", r.errAt(res.Properties, ErrInvalid, "circular reference: the name of %s depends on itself", res.LogicalID)
	}
	r.nameBusy[res.LogicalID] = true
	defer delete(r.nameBusy, res.LogicalID)
	name := res.LogicalID
	k := kindOf(res.Type)
	for _, prop := range k.nameProps {
		if p := res.Properties.Get(prop); p != nil {
			v, err := r.Value(p)
			if err != nil {
				return "", err
			}
			if v != nil {
				s, ok := stringify(v)
				if !ok {
					return "", r.errAt(p, ErrInvalid, "%s must be a string, got %s", prop, describe(v))
				}
				name = s
			}
			break
		}
	}
	if name == res.LogicalID && k.defaultName != nil {
		var err error
		if name, err = k.defaultName(r, res); err != nil {
			return "", err
		}
	}
	r.names[res.LogicalID] = name
	return name, nil
}

func (r *Resolver) sub(n *Node) (any, error) {
	a := n.Arg
	tmpl := a
	vars := map[string]*Node{}
	if a.Kind == KindSequence {
		tmpl = a.Items[0]
		m := a.Items[1]
		for _, k := range m.Keys {
			vars[k] = m.Get(k)
		}
	}
	s, _ := tmpl.Str()
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			// An unclosed "${" is literal text.
			b.WriteString(s[i:])
			break
		}
		name := rest[:j]
		s = rest[j+1:]
		if strings.HasPrefix(name, "!") {
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		v, err := r.subVar(n, strings.TrimSpace(name), vars)
		if err != nil {
			return nil, err
		}
		str, ok := stringify(v)
		if !ok {
			return nil, r.errAt(n, ErrInvalid, "Fn::Sub variable ${%s} is %s, not a string", name, describe(v))
		}
		b.WriteString(str)
	}
	return b.String(), nil
}

func (r *Resolver) subVar(n *Node, name string, vars map[string]*Node) (any, error) {
	if v, ok := vars[name]; ok {
		return r.Value(v)
	}
	if strings.HasPrefix(name, "AWS::") {
		return r.pseudo(n, name)
	}
	if _, ok := r.t.Parameters[name]; ok {
		return r.ref(n, name)
	}
	if _, ok := r.t.Resources[name]; ok {
		return r.ref(n, name)
	}
	if id, attr, ok := strings.Cut(name, "."); ok {
		if _, ok := r.t.Resources[id]; ok {
			return r.getAtt(n, id, attr)
		}
	}
	return nil, r.errAt(n, ErrUnresolved, "Fn::Sub variable ${%s}: no variable, parameter or resource of that name", name)
}

func (r *Resolver) join(n *Node) (any, error) {
	delim, err := r.String(n.Arg.Items[0])
	if err != nil {
		return nil, err
	}
	lv, err := r.Value(n.Arg.Items[1])
	if err != nil {
		return nil, err
	}
	list, ok := lv.([]any)
	if !ok {
		return nil, r.errAt(n.Arg.Items[1], ErrInvalid, "Fn::Join needs a list, got %s", describe(lv))
	}
	parts := make([]string, len(list))
	for i, v := range list {
		s, ok := stringify(v)
		if !ok {
			return nil, r.errAt(n, ErrInvalid, "Fn::Join element %d is %s, not a string", i, describe(v))
		}
		parts[i] = s
	}
	return strings.Join(parts, delim), nil
}

func (r *Resolver) selectFn(n *Node) (any, error) {
	iv, err := r.Value(n.Arg.Items[0])
	if err != nil {
		return nil, err
	}
	idx, ok := toInt(iv)
	if !ok {
		return nil, r.errAt(n.Arg.Items[0], ErrInvalid, "Fn::Select index must be a number, got %s", describe(iv))
	}
	lv, err := r.Value(n.Arg.Items[1])
	if err != nil {
		return nil, err
	}
	list, ok := lv.([]any)
	if !ok {
		return nil, r.errAt(n.Arg.Items[1], ErrInvalid, "Fn::Select needs a list, got %s", describe(lv))
	}
	if idx < 0 || idx >= int64(len(list)) {
		return nil, r.errAt(n, ErrInvalid, "Fn::Select index %d is out of range for a list of %d", idx, len(list))
	}
	return list[idx], nil
}

func (r *Resolver) findInMap(n *Node) (any, error) {
	if len(n.Arg.Items) == 4 {
		return nil, r.unsupported(n, "Fn::FindInMap with a default value (AWS::LanguageExtensions)")
	}
	keys := make([]string, 3)
	for i := range keys {
		s, err := r.String(n.Arg.Items[i])
		if err != nil {
			return nil, err
		}
		keys[i] = s
	}
	v := r.t.Mappings.Get(keys[0]).Get(keys[1]).Get(keys[2])
	if v == nil {
		return nil, r.errAt(n, ErrUnresolved, "Fn::FindInMap: Mappings has no %s.%s.%s", keys[0], keys[1], keys[2])
	}
	return r.value(v)
}

// Condition evaluates a named condition of the Conditions section.
func (r *Resolver) Condition(name string) (bool, error) {
	if v, ok := r.conds[name]; ok {
		return v, nil
	}
	n, ok := r.t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("%w: condition %s is not declared", ErrUnresolved, name)
	}
	if r.condBusy[name] {
		return false, r.errAt(n, ErrInvalid, "circular reference: condition %s depends on itself", name)
	}
	r.condBusy[name] = true
	defer delete(r.condBusy, name)
	v, err := r.cond(n)
	if err != nil {
		return false, err
	}
	r.conds[name] = v
	return v, nil
}

func (r *Resolver) cond(n *Node) (bool, error) {
	if n.Kind == KindMapping && len(n.Keys) == 1 && n.Keys[0] == "Condition" {
		// Long form of !Condition.
		name, ok := n.Get("Condition").Str()
		if !ok {
			return false, r.errAt(n, ErrInvalid, "Condition takes a condition name")
		}
		v, err := r.Condition(name)
		return v, r.wrapAt(n, err)
	}
	if n.Kind != KindIntrinsic {
		return false, r.errAt(n, ErrInvalid, "expected a condition function (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition), got a %s", n.Kind)
	}
	switch n.Fn {
	case "Condition":
		v, err := r.Condition(n.Arg.Value)
		if err != nil {
			return false, r.wrapAt(n, err)
		}
		return v, nil
	case "Fn::Equals":
		var s [2]string
		for i := range s {
			v, err := r.Value(n.Arg.Items[i])
			if err != nil {
				return false, err
			}
			str, ok := stringify(v)
			if !ok {
				return false, r.errAt(n.Arg.Items[i], ErrInvalid, "Fn::Equals compares strings, got %s", describe(v))
			}
			s[i] = str
		}
		return s[0] == s[1], nil
	case "Fn::Not":
		v, err := r.cond(n.Arg.Items[0])
		return !v, err
	case "Fn::And", "Fn::Or":
		and := n.Fn == "Fn::And"
		result := and
		for _, it := range n.Arg.Items {
			v, err := r.cond(it)
			if err != nil {
				return false, err
			}
			if and {
				result = result && v
			} else {
				result = result || v
			}
		}
		return result, nil
	}
	return false, r.errAt(n, ErrInvalid, "%s is not a condition function", n.Fn)
}

// stringify formats a scalar value as CloudFormation passes it to a
// string property.
func stringify(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return i, true
		}
	}
	return 0, false
}

func toBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(x) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	case noValue:
		return "AWS::NoValue"
	}
	return fmt.Sprintf("%T", v)
}
