package cfn

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every error returned by this package that concerns a
// place in a template is an *Error wrapping one of these, so callers can
// test the category with errors.Is and still print the file and line.
var (
	// ErrSyntax: the file is not valid YAML, or uses YAML the template
	// format forbids (aliases, duplicate keys).
	ErrSyntax = errors.New("syntax error")
	// ErrUnknownTag: a short-form tag that is not an intrinsic function.
	ErrUnknownTag = errors.New("unknown tag")
	// ErrUnknownFunction: a long-form "Fn::X" key that is not an intrinsic
	// function.
	ErrUnknownFunction = errors.New("unknown intrinsic function")
	// ErrInvalid: a value of the wrong shape or type for its place.
	ErrInvalid = errors.New("invalid value")
	// ErrUnresolved: a reference to a parameter, resource, condition,
	// mapping or substitution that the template does not declare.
	ErrUnresolved = errors.New("unresolved reference")
	// ErrUnsupported: valid in AWS, but with no meaning in the local
	// runtime (for example Fn::ImportValue).
	ErrUnsupported = errors.New("not supported locally")
	// ErrUnknownProperty: a resource property this package neither maps
	// nor deliberately ignores.
	ErrUnknownProperty = errors.New("unknown property")
)

// Error locates a problem in a template: "file:line: path: message".
type Error struct {
	File string // file name as given to Load or Parse
	Line int    // 1-based; 0 when unknown
	Path string // dotted path such as Resources.Foo.Properties.KeySchema[0]
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// asError reports whether err already carries a template position.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
