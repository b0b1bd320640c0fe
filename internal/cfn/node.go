package cfn

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kind is the shape of a Node.
type Kind uint8

// Node kinds.
const (
	KindNull Kind = iota
	KindScalar
	KindSequence
	KindMapping
	// KindIntrinsic is an intrinsic function call, written either in short
	// form (!Ref X) or long form (Ref: X). Both parse to the same node:
	// Fn holds the long-form name ("Ref", "Condition", "Fn::GetAtt", ...)
	// and Arg its argument.
	KindIntrinsic
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindScalar:
		return "scalar"
	case KindSequence:
		return "list"
	case KindMapping:
		return "map"
	case KindIntrinsic:
		return "intrinsic function"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Node is one value of a template with its position. A nil *Node is a
// valid, absent value: its methods return zero values.
type Node struct {
	Kind Kind
	// Tag is the YAML core tag of a scalar: "!!str", "!!int", "!!float"
	// or "!!bool".
	Tag string
	// Value is the text of a scalar.
	Value string
	// Items are the elements of a sequence.
	Items []*Node
	// Keys are the keys of a mapping in document order.
	Keys []string
	// Fn and Arg describe an intrinsic function call.
	Fn  string
	Arg *Node
	// Line and Column are 1-based positions in the file.
	Line, Column int
	// Path names the node inside the template, for example
	// "Resources.Table.Properties.KeySchema[0].AttributeName".
	Path string

	fields map[string]*Node
}

// Get returns the value of key in a mapping, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != KindMapping {
		return nil
	}
	return n.fields[key]
}

// Has reports whether a mapping holds key.
func (n *Node) Has(key string) bool { return n.Get(key) != nil }

// Is reports whether the node is present and of kind k.
func (n *Node) Is(k Kind) bool { return n != nil && n.Kind == k }

// IsNull reports whether the node is absent or YAML null.
func (n *Node) IsNull() bool { return n == nil || n.Kind == KindNull }

// Str returns the text of a scalar node and whether the node is a scalar.
func (n *Node) Str() (string, bool) {
	if n == nil || n.Kind != KindScalar {
		return "", false
	}
	return n.Value, true
}

// set adds or replaces a mapping entry, keeping key order.
func (n *Node) set(key string, v *Node) {
	if n.fields == nil {
		n.fields = map[string]*Node{}
	}
	if _, ok := n.fields[key]; !ok {
		n.Keys = append(n.Keys, key)
	}
	n.fields[key] = v
}

func newMapping(path string, line, col int) *Node {
	return &Node{Kind: KindMapping, Path: path, Line: line, Column: col, fields: map[string]*Node{}}
}

// shortTags maps the YAML short-form tags to long-form function names.
var shortTags = map[string]string{
	"!Ref":         "Ref",
	"!Condition":   "Condition",
	"!Base64":      "Fn::Base64",
	"!Cidr":        "Fn::Cidr",
	"!FindInMap":   "Fn::FindInMap",
	"!GetAtt":      "Fn::GetAtt",
	"!GetAZs":      "Fn::GetAZs",
	"!ImportValue": "Fn::ImportValue",
	"!Join":        "Fn::Join",
	"!Select":      "Fn::Select",
	"!Split":       "Fn::Split",
	"!Sub":         "Fn::Sub",
	"!Transform":   "Fn::Transform",
	"!If":          "Fn::If",
	"!Equals":      "Fn::Equals",
	"!Not":         "Fn::Not",
	"!And":         "Fn::And",
	"!Or":          "Fn::Or",
}

// longForms are the intrinsic function names recognised as the single key
// of a mapping. Ref and the Fn:: functions are; "Condition" is not, since
// it is also an ordinary key (it is recognised only inside conditions).
var longForms = map[string]bool{
	"Ref":              true,
	"Fn::Base64":       true,
	"Fn::Cidr":         true,
	"Fn::FindInMap":    true,
	"Fn::GetAtt":       true,
	"Fn::GetAZs":       true,
	"Fn::ImportValue":  true,
	"Fn::Join":         true,
	"Fn::Select":       true,
	"Fn::Split":        true,
	"Fn::Sub":          true,
	"Fn::Transform":    true,
	"Fn::If":           true,
	"Fn::Equals":       true,
	"Fn::Not":          true,
	"Fn::And":          true,
	"Fn::Or":           true,
	"Fn::Length":       true,
	"Fn::ToJsonString": true,
}

// converter turns yaml.v3 nodes into Nodes, normalising intrinsic
// functions and rejecting YAML the template format does not allow.
type converter struct {
	file string
	// longFormOnly rejects short-form tags, which AWS::Include snippets
	// cannot use.
	longFormOnly bool
}

func (c *converter) errf(y *yaml.Node, path string, sentinel error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	var err error
	if msg == "" {
		err = sentinel
	} else {
		err = fmt.Errorf("%w: %s", sentinel, msg)
	}
	return &Error{File: c.file, Line: y.Line, Path: path, Err: err}
}

func childPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func (c *converter) convert(y *yaml.Node, path string) (*Node, error) {
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &Node{Kind: KindNull, Line: y.Line, Column: y.Column, Path: path}, nil
		}
		return c.convert(y.Content[0], path)
	case yaml.AliasNode:
		return nil, c.errf(y, path, ErrSyntax, "YAML aliases are not allowed in CloudFormation templates")
	}
	tag := y.ShortTag()
	if strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!") {
		return c.shortForm(y, tag, path)
	}
	switch y.Kind {
	case yaml.ScalarNode:
		n := &Node{Kind: KindScalar, Value: y.Value, Line: y.Line, Column: y.Column, Path: path}
		switch tag {
		case "!!null":
			n.Kind = KindNull
		case "!!int", "!!float", "!!bool":
			n.Tag = tag
		default:
			// !!str, and !!timestamp or !!binary, which templates treat
			// as plain strings.
			n.Tag = "!!str"
		}
		return n, nil
	case yaml.SequenceNode:
		n := &Node{Kind: KindSequence, Line: y.Line, Column: y.Column, Path: path, Items: make([]*Node, 0, len(y.Content))}
		for i, item := range y.Content {
			v, err := c.convert(item, indexPath(path, i))
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, v)
		}
		return n, nil
	case yaml.MappingNode:
		return c.mapping(y, path)
	}
	return nil, c.errf(y, path, ErrSyntax, "unexpected YAML node kind %d", y.Kind)
}

func (c *converter) mapping(y *yaml.Node, path string) (*Node, error) {
	n := newMapping(path, y.Line, y.Column)
	for i := 0; i+1 < len(y.Content); i += 2 {
		k, v := y.Content[i], y.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, c.errf(k, path, ErrSyntax, "mapping keys must be strings")
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			return nil, c.errf(k, path, ErrSyntax, "YAML merge keys are not allowed in CloudFormation templates")
		}
		if _, dup := n.fields[k.Value]; dup {
			return nil, c.errf(k, childPath(path, k.Value), ErrSyntax, "duplicate key %q", k.Value)
		}
		val, err := c.convert(v, childPath(path, k.Value))
		if err != nil {
			return nil, err
		}
		// A value is placed where its key is: a block mapping or list
		// starts on the next line, but errors about it belong to the key.
		val.Line, val.Column = k.Line, k.Column
		n.set(k.Value, val)
	}
	if len(n.Keys) == 1 {
		key := n.Keys[0]
		if longForms[key] {
			return c.intrinsic(y, key, n.fields[key], path)
		}
		if strings.HasPrefix(key, "Fn::") {
			return nil, c.errf(y.Content[0], path, ErrUnknownFunction, "%s", key)
		}
	}
	return n, nil
}

// shortForm converts a node carrying a short-form tag.
func (c *converter) shortForm(y *yaml.Node, tag, path string) (*Node, error) {
	fn, ok := shortTags[tag]
	if ok && c.longFormOnly {
		return nil, c.errf(y, path, ErrSyntax, "%s: AWS::Include snippets take intrinsic functions in long form only (%s:)", tag, fn)
	}
	if !ok {
		return nil, &Error{File: c.file, Line: y.Line, Path: path, Err: fmt.Errorf("%w %s", ErrUnknownTag, tag)}
	}
	untagged := *y
	untagged.Tag = ""
	if y.Kind == yaml.ScalarNode {
		// A scalar after a tag is a string, whatever it looks like.
		untagged.Tag = "!!str"
	}
	argPath := childPath(path, fn)
	arg, err := c.convert(&untagged, argPath)
	if err != nil {
		return nil, err
	}
	return c.intrinsic(y, fn, arg, path)
}

// intrinsic builds an intrinsic node and checks the argument shapes that
// can be checked without resolving anything.
func (c *converter) intrinsic(y *yaml.Node, fn string, arg *Node, path string) (*Node, error) {
	n := &Node{Kind: KindIntrinsic, Fn: fn, Arg: arg, Line: y.Line, Column: y.Column, Path: path}
	switch fn {
	case "Ref", "Condition":
		if arg.Kind != KindScalar {
			return nil, c.errf(y, path, ErrInvalid, "%s takes a name, not a %s", fn, arg.Kind)
		}
	case "Fn::GetAtt":
		if arg.Kind == KindScalar {
			// !GetAtt Resource.Attribute: the attribute may itself contain
			// dots (Endpoint.Address), so split at the first one.
			res, attr, ok := strings.Cut(arg.Value, ".")
			if !ok || res == "" || attr == "" {
				return nil, c.errf(y, path, ErrInvalid, "Fn::GetAtt %q must be LogicalId.Attribute", arg.Value)
			}
			n.Arg = &Node{Kind: KindSequence, Line: arg.Line, Column: arg.Column, Path: arg.Path, Items: []*Node{
				{Kind: KindScalar, Tag: "!!str", Value: res, Line: arg.Line, Column: arg.Column, Path: indexPath(arg.Path, 0)},
				{Kind: KindScalar, Tag: "!!str", Value: attr, Line: arg.Line, Column: arg.Column, Path: indexPath(arg.Path, 1)},
			}}
		} else if arg.Kind != KindSequence || len(arg.Items) != 2 {
			return nil, c.errf(y, path, ErrInvalid, "Fn::GetAtt takes [LogicalId, Attribute]")
		}
	case "Fn::Sub":
		switch {
		case arg.Kind == KindScalar:
		case arg.Kind == KindSequence && len(arg.Items) == 2 && arg.Items[0].Kind == KindScalar && arg.Items[1].Kind == KindMapping:
		default:
			return nil, c.errf(y, path, ErrInvalid, "Fn::Sub takes a string or [string, {variables}]")
		}
	case "Fn::Join", "Fn::Select", "Fn::Split", "Fn::Equals":
		if arg.Kind != KindSequence || len(arg.Items) != 2 {
			return nil, c.errf(y, path, ErrInvalid, "%s takes a list of 2 values", fn)
		}
	case "Fn::If":
		if arg.Kind != KindSequence || len(arg.Items) != 3 {
			return nil, c.errf(y, path, ErrInvalid, "Fn::If takes [condition, value if true, value if false]")
		}
	case "Fn::Not":
		if arg.Kind != KindSequence || len(arg.Items) != 1 {
			return nil, c.errf(y, path, ErrInvalid, "Fn::Not takes a list of 1 condition")
		}
	case "Fn::And", "Fn::Or":
		if arg.Kind != KindSequence || len(arg.Items) < 2 || len(arg.Items) > 10 {
			return nil, c.errf(y, path, ErrInvalid, "%s takes a list of 2 to 10 conditions", fn)
		}
	case "Fn::FindInMap":
		if arg.Kind != KindSequence || (len(arg.Items) != 3 && len(arg.Items) != 4) {
			return nil, c.errf(y, path, ErrInvalid, "Fn::FindInMap takes [MapName, TopLevelKey, SecondLevelKey]")
		}
	}
	return n, nil
}
