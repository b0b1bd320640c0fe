package asl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ohler55/ojg/jp"
)

// Paths beyond reference paths (wildcards, slices, unions, filters and
// recursive descent) are evaluated by ojg's JSONPath. AWS accepts them
// where the language takes a Path (InputPath, OutputPath, the ".$" fields
// of Parameters, ResultSelector and ItemSelector, intrinsic arguments,
// a Choice rule's Variable), not where it takes a reference path
// (ResultPath, ItemsPath, the ...Path comparisons of Choice, Wait's
// SecondsPath and TimestampPath). Plain paths stay with parsePath, which
// reads bracketed names as AWS does (a backslash is an ordinary
// character), where ojg would read an escape.

// parseQueryPath parses a Path: a reference path, or any JSONPath ojg
// reads that uses only the operators AWS accepts.
func parseQueryPath(text string) (*refPath, error) {
	p, err := parsePath(text)
	if err == nil {
		return p, nil
	}
	q := &refPath{text: text}
	src := text
	if strings.HasPrefix(text, "$$") {
		q.context = true
		src = text[1:]
	} else if n := variableNameLen(text[min(1, len(text)):]); n > 0 {
		q.variable = text[1 : 1+n]
		src = "$" + text[1+n:]
	}
	if !strings.HasPrefix(src, "$") {
		return nil, err
	}
	x, qerr := jp.ParseString(src)
	if qerr != nil {
		return nil, err
	}
	for _, f := range x {
		switch f.(type) {
		case jp.Root, jp.Child, jp.Nth, jp.Bracket:
		case jp.Wildcard, jp.Descent, jp.Slice, *jp.Filter:
			q.indefinite = true
		case jp.Union:
			q.indefinite, q.union = true, true
		default:
			return nil, fmt.Errorf("invalid path %q: %s is not supported", text, f)
		}
	}
	q.query = x
	return q, nil
}

// queryGet evaluates a JSONPath query. An indefinite path (one with a
// wildcard, slice, union, filter or recursive descent) always gives an
// array, empty when nothing matches, as AWS's JSONPath does; a definite
// one (such as $.a[-1]) gives its value or no match.
func (p *refPath) queryGet(root any) (any, bool) {
	locs := p.query.Locate(toQueryValue(root), 0)
	if !p.union {
		// ojg reports filter matches in reverse; AWS gives document order.
		sort.SliceStable(locs, func(i, j int) bool { return locationLess(locs[i], locs[j]) })
	}
	out := make([]any, 0, len(locs))
	for _, loc := range locs {
		if v, ok := locationGet(loc, root); ok {
			out = append(out, v)
		}
	}
	if p.indefinite {
		return out, true
	}
	if len(out) == 0 {
		return nil, false
	}
	return out[0], true
}

// toQueryValue converts a value to the types ojg compares: json.Number
// becomes int64 or float64. The original value is read back by location,
// so numbers keep their exact text.
func toQueryValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toQueryValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toQueryValue(e)
		}
		return out
	default:
		return v
	}
}

// locationGet reads a normalized location ($, .name, [n]) from root.
func locationGet(loc jp.Expr, root any) (any, bool) {
	cur := root
	for _, f := range loc {
		switch x := f.(type) {
		case jp.Root:
		case jp.Child:
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = obj[string(x)]; !ok {
				return nil, false
			}
		case jp.Nth:
			arr, ok := cur.([]any)
			i := int(x)
			if i < 0 {
				i += len(arr)
			}
			if !ok || i < 0 || i >= len(arr) {
				return nil, false
			}
			cur = arr[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// locationLess orders locations as a document walk does: indexes by
// number, names by text, a container before its members.
func locationLess(a, b jp.Expr) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		switch x := a[i].(type) {
		case jp.Nth:
			if y, ok := b[i].(jp.Nth); ok && x != y {
				return x < y
			}
		case jp.Child:
			if y, ok := b[i].(jp.Child); ok && x != y {
				return x < y
			}
		}
	}
	return len(a) < len(b)
}
