package asl

import (
	"strings"
)

// template is a compiled payload template (Parameters, ResultSelector):
// fields whose name ends in ".$" take their value from a path or an
// intrinsic function; everything else is a literal. Objects and arrays are
// processed recursively.
type template interface {
	eval(input any, env *evalEnv) (any, error)
}

type objectTemplate struct {
	keys []string // output keys, ".$" stripped
	vals []template
}

type arrayTemplate []template

type literalTemplate struct{ v any }

type pathTemplate struct {
	field string // the original key, for messages
	path  *refPath
}

type intrinsicTemplate struct {
	call *intrinsicCall
}

// compileTemplate compiles a decoded payload template found at place.
func compileTemplate(place string, v any) (template, error) {
	switch x := v.(type) {
	case map[string]any:
		t := &objectTemplate{}
		seen := map[string]string{}
		for _, k := range sortedKeys(x) {
			out := k
			var val template
			var err error
			if strings.HasSuffix(k, ".$") {
				out = strings.TrimSuffix(k, ".$")
				val, err = compileDynamic(join(place, k), k, x[k])
			} else {
				val, err = compileTemplate(join(place, k), x[k])
			}
			if err != nil {
				return nil, err
			}
			if out == "" {
				return nil, errAt(join(place, k), "field name is empty once \".$\" is removed")
			}
			if prev, dup := seen[out]; dup {
				return nil, errAt(join(place, k), "field %q is also given as %q", out, prev)
			}
			seen[out] = k
			t.keys = append(t.keys, out)
			t.vals = append(t.vals, val)
		}
		return t, nil
	case []any:
		t := make(arrayTemplate, len(x))
		for i, e := range x {
			c, err := compileTemplate(index(place, i), e)
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	default:
		return literalTemplate{v: v}, nil
	}
}

// compileDynamic compiles the value of a "name.$" field.
func compileDynamic(place, field string, v any) (template, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errAt(place, "must be a string holding a path or an intrinsic function, got %s", typeName(v))
	}
	switch {
	case strings.HasPrefix(s, "$"):
		p, err := parseQueryPath(s)
		if err != nil {
			return nil, wrapAt(place, err)
		}
		return &pathTemplate{field: field, path: p}, nil
	case strings.HasPrefix(s, "States."):
		c, err := parseIntrinsic(s)
		if err != nil {
			return nil, wrapAt(place, err)
		}
		return &intrinsicTemplate{call: c}, nil
	default:
		return nil, errAt(place, "%q is neither a path nor an intrinsic function", s)
	}
}

func (t *objectTemplate) eval(input any, env *evalEnv) (any, error) {
	out := make(map[string]any, len(t.keys))
	for i, k := range t.keys {
		v, err := t.vals[i].eval(input, env)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (t arrayTemplate) eval(input any, env *evalEnv) (any, error) {
	out := make([]any, len(t))
	for i, e := range t {
		v, err := e.eval(input, env)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (t literalTemplate) eval(any, *evalEnv) (any, error) { return t.v, nil }

func (t *pathTemplate) eval(input any, env *evalEnv) (any, error) {
	root := t.path.root(input, env)
	v, ok := t.path.eval(input, env)
	if !ok {
		return nil, newError(ErrRuntime, "The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", t.path, t.field, mustEncode(root))
	}
	return v, nil
}

func (t *intrinsicTemplate) eval(input any, env *evalEnv) (any, error) {
	return t.call.eval(input, env)
}
