package asl

import (
	"encoding/json"
	"math/big"
	"strings"
	"time"
)

// choiceRule is a compiled Choice rule: a boolean combination (And, Or,
// Not) or a comparison of the Variable against a value or another path.
type choiceRule struct {
	next   string   // top-level rules only
	assign template // top-level rules only; nil when absent

	and, or []*choiceRule
	not     *choiceRule

	variable  *refPath
	op        operator
	value     any      // string, *big.Rat, bool or time.Time
	valuePath *refPath // ...Path operators
	pattern   []string // StringMatches: literal pieces around the * wildcards
}

type opKind int

const (
	kindString opKind = iota
	kindNumeric
	kindBoolean
	kindTimestamp
	kindMatches
	kindIsNull
	kindIsPresent
	kindIsNumeric
	kindIsString
	kindIsBoolean
	kindIsTimestamp
)

type relation int

const (
	relEq relation = iota
	relLt
	relGt
	relLe
	relGe
)

type operator struct {
	name   string
	kind   opKind
	rel    relation
	isPath bool
}

// operators lists the JSONPath comparison operators by name.
var operators = func() map[string]operator {
	m := map[string]operator{}
	rels := map[string]relation{
		"Equals": relEq, "LessThan": relLt, "GreaterThan": relGt,
		"LessThanEquals": relLe, "GreaterThanEquals": relGe,
	}
	for prefix, kind := range map[string]opKind{"String": kindString, "Numeric": kindNumeric, "Timestamp": kindTimestamp} {
		for suffix, rel := range rels {
			name := prefix + suffix
			m[name] = operator{name: name, kind: kind, rel: rel}
			m[name+"Path"] = operator{name: name + "Path", kind: kind, rel: rel, isPath: true}
		}
	}
	m["BooleanEquals"] = operator{name: "BooleanEquals", kind: kindBoolean}
	m["BooleanEqualsPath"] = operator{name: "BooleanEqualsPath", kind: kindBoolean, isPath: true}
	m["StringMatches"] = operator{name: "StringMatches", kind: kindMatches}
	for name, kind := range map[string]opKind{
		"IsNull": kindIsNull, "IsPresent": kindIsPresent, "IsNumeric": kindIsNumeric,
		"IsString": kindIsString, "IsBoolean": kindIsBoolean, "IsTimestamp": kindIsTimestamp,
	} {
		m[name] = operator{name: name, kind: kind}
	}
	return m
}()

// unsupportedRuleFields are choice rule fields of other query languages or
// newer features.
var unsupportedRuleFields = map[string]bool{"Condition": true, "Output": true}

// compileRule compiles a choice rule object; top is true for the elements
// of Choices (which carry Next), false for nested rules.
func compileRule(o *jsonObject, top bool) (*choiceRule, error) {
	r := &choiceRule{}
	var exprs []string
	for _, k := range o.keys {
		switch {
		case k == "Variable" || k == "Comment":
		case k == "Next" || k == "Assign":
			if !top {
				return nil, errAt(o.at(k), "%s is only allowed in the top-level rules of Choices", k)
			}
		case k == "And" || k == "Or" || k == "Not":
			exprs = append(exprs, k)
		case operators[k].name != "":
			exprs = append(exprs, k)
		case unsupportedRuleFields[k]:
			return nil, errAt(o.at(k), "field %q is not supported by the local runtime", k)
		default:
			return nil, errAt(o.at(k), "unknown field %q in a choice rule", k)
		}
	}
	if top {
		next, err := o.requiredStr("Next")
		if err != nil {
			return nil, err
		}
		r.next = next
		if r.assign, err = compileAssign(o); err != nil {
			return nil, err
		}
	}
	if _, _, err := o.str("Comment"); err != nil {
		return nil, err
	}
	switch len(exprs) {
	case 0:
		return nil, errAt(o.place, "a choice rule needs a comparison operator or And, Or, Not")
	case 1:
	default:
		return nil, errAt(o.place, "a choice rule must have exactly one of And, Or, Not or a comparison operator, found %s", strings.Join(exprs, ", "))
	}
	key := exprs[0]
	switch key {
	case "And", "Or":
		if o.has("Variable") {
			return nil, errAt(o.at("Variable"), "not allowed with %s", key)
		}
		elems, _, err := o.array(key)
		if err != nil {
			return nil, err
		}
		if len(elems) == 0 {
			return nil, errAt(o.at(key), "must not be empty")
		}
		rules := make([]*choiceRule, len(elems))
		for i, e := range elems {
			sub, err := parseObject(index(o.at(key), i), e)
			if err != nil {
				return nil, err
			}
			if rules[i], err = compileRule(sub, false); err != nil {
				return nil, err
			}
		}
		if key == "And" {
			r.and = rules
		} else {
			r.or = rules
		}
		return r, nil
	case "Not":
		if o.has("Variable") {
			return nil, errAt(o.at("Variable"), "not allowed with Not")
		}
		sub, _, err := o.object("Not")
		if err != nil {
			return nil, err
		}
		if r.not, err = compileRule(sub, false); err != nil {
			return nil, err
		}
		return r, nil
	}
	return r, r.compileComparison(o, operators[key])
}

func (r *choiceRule) compileComparison(o *jsonObject, op operator) error {
	r.op = op
	variable, err := o.requiredStr("Variable")
	if err != nil {
		return err
	}
	if r.variable, err = parseQueryPath(variable); err != nil {
		return wrapAt(o.at("Variable"), err)
	}
	place := o.at(op.name)
	if op.isPath {
		s, _, err := o.str(op.name)
		if err != nil {
			return err
		}
		if r.valuePath, err = parsePath(s); err != nil {
			return wrapAt(place, err)
		}
		return nil
	}
	switch op.kind {
	case kindString, kindMatches, kindTimestamp:
		s, _, err := o.str(op.name)
		if err != nil {
			return err
		}
		switch op.kind {
		case kindString:
			r.value = s
		case kindMatches:
			r.pattern = compilePattern(s)
		case kindTimestamp:
			t, ok := parseTimestamp(s)
			if !ok {
				return errAt(place, "%q is not an RFC 3339 timestamp", s)
			}
			r.value = t
		}
	case kindNumeric:
		n, _, err := o.number(op.name)
		if err != nil {
			return err
		}
		rat, ok := numberRat(n)
		if !ok {
			return errAt(place, "invalid number %s", n)
		}
		r.value = rat
	default: // BooleanEquals and the Is* type tests
		b, _, err := o.boolean(op.name)
		if err != nil {
			return err
		}
		r.value = b
	}
	return nil
}

// compilePattern splits a StringMatches pattern on its unescaped *
// wildcards; \* is a literal star and \\ a literal backslash.
func compilePattern(p string) []string {
	var pieces []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p) && (p[i+1] == '*' || p[i+1] == '\\'):
			i++
			cur.WriteByte(p[i])
		case c == '*':
			pieces = append(pieces, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(pieces, cur.String())
}

// globMatch matches s against pattern pieces separated by wildcards.
func globMatch(pieces []string, s string) bool {
	if len(pieces) == 1 {
		return s == pieces[0]
	}
	if !strings.HasPrefix(s, pieces[0]) {
		return false
	}
	s = s[len(pieces[0]):]
	last := len(pieces) - 1
	for _, mid := range pieces[1:last] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, pieces[last])
}

// parseTimestamp parses an RFC 3339 timestamp (uppercase T, Z or offset).
func parseTimestamp(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// eval evaluates the rule against the Choice state's effective input.
func (r *choiceRule) eval(input any, env *evalEnv) (bool, error) {
	switch {
	case r.and != nil:
		for _, sub := range r.and {
			ok, err := sub.eval(input, env)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.or != nil:
		for _, sub := range r.or {
			ok, err := sub.eval(input, env)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.not != nil:
		ok, err := r.not.eval(input, env)
		return !ok && err == nil, err
	}

	v, found := resolve(r.variable, input, env)
	if r.op.kind == kindIsPresent {
		return found == r.value.(bool), nil
	}
	if !found {
		return false, newError(ErrRuntime, "Invalid path '%s': The choice state's condition path references an invalid value.", r.variable)
	}
	switch r.op.kind {
	case kindIsNull:
		return (v == nil) == r.value.(bool), nil
	case kindIsNumeric:
		_, ok := v.(json.Number)
		return ok == r.value.(bool), nil
	case kindIsString:
		_, ok := v.(string)
		return ok == r.value.(bool), nil
	case kindIsBoolean:
		_, ok := v.(bool)
		return ok == r.value.(bool), nil
	case kindIsTimestamp:
		s, ok := v.(string)
		if ok {
			_, ok = parseTimestamp(s)
		}
		return ok == r.value.(bool), nil
	case kindMatches:
		s, ok := v.(string)
		return ok && globMatch(r.pattern, s), nil
	}

	want := r.value
	if r.valuePath != nil {
		w, ok := resolve(r.valuePath, input, env)
		if !ok {
			return false, newError(ErrRuntime, "Invalid path '%s': The choice state's condition path references an invalid value.", r.valuePath)
		}
		var convOK bool
		if want, convOK = operand(r.op.kind, w); !convOK {
			return false, nil
		}
	}
	got, ok := operand(r.op.kind, v)
	if !ok {
		return false, nil
	}
	return compare(r.op.kind, r.op.rel, got, want), nil
}

// resolve reads a path from the input or, for $$ paths, the context.
func resolve(p *refPath, input any, env *evalEnv) (any, bool) {
	return p.eval(input, env)
}

// operand converts a JSON value to the operand type of an operator
// kind; ok is false when the value has the wrong type (the comparison is
// then false, not an error).
func operand(kind opKind, v any) (any, bool) {
	switch kind {
	case kindString:
		s, ok := v.(string)
		return s, ok
	case kindNumeric:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		return numberRat(n)
	case kindBoolean:
		b, ok := v.(bool)
		return b, ok
	case kindTimestamp:
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		return parseTimestamp(s)
	}
	return nil, false
}

// compare applies a relation to two operands of the same kind.
func compare(kind opKind, rel relation, a, b any) bool {
	var c int
	switch kind {
	case kindString:
		c = strings.Compare(a.(string), b.(string))
	case kindNumeric:
		c = a.(*big.Rat).Cmp(b.(*big.Rat))
	case kindTimestamp:
		c = a.(time.Time).Compare(b.(time.Time))
	case kindBoolean:
		if a.(bool) != b.(bool) {
			c = 1
		}
	default:
		return false
	}
	switch rel {
	case relEq:
		return c == 0
	case relLt:
		return c < 0
	case relGt:
		return c > 0
	case relLe:
		return c <= 0
	default:
		return c >= 0
	}
}
