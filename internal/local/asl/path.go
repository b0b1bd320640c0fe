package asl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ohler55/ojg/jp"
)

// refPath is a parsed reference path: "$", "$.a.b", "$.a[0]", "$['a b']",
// or the same rooted at "$$" (the context object).
type refPath struct {
	text     string
	context  bool   // rooted at $$
	variable string // rooted at the variable $name
	segs     []pathSeg

	// A Path beyond a reference path (see query.go): segs is empty.
	query      jp.Expr
	indefinite bool // the result is always an array
	union      bool // keep the union's order
}

// pathSeg is one step of a reference path: an object field or an array
// index.
type pathSeg struct {
	field   string
	index   int
	isIndex bool
}

// parsePath parses a reference path. JSONPath features beyond reference
// paths (wildcards, filters, slices, recursive descent) are rejected.
func parsePath(text string) (*refPath, error) {
	p := &refPath{text: text}
	var rest string
	switch {
	case strings.HasPrefix(text, "$$"):
		p.context = true
		rest = text[2:]
	case strings.HasPrefix(text, "$"):
		rest = text[1:]
		if n := variableNameLen(rest); n > 0 {
			p.variable, rest = rest[:n], rest[n:]
		}
	default:
		return nil, fmt.Errorf("invalid path %q: must start with \"$\"", text)
	}
	for rest != "" {
		var seg pathSeg
		var err error
		switch rest[0] {
		case '.':
			seg, rest, err = parseDotField(rest[1:])
		case '[':
			seg, rest, err = parseBracket(rest[1:])
		default:
			err = fmt.Errorf("unexpected %q", rest[:1])
		}
		if err != nil {
			return nil, fmt.Errorf("invalid path %q: %w", text, err)
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

// reservedPathChars may not appear in a dot-notation field name.
const reservedPathChars = "[]'\"*()?@, \t\r\n"

func parseDotField(s string) (pathSeg, string, error) {
	end := strings.IndexAny(s, ".[")
	if end < 0 {
		end = len(s)
	}
	name := s[:end]
	switch {
	case name == "" && strings.HasPrefix(s, "."):
		return pathSeg{}, "", errors.New("recursive descent (..) is not supported")
	case name == "":
		return pathSeg{}, "", errors.New("empty field name")
	case name == "*":
		return pathSeg{}, "", errors.New("wildcards are not supported")
	case strings.ContainsAny(name, reservedPathChars):
		return pathSeg{}, "", fmt.Errorf("field name %q needs bracket notation ['...']", name)
	}
	return pathSeg{field: name}, s[end:], nil
}

func parseBracket(s string) (pathSeg, string, error) {
	if s == "" {
		return pathSeg{}, "", errors.New("unterminated [")
	}
	if q := s[0]; q == '\'' || q == '"' {
		var name strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			// A backslash is an ordinary character: AWS reads
			// $['Test\"Name'] as the field named Test\"Name.
			switch {
			case c == q:
				if i+1 >= len(s) || s[i+1] != ']' {
					return pathSeg{}, "", errors.New("expected ] after quoted field name")
				}
				return pathSeg{field: name.String()}, s[i+2:], nil
			default:
				name.WriteByte(c)
			}
		}
		return pathSeg{}, "", errors.New("unterminated quoted field name")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return pathSeg{}, "", errors.New("unterminated [")
	}
	inner := s[:end]
	for _, c := range inner {
		if c < '0' || c > '9' {
			return pathSeg{}, "", fmt.Errorf("[%s] is not supported (only [index] and ['field'])", inner)
		}
	}
	if inner == "" {
		return pathSeg{}, "", errors.New("empty []")
	}
	i, err := strconv.Atoi(inner)
	if err != nil {
		return pathSeg{}, "", fmt.Errorf("index [%s] out of range", inner)
	}
	return pathSeg{index: i, isIndex: true}, s[end+1:], nil
}

// String returns the path as written.
func (p *refPath) String() string { return p.text }

// canonical renders the path in bracket notation, as Step Functions does in
// its error messages: $['a']['b'][0].
func (p *refPath) canonical() string {
	if p.query != nil {
		return p.text
	}
	var b strings.Builder
	switch {
	case p.context:
		b.WriteString("$$")
	case p.variable != "":
		b.WriteString("$" + p.variable)
	default:
		b.WriteString("$")
	}
	for _, s := range p.segs {
		if s.isIndex {
			fmt.Fprintf(&b, "[%d]", s.index)
		} else {
			fmt.Fprintf(&b, "['%s']", s.field)
		}
	}
	return b.String()
}

// get resolves the path against a root value.
func (p *refPath) get(root any) (any, bool) {
	if p.query != nil {
		return p.queryGet(root)
	}
	cur := root
	for _, s := range p.segs {
		if s.isIndex {
			arr, ok := cur.([]any)
			if !ok || s.index >= len(arr) {
				return nil, false
			}
			cur = arr[s.index]
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[s.field]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// set returns a copy of root with value placed at the path, creating
// missing intermediate objects. Containers along the path are copied, root
// itself is not modified. It fails when the path crosses a value that is
// not an object (or an array, for an index) or an index out of range.
func (p *refPath) set(root, value any) (any, error) {
	return setAt(root, p.segs, value, "$")
}

func setAt(cur any, segs []pathSeg, value any, at string) (any, error) {
	if len(segs) == 0 {
		return value, nil
	}
	s := segs[0]
	if s.isIndex {
		arr, ok := cur.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an array", at, typeName(cur))
		}
		if s.index >= len(arr) {
			return nil, fmt.Errorf("index %d is out of range for %s (length %d)", s.index, at, len(arr))
		}
		child, err := setAt(arr[s.index], segs[1:], value, fmt.Sprintf("%s[%d]", at, s.index))
		if err != nil {
			return nil, err
		}
		out := make([]any, len(arr))
		copy(out, arr)
		out[s.index] = child
		return out, nil
	}
	obj, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not an object", at, typeName(cur))
	}
	childAt := at + "." + s.field
	existing, present := obj[s.field]
	if !present && len(segs) > 1 {
		existing = map[string]any{}
	}
	child, err := setAt(existing, segs[1:], value, childAt)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		out[k] = v
	}
	out[s.field] = child
	return out, nil
}

// variableNameLen is the length of the variable name at the start of s
// (after the "$"): a letter or "_", then letters, digits and "_"; 0 when
// s does not start with one.
func variableNameLen(s string) int {
	n := 0
	for n < len(s) {
		c, size := utf8.DecodeRuneInString(s[n:])
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c > 127 && c != utf8.RuneError)
		if !letter && (n == 0 || c < '0' || c > '9') {
			break
		}
		n += size
	}
	return n
}
