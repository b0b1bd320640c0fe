package cfn

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// includeTransform is the transform that inserts a snippet file.
const includeTransform = "AWS::Include"

// include evaluates {"Fn::Transform": {"Name": "AWS::Include",
// "Parameters": {"Location": path}}}: the snippet at path (relative to the
// template, as the SAM CLI uploads it) is parsed as template text, with
// intrinsic functions in long form only, and evaluated in place.
func (r *Resolver) include(n *Node) (any, error) {
	loc := n.Arg.Get("Parameters").Get("Location")
	if loc == nil {
		return nil, r.errAt(n, ErrInvalid, "AWS::Include needs Parameters.Location")
	}
	location, err := r.String(loc)
	if err != nil {
		return nil, err
	}
	snippet, err := r.t.Include(location)
	if err != nil {
		return nil, r.wrapAt(loc, err)
	}
	return r.value(snippet)
}

// Include parses the AWS::Include snippet at location, a path relative to
// the template's directory. Snippets in S3 have no local meaning.
func (t *Template) Include(location string) (*Node, error) {
	if strings.Contains(location, "://") {
		return nil, fmt.Errorf("%w: AWS::Include of %s: only local files are read", ErrUnsupported, location)
	}
	file := location
	if !filepath.IsAbs(file) {
		file = filepath.Join(t.Dir, file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: AWS::Include: %v", ErrUnresolved, err)
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, &Error{File: file, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
	}
	c := &converter{file: file, longFormOnly: true}
	return c.convert(&doc, "")
}
