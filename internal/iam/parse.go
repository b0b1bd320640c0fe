package iam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The policy language versions AWS accepts.
const (
	Version2012 = "2012-10-17"
	Version2008 = "2008-10-17"
)

// statementElements are the elements a statement may have.
var statementElements = []string{
	"Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource", "NotResource", "Condition",
}

// documentElements are the elements a policy document may have.
var documentElements = []string{"Version", "Id", "Statement"}

// ParsePolicy parses a policy document given as decoded JSON
// (map[string]any, as encoding/json decodes it) or as JSON text ([]byte,
// json.RawMessage or string). Statement may be one object or a list;
// Action, Resource and the other list elements may be a string or a list.
//
// It refuses, with a *PolicyError naming the policy, the statement (index
// and Sid) and the element: unknown top-level or statement elements (names
// are case-sensitive), a Version other than "2012-10-17" or "2008-10-17",
// an Effect other than "Allow" or "Deny", an action not of the form
// "service:Action" (wildcards * and ? allowed, "*" alone allowed), a
// resource neither "*" nor an ARN, a statement with both Action and
// NotAction (or Resource and NotResource) or neither, a Principal with a
// partial wildcard, an unknown condition operator or a condition value its
// operator cannot read, and, as not supported locally (errors.Is
// ErrUnsupported), NotPrincipal and policy variables ("${...}") in a
// resource or condition value of a "2012-10-17" policy.
func ParsePolicy(name string, doc any) (*Policy, error) {
	top, err := decodeDocument(name, doc)
	if err != nil {
		return nil, err
	}
	docErr := func(element, msg string) error {
		return &PolicyError{Policy: name, Statement: -1, Element: element, Msg: msg}
	}
	for _, k := range sortedKeys(top) {
		if !slices.Contains(documentElements, k) {
			return nil, docErr(k, "unknown top-level element"+suggest(k, documentElements))
		}
	}
	p := &Policy{Name: name}
	if v, ok := top["Version"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, docErr("Version", "is not a string")
		}
		p.Version = s
		if s != Version2012 && s != Version2008 {
			return nil, docErr("Version", versionMsg(s))
		}
	}
	if v, ok := top["Id"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, docErr("Id", "is not a string")
		}
		p.ID = s
	}
	raw, ok := top["Statement"]
	if !ok {
		return nil, docErr("Statement", "is missing")
	}
	var list []any
	switch v := raw.(type) {
	case map[string]any:
		list = []any{v}
	case []any:
		list = v
	default:
		return nil, docErr("Statement", "is neither an object nor a list of objects")
	}
	if len(list) == 0 {
		return nil, docErr("Statement", "is empty")
	}
	for i, rs := range list {
		st, err := parseStatement(name, i, rs)
		if err != nil {
			return nil, err
		}
		p.Statements = append(p.Statements, st)
	}
	if _, err := p.compile(anyPolicy); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeDocument returns the top-level object of a policy document.
func decodeDocument(name string, doc any) (map[string]any, error) {
	var text []byte
	switch d := doc.(type) {
	case map[string]any:
		return d, nil
	case []byte:
		text = d
	case json.RawMessage:
		text = d
	case string:
		text = []byte(d)
	default:
		return nil, &PolicyError{Policy: name, Statement: -1, Msg: fmt.Sprintf("a policy document is a JSON object, map[string]any or []byte, not %T", doc)}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, tail := dec.Token(); !errors.Is(tail, io.EOF) {
			err = errors.New("data after the document")
		}
	}
	if err != nil {
		return nil, &PolicyError{Policy: name, Statement: -1, Msg: "not valid JSON: " + err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &PolicyError{Policy: name, Statement: -1, Msg: "a policy document is a JSON object"}
	}
	return m, nil
}

// parseStatement reads the statement at index i of a document.
func parseStatement(policy string, i int, raw any) (Statement, error) {
	st := Statement{Index: i}
	fail := func(element, msg string, err error) error {
		return &PolicyError{Policy: policy, Statement: i, Sid: st.Sid, Element: element, Msg: msg, Err: err}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return st, fail("", "a statement is a JSON object", nil)
	}
	if v, ok := m["Sid"]; ok {
		s, ok := v.(string)
		if !ok {
			return st, fail("Sid", "is not a string", nil)
		}
		st.Sid = s
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		var err error
		switch k {
		case "Sid":
		case "Effect":
			s, ok := v.(string)
			if !ok {
				return st, fail(k, "is not a string", nil)
			}
			st.Effect = s
		case "Principal":
			st.Principal, err = parsePrincipal(v)
		case "NotPrincipal":
			return st, fail(k, "NotPrincipal is not supported: state the principals in Principal, or express the exception in a Condition on aws:PrincipalArn", ErrUnsupported)
		case "Action":
			st.Actions, err = stringList(v)
		case "NotAction":
			st.NotActions, err = stringList(v)
		case "Resource":
			st.Resources, err = stringList(v)
		case "NotResource":
			st.NotResources, err = stringList(v)
		case "Condition":
			st.Conditions, err = parseConditions(v)
		default:
			return st, fail(k, "unknown statement element"+suggest(k, statementElements), nil)
		}
		if err != nil {
			return st, fail(k, err.Error(), nil)
		}
	}
	return st, nil
}

// parsePrincipal reads a Principal element.
func parsePrincipal(v any) (*Principals, error) {
	if s, ok := v.(string); ok {
		if s != "*" {
			return nil, fmt.Errorf("%s is neither \"*\" nor an object such as {\"AWS\": ...} or {\"Service\": ...}", quote(s))
		}
		return &Principals{All: true}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("is neither \"*\" nor an object such as {\"AWS\": ...} or {\"Service\": ...}")
	}
	if len(m) == 0 {
		return nil, errors.New("names no principal")
	}
	p := &Principals{}
	for _, k := range sortedKeys(m) {
		list, err := stringList(m[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		switch k {
		case "AWS":
			p.AWS = list
		case "Service":
			p.Service = list
		case "Federated":
			p.Federated = list
		case "CanonicalUser":
			p.CanonicalUser = list
		default:
			return nil, fmt.Errorf("unknown principal type %s (AWS, Service, Federated or CanonicalUser)", quote(k))
		}
	}
	return p, nil
}

// stringList reads a string or a non-empty list of strings.
func stringList(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		if len(v) == 0 {
			return nil, errors.New("is an empty list")
		}
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("item %d is not a string", i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, errors.New("is neither a string nor a list of strings")
}

// parseConditions reads a Condition block, operators and keys in sorted
// order.
func parseConditions(v any) ([]Condition, error) {
	block, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New(`is not an object {"operator": {"key": values}}`)
	}
	var out []Condition
	for _, op := range sortedKeys(block) {
		keys, ok := block[op].(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`%s is not an object {"key": values}`, quote(op))
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("%s names no condition key", quote(op))
		}
		for _, key := range sortedKeys(keys) {
			values, err := conditionValues(keys[key])
			if err != nil {
				return nil, fmt.Errorf("%s key %s: %w", quote(op), quote(key), err)
			}
			out = append(out, Condition{Operator: op, Key: key, Values: values})
		}
	}
	return out, nil
}

// conditionValues reads a condition value or list of values: strings,
// numbers and booleans, the latter two as their JSON text.
func conditionValues(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	} else if len(list) == 0 {
		return nil, errors.New("is an empty list")
	}
	out := make([]string, len(list))
	for i, e := range list {
		switch e := e.(type) {
		case string:
			out[i] = e
		case json.Number:
			out[i] = e.String()
		case float64:
			out[i] = strconv.FormatFloat(e, 'f', -1, 64)
		case int:
			out[i] = strconv.Itoa(e)
		case int64:
			out[i] = strconv.FormatInt(e, 10)
		case bool:
			out[i] = strconv.FormatBool(e)
		default:
			return nil, fmt.Errorf("value %v is not a string, number or boolean", e)
		}
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// suggest names the element k was probably meant to be, element names
// being case-sensitive.
func suggest(k string, known []string) string {
	for _, e := range known {
		if strings.EqualFold(k, e) {
			return " (element names are case-sensitive: " + quote(e) + "?)"
		}
	}
	return ""
}

// policyKind tells which checks depend on the kind of policy.
type policyKind uint8

const (
	anyPolicy policyKind = iota
	identityPolicy
	resourcePolicy
)

// compiledStatement is a checked statement, its patterns compiled.
type compiledStatement struct {
	st        *Statement
	actions   []pattern // lower case; nil for NotAction statements
	notAction []pattern
	resources []pattern // nil entries for "*"
	notRes    []pattern
	conds     []*condition
}

// compile checks the policy, as ParsePolicy does for a document, and for
// identityPolicy or resourcePolicy also the presence of Principal, and
// compiles its statements.
func (p *Policy) compile(kind policyKind) ([]compiledStatement, error) {
	switch p.Version {
	case Version2012, Version2008, "":
	default:
		return nil, &PolicyError{Policy: p.Name, Statement: -1, Element: "Version", Msg: versionMsg(p.Version)}
	}
	vars := p.Version == Version2012
	out := make([]compiledStatement, len(p.Statements))
	for i := range p.Statements {
		st := &p.Statements[i]
		fail := func(element string, f *fault) error {
			return &PolicyError{Policy: p.Name, Statement: st.Index, Sid: st.Sid, Element: element, Msg: f.msg, Err: f.err}
		}
		c := compiledStatement{st: st}
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, fail("Effect", &fault{msg: quote(st.Effect) + " is neither \"Allow\" nor \"Deny\""})
		}
		switch {
		case kind == identityPolicy && st.Principal != nil:
			return nil, fail("Principal", &fault{msg: "an identity-based policy has no Principal: its principal is the identity it is attached to"})
		case kind == resourcePolicy && st.Principal == nil:
			return nil, fail("Principal", &fault{msg: "is missing: a resource-based policy statement names its principals"})
		}
		if st.Principal != nil {
			if f := checkPrincipals(st.Principal); f != nil {
				return nil, fail("Principal", f)
			}
		}
		switch {
		case len(st.Actions) > 0 && len(st.NotActions) > 0:
			return nil, fail("Action", &fault{msg: "a statement has Action or NotAction, not both"})
		case len(st.Actions) == 0 && len(st.NotActions) == 0:
			return nil, fail("Action", &fault{msg: "is missing: a statement needs Action or NotAction"})
		case len(st.Resources) > 0 && len(st.NotResources) > 0:
			return nil, fail("Resource", &fault{msg: "a statement has Resource or NotResource, not both"})
		case len(st.Resources) == 0 && len(st.NotResources) == 0:
			return nil, fail("Resource", &fault{msg: "is missing: a statement needs Resource or NotResource"})
		}
		for _, list := range []struct {
			element string
			values  []string
			into    *[]pattern
		}{{"Action", st.Actions, &c.actions}, {"NotAction", st.NotActions, &c.notAction}} {
			for _, a := range list.values {
				if msg := checkAction(a, true); msg != "" {
					return nil, fail(list.element, &fault{msg: msg})
				}
				*list.into = append(*list.into, actionPattern(a))
			}
		}
		for _, list := range []struct {
			element string
			values  []string
			into    *[]pattern
		}{{"Resource", st.Resources, &c.resources}, {"NotResource", st.NotResources, &c.notRes}} {
			for _, r := range list.values {
				rp, f := resourcePattern(r, vars)
				if f != nil {
					return nil, fail(list.element, f)
				}
				*list.into = append(*list.into, rp)
			}
		}
		for _, cond := range st.Conditions {
			cc, f := compileCondition(cond, vars)
			if f != nil {
				return nil, &PolicyError{Policy: p.Name, Statement: st.Index, Sid: st.Sid, Element: "Condition", Key: cond.Key, Msg: f.msg, Err: f.err}
			}
			c.conds = append(c.conds, cc)
		}
		out[i] = c
	}
	return out, nil
}

func versionMsg(v string) string {
	return quote(v) + " is not a policy language version: use \"" + Version2012 + "\""
}

// checkPrincipals reports what is wrong with a Principal element, if
// anything.
func checkPrincipals(p *Principals) *fault {
	if !p.All && len(p.AWS)+len(p.Service)+len(p.Federated)+len(p.CanonicalUser) == 0 {
		return &fault{msg: "names no principal"}
	}
	for _, v := range p.AWS {
		if f := checkAWSPrincipal(v); f != nil {
			return f
		}
	}
	for _, list := range [][]string{p.Service, p.Federated, p.CanonicalUser} {
		for _, v := range list {
			switch {
			case v == "" || strings.ContainsAny(v, " \t\n"):
				return &fault{msg: "principal " + quote(v) + " is not a principal name"}
			case strings.ContainsAny(v, "*?"):
				return &fault{msg: "principal " + quote(v) + ": a wildcard may stand only for all principals, as \"*\" or {\"AWS\": \"*\"}"}
			}
		}
	}
	return nil
}

// checkAWSPrincipal reports what is wrong with a value of a Principal's
// "AWS" list, if anything.
func checkAWSPrincipal(v string) *fault {
	if v == "*" || isAccountID(v) {
		return nil
	}
	if strings.ContainsAny(v, "*?") {
		return &fault{msg: "principal " + quote(v) + ": a wildcard may stand only for all principals, as \"*\" alone; use a Condition on aws:PrincipalArn for a pattern"}
	}
	segs, ok := splitARN(v)
	if !ok {
		return &fault{msg: "principal " + quote(v) + " is neither \"*\", an account ID nor an IAM ARN (unique IDs of deleted principals are not supported)", err: ErrUnsupported}
	}
	if segs[3] != "" || !isAccountID(segs[4]) {
		return &fault{msg: "principal " + quote(v) + " has no 12-digit account ID, or a region"}
	}
	switch res := segs[5]; {
	case segs[2] == "iam" && (res == "root" || strings.HasPrefix(res, "role/") || strings.HasPrefix(res, "user/")):
	case segs[2] == "sts" && (strings.HasPrefix(res, "assumed-role/") || strings.HasPrefix(res, "federated-user/")):
	default:
		return &fault{msg: "principal " + quote(v) + " is not the ARN of an account root, a role, a user or a session"}
	}
	return nil
}

func isAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
