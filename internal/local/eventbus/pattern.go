package eventbus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sort"
	"strings"
)

// ErrInvalidPattern is matched (errors.Is) by every *PatternError.
var ErrInvalidPattern = errors.New("eventbus: invalid event pattern")

// PatternError reports an event pattern EventBridge would reject, with the
// place in the pattern.
type PatternError struct {
	// Path is the dotted field path, empty for the pattern as a whole.
	Path   string
	Reason string
}

func (e *PatternError) Error() string {
	if e.Path == "" {
		return "event pattern: " + e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Is reports whether target is ErrInvalidPattern.
func (e *PatternError) Is(target error) bool { return target == ErrInvalidPattern }

// Pattern is a compiled EventBridge event pattern.
//
// Matching follows EventBridge content filtering: every field of the pattern
// must match (AND); a field whose pattern is an object matches the nested
// fields of the event; a field whose pattern is an array matches when any of
// its values or operators matches (OR) any of the field's values, an array in
// the event contributing each of its elements, and an array of objects
// matching when one element matches the whole nested pattern. Exact values
// are typed: "5" does not match 5, numbers compare by value (5 matches 5.0).
//
// Operators: {"prefix": s}, {"suffix": s} (each also with
// {"equals-ignore-case": s} as operand), {"equals-ignore-case": s},
// {"anything-but": value | [values] | {"prefix"|"suffix"|"equals-ignore-case": ...}},
// {"exists": bool} and {"numeric": [op, n, ...]} with op one of = > >= < <=.
// "anything-but" and the value operators never match a missing field;
// {"exists": false} matches only a missing one (a field whose value is an
// object or an empty array has no value and counts as missing, as in
// EventBridge, where only leaves exist).
type Pattern struct {
	root   objectPattern
	source string
}

// String returns the pattern as compiled.
func (p *Pattern) String() string { return p.source }

// objectPattern is a pattern object: fields sorted by key.
type objectPattern []fieldPattern

type fieldPattern struct {
	key    string
	object objectPattern // nested fields, or
	leaf   []matcher     // alternatives for the field's values
}

// matcher matches the values of one field. values holds the field's leaf
// values (string, json.Number, bool or nil); it is empty when the field is
// missing.
type matcher interface {
	matchValues(values []any) bool
}

// Compile parses and checks an event pattern.
func Compile(pattern []byte) (*Pattern, error) {
	v, err := decodeJSON(pattern)
	if err != nil {
		return nil, &PatternError{Reason: "not valid JSON: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &PatternError{Reason: "must be a JSON object"}
	}
	root, err := compileObject("", obj)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pattern); err != nil {
		return nil, &PatternError{Reason: "not valid JSON: " + err.Error()}
	}
	return &Pattern{root: root, source: compact.String()}, nil
}

// MustCompile is Compile for patterns known to be valid; it panics on error.
func MustCompile(pattern string) *Pattern {
	p, err := Compile([]byte(pattern))
	if err != nil {
		panic(err)
	}
	return p
}

// Match reports whether event, a JSON object, matches the pattern.
func (p *Pattern) Match(event []byte) (bool, error) {
	v, err := decodeJSON(event)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return false, fmt.Errorf("%w: not a JSON object", ErrInvalidEvent)
	}
	return p.matchEvent(obj), nil
}

func (p *Pattern) matchEvent(event map[string]any) bool {
	return p.root.match(event, true)
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the top-level value")
	}
	return v, nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func compileObject(path string, obj map[string]any) (objectPattern, error) {
	if len(obj) == 0 {
		return nil, &PatternError{Path: path, Reason: "empty objects are not allowed"}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(objectPattern, 0, len(keys))
	for _, k := range keys {
		p := joinPath(path, k)
		switch v := obj[k].(type) {
		case map[string]any:
			nested, err := compileObject(p, v)
			if err != nil {
				return nil, err
			}
			out = append(out, fieldPattern{key: k, object: nested})
		case []any:
			leaf, err := compileLeaf(p, v)
			if err != nil {
				return nil, err
			}
			out = append(out, fieldPattern{key: k, leaf: leaf})
		default:
			return nil, &PatternError{Path: p, Reason: "must be an array or an object"}
		}
	}
	return out, nil
}

func compileLeaf(path string, values []any) ([]matcher, error) {
	if len(values) == 0 {
		return nil, &PatternError{Path: path, Reason: "empty arrays are not allowed"}
	}
	var out []matcher
	var exact exactSet
	for _, v := range values {
		switch v := v.(type) {
		case map[string]any:
			m, err := compileOperator(path, v)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		case []any:
			return nil, &PatternError{Path: path, Reason: "nested arrays are not allowed"}
		default:
			exact.add(v)
		}
	}
	if !exact.empty() {
		out = append(out, exact)
	}
	return out, nil
}

func compileOperator(path string, op map[string]any) (matcher, error) {
	if len(op) != 1 {
		return nil, &PatternError{Path: path, Reason: fmt.Sprintf("an operator object needs exactly one key, got %d", len(op))}
	}
	for name, arg := range op {
		switch name {
		case "prefix", "suffix":
			s, fold, err := stringOperand(path, name, arg)
			if err != nil {
				return nil, err
			}
			return affixMatcher{suffix: name == "suffix", s: s, fold: fold}, nil
		case "equals-ignore-case":
			s, ok := arg.(string)
			if !ok {
				return nil, &PatternError{Path: path, Reason: `"equals-ignore-case" needs a string`}
			}
			return foldMatcher{s: s}, nil
		case "exists":
			b, ok := arg.(bool)
			if !ok {
				return nil, &PatternError{Path: path, Reason: `"exists" needs true or false`}
			}
			return existsMatcher(b), nil
		case "numeric":
			return compileNumeric(path, arg)
		case "anything-but":
			return compileAnythingBut(path, arg)
		default:
			return nil, &PatternError{Path: path, Reason: fmt.Sprintf("unsupported operator %q", name)}
		}
	}
	panic("unreachable")
}

// stringOperand reads the operand of prefix and suffix: a string or
// {"equals-ignore-case": string}.
func stringOperand(path, op string, arg any) (s string, fold bool, err error) {
	switch a := arg.(type) {
	case string:
		return a, false, nil
	case map[string]any:
		if v, ok := a["equals-ignore-case"].(string); ok && len(a) == 1 {
			return v, true, nil
		}
	}
	return "", false, &PatternError{Path: path, Reason: fmt.Sprintf(`%q needs a string or {"equals-ignore-case": string}`, op)}
}

func compileAnythingBut(path string, arg any) (matcher, error) {
	bad := &PatternError{Path: path, Reason: `"anything-but" needs a string, number or array`}
	switch a := arg.(type) {
	case string, json.Number:
		var set exactSet
		set.add(a)
		return anythingBut{not: set}, nil
	case []any:
		if len(a) == 0 {
			return nil, &PatternError{Path: path, Reason: `"anything-but" needs a non-empty array`}
		}
		var set exactSet
		for _, v := range a {
			switch v.(type) {
			case string, json.Number:
				set.add(v)
			default:
				return nil, &PatternError{Path: path, Reason: `"anything-but" array needs strings or numbers`}
			}
		}
		return anythingBut{not: set}, nil
	case map[string]any:
		if len(a) != 1 {
			return nil, &PatternError{Path: path, Reason: `"anything-but" object needs exactly one of "prefix", "suffix", "equals-ignore-case"`}
		}
		for name, v := range a {
			switch name {
			case "prefix", "suffix":
				s, ok := v.(string)
				if !ok {
					return nil, &PatternError{Path: path, Reason: fmt.Sprintf(`"anything-but" %q needs a string`, name)}
				}
				return anythingBut{affix: &affixMatcher{suffix: name == "suffix", s: s}}, nil
			case "equals-ignore-case":
				var folds []string
				switch v := v.(type) {
				case string:
					folds = []string{v}
				case []any:
					for _, e := range v {
						s, ok := e.(string)
						if !ok {
							return nil, &PatternError{Path: path, Reason: `"anything-but" "equals-ignore-case" needs a string or an array of strings`}
						}
						folds = append(folds, s)
					}
				}
				if len(folds) == 0 {
					return nil, &PatternError{Path: path, Reason: `"anything-but" "equals-ignore-case" needs a string or an array of strings`}
				}
				return anythingBut{folds: folds}, nil
			default:
				return nil, &PatternError{Path: path, Reason: fmt.Sprintf(`"anything-but" does not support %q`, name)}
			}
		}
	}
	return nil, bad
}

func compileNumeric(path string, arg any) (matcher, error) {
	list, ok := arg.([]any)
	if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
		return nil, &PatternError{Path: path, Reason: `"numeric" needs an array of one or two [operator, number] pairs`}
	}
	var m numericMatcher
	for i := 0; i < len(list); i += 2 {
		op, ok := list[i].(string)
		if !ok {
			return nil, &PatternError{Path: path, Reason: fmt.Sprintf(`"numeric" operator at %d must be a string`, i)}
		}
		n, ok := list[i+1].(json.Number)
		if !ok {
			return nil, &PatternError{Path: path, Reason: fmt.Sprintf(`"numeric" %q needs a number`, op)}
		}
		f, _, err := big.ParseFloat(string(n), 10, 64, big.ToNearestEven)
		if err != nil {
			return nil, &PatternError{Path: path, Reason: fmt.Sprintf(`"numeric" value %s: %v`, n, err)}
		}
		c := comparison{op: op, value: f}
		switch op {
		case "=":
			if len(list) != 2 {
				return nil, &PatternError{Path: path, Reason: `"numeric" "=" cannot be combined with other operators`}
			}
		case ">", ">=":
			if m.lower != nil {
				return nil, &PatternError{Path: path, Reason: `"numeric" has two lower bounds`}
			}
			m.lower = &c
			continue
		case "<", "<=":
			if m.upper != nil {
				return nil, &PatternError{Path: path, Reason: `"numeric" has two upper bounds`}
			}
			m.upper = &c
			continue
		default:
			return nil, &PatternError{Path: path, Reason: fmt.Sprintf(`"numeric" operator %q is not one of =, >, >=, <, <=`, op)}
		}
		m.equal = &c
	}
	if m.lower != nil && m.upper != nil && m.lower.value.Cmp(m.upper.value) > 0 {
		return nil, &PatternError{Path: path, Reason: `"numeric" range is empty`}
	}
	return m, nil
}

func (o objectPattern) match(v any, present bool) bool {
	obj, _ := v.(map[string]any)
	for _, f := range o {
		child, ok := obj[f.key]
		if !f.matchNode(child, present && ok) {
			return false
		}
	}
	return true
}

func (f fieldPattern) matchNode(v any, present bool) bool {
	if f.object != nil {
		if arr, ok := v.([]any); ok && present && len(arr) > 0 {
			for _, e := range arr {
				if f.object.match(e, true) {
					return true
				}
			}
			return false
		}
		return f.object.match(v, present)
	}
	var values []any
	if present {
		values = leaves(v, nil)
	}
	for _, m := range f.leaf {
		if m.matchValues(values) {
			return true
		}
	}
	return false
}

// leaves appends the leaf values of v: v itself for a scalar, the leaves of
// each element for an array, none for an object.
func leaves(v any, out []any) []any {
	switch v := v.(type) {
	case map[string]any:
		return out
	case []any:
		for _, e := range v {
			out = leaves(e, out)
		}
		return out
	default:
		return append(out, v)
	}
}

// exactSet matches exact values: strings, numbers (by value), booleans and
// null.
type exactSet struct {
	strings map[string]bool
	numbers []*big.Float
	// literals are numbers beyond big.Float's exponent range (1e99999999999),
	// matched by their text.
	literals map[string]bool
	bools    [2]bool // false, true
	null     bool
}

func (s *exactSet) add(v any) {
	switch v := v.(type) {
	case string:
		if s.strings == nil {
			s.strings = make(map[string]bool)
		}
		s.strings[v] = true
	case json.Number:
		if f, ok := parseNumber(v); ok {
			s.numbers = append(s.numbers, f)
		} else {
			if s.literals == nil {
				s.literals = make(map[string]bool)
			}
			s.literals[string(v)] = true
		}
	case bool:
		if v {
			s.bools[1] = true
		} else {
			s.bools[0] = true
		}
	case nil:
		s.null = true
	}
}

func (s exactSet) empty() bool {
	return len(s.strings) == 0 && len(s.numbers) == 0 && len(s.literals) == 0 && !s.bools[0] && !s.bools[1] && !s.null
}

func (s exactSet) has(v any) bool {
	switch v := v.(type) {
	case string:
		return s.strings[v]
	case json.Number:
		f, ok := parseNumber(v)
		if !ok {
			return s.literals[string(v)]
		}
		return slices.ContainsFunc(s.numbers, func(n *big.Float) bool { return n.Cmp(f) == 0 })
	case bool:
		if v {
			return s.bools[1]
		}
		return s.bools[0]
	case nil:
		return s.null
	}
	return false
}

func (s exactSet) matchValues(values []any) bool {
	return slices.ContainsFunc(values, s.has)
}

func parseNumber(n json.Number) (*big.Float, bool) {
	f, _, err := big.ParseFloat(string(n), 10, 64, big.ToNearestEven)
	return f, err == nil
}

type affixMatcher struct {
	suffix bool
	s      string
	fold   bool
}

func (m affixMatcher) has(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	if m.fold {
		s, m.s = strings.ToLower(s), strings.ToLower(m.s)
	}
	if m.suffix {
		return strings.HasSuffix(s, m.s)
	}
	return strings.HasPrefix(s, m.s)
}

func (m affixMatcher) matchValues(values []any) bool {
	return slices.ContainsFunc(values, m.has)
}

type foldMatcher struct{ s string }

func (m foldMatcher) matchValues(values []any) bool {
	return slices.ContainsFunc(values, func(v any) bool {
		s, ok := v.(string)
		return ok && strings.EqualFold(s, m.s)
	})
}

type existsMatcher bool

func (m existsMatcher) matchValues(values []any) bool {
	return (len(values) > 0) == bool(m)
}

// anythingBut matches a value that is none of not, does not have affix, or
// equals none of folds ignoring case. It never matches a missing field.
type anythingBut struct {
	not   exactSet
	affix *affixMatcher
	folds []string
}

func (m anythingBut) matchValues(values []any) bool {
	return slices.ContainsFunc(values, func(v any) bool {
		switch {
		case m.affix != nil:
			return !m.affix.has(v)
		case m.folds != nil:
			s, ok := v.(string)
			return !ok || !slices.ContainsFunc(m.folds, func(f string) bool { return strings.EqualFold(f, s) })
		default:
			return !m.not.has(v)
		}
	})
}

type comparison struct {
	op    string
	value *big.Float
}

func (c comparison) holds(x *big.Float) bool {
	r := x.Cmp(c.value)
	switch c.op {
	case "=":
		return r == 0
	case ">":
		return r > 0
	case ">=":
		return r >= 0
	case "<":
		return r < 0
	default: // "<="
		return r <= 0
	}
}

type numericMatcher struct {
	equal, lower, upper *comparison
}

func (m numericMatcher) matchValues(values []any) bool {
	return slices.ContainsFunc(values, func(v any) bool {
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		x, ok := parseNumber(n)
		if !ok {
			return false
		}
		for _, c := range []*comparison{m.equal, m.lower, m.upper} {
			if c != nil && !c.holds(x) {
				return false
			}
		}
		return true
	})
}
