package asl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// maxIntrinsicNesting is Step Functions' limit on nested intrinsic calls in
// one field.
const maxIntrinsicNesting = 10

// intrinsicCall is a parsed intrinsic function call such as
// States.Format('{} {}', $.a, States.UUID()).
type intrinsicCall struct {
	name string
	fn   *intrinsicFunc
	args []intrinsicArg
}

// intrinsicArg is one argument: exactly one of the fields is set, or none
// for a literal null.
type intrinsicArg struct {
	literal any      // string, json.Number, bool or nil
	raw     string   // for a string literal: the text between the quotes, escapes intact
	isStr   bool     // literal is a quoted string
	path    *refPath // $... or $$...
	call    *intrinsicCall
}

// parseIntrinsic parses an intrinsic call at load time. Unknown functions,
// wrong argument counts and syntax errors are reported here, so that only
// argument values can fail at run time.
func parseIntrinsic(text string) (*intrinsicCall, error) {
	p := &intrinsicParser{s: text}
	call, err := p.call(1)
	if err != nil {
		return nil, fmt.Errorf("invalid intrinsic function %q: %w", text, err)
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, fmt.Errorf("invalid intrinsic function %q: unexpected %q after the call", text, p.s[p.pos:])
	}
	return call, nil
}

type intrinsicParser struct {
	s   string
	pos int
}

func (p *intrinsicParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

func (p *intrinsicParser) call(depth int) (*intrinsicCall, error) {
	if depth > maxIntrinsicNesting {
		return nil, fmt.Errorf("more than %d nested intrinsic functions", maxIntrinsicNesting)
	}
	open := strings.IndexByte(p.s[p.pos:], '(')
	if open < 0 {
		return nil, errors.New("missing (")
	}
	name := strings.TrimSpace(p.s[p.pos : p.pos+open])
	fn, ok := intrinsics[name]
	if !ok {
		return nil, fmt.Errorf("unknown intrinsic function %q", name)
	}
	p.pos += open + 1
	c := &intrinsicCall{name: name, fn: fn}
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == ')' {
		p.pos++
	} else {
		for {
			arg, err := p.arg(depth)
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, arg)
			p.space()
			if p.pos >= len(p.s) {
				return nil, fmt.Errorf("missing ) in %s", name)
			}
			if p.s[p.pos] == ')' {
				p.pos++
				break
			}
			if p.s[p.pos] != ',' {
				return nil, fmt.Errorf("expected , or ) in %s, found %q", name, p.s[p.pos:])
			}
			p.pos++
		}
	}
	if len(c.args) < fn.minArgs || (fn.maxArgs >= 0 && len(c.args) > fn.maxArgs) {
		return nil, fmt.Errorf("%s takes %s, got %d", name, fn.arity(), len(c.args))
	}
	if fn.check != nil {
		if err := fn.check(c); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return c, nil
}

func (p *intrinsicParser) arg(depth int) (intrinsicArg, error) {
	p.space()
	rest := p.s[p.pos:]
	switch {
	case rest == "":
		return intrinsicArg{}, errors.New("missing argument")
	case rest[0] == '\'':
		return p.stringLiteral()
	case rest[0] == '$':
		return p.pathArg()
	case strings.HasPrefix(rest, "States."):
		c, err := p.call(depth + 1)
		if err != nil {
			return intrinsicArg{}, err
		}
		return intrinsicArg{call: c}, nil
	}
	end := strings.IndexAny(rest, ",) \t\r\n")
	if end < 0 {
		end = len(rest)
	}
	word := rest[:end]
	p.pos += end
	switch word {
	case "true":
		return intrinsicArg{literal: true}, nil
	case "false":
		return intrinsicArg{literal: false}, nil
	case "null":
		return intrinsicArg{}, nil
	}
	if isJSONNumber(word) {
		return intrinsicArg{literal: json.Number(word)}, nil
	}
	return intrinsicArg{}, fmt.Errorf("invalid argument %q (strings need single quotes)", word)
}

// stringLiteral reads '...'. The escapes \' \{ \} \\ are the only ones;
// raw keeps them so that States.Format can tell \{ from a placeholder.
func (p *intrinsicParser) stringLiteral() (intrinsicArg, error) {
	p.pos++ // opening quote
	start := p.pos
	var val strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch c {
		case '\\':
			if p.pos+1 >= len(p.s) {
				return intrinsicArg{}, errors.New("unterminated string")
			}
			e := p.s[p.pos+1]
			if !strings.ContainsRune(`'{}\`, rune(e)) {
				return intrinsicArg{}, fmt.Errorf(`invalid escape \%c in string (only \' \{ \} \\)`, e)
			}
			val.WriteByte(e)
			p.pos += 2
		case '\'':
			raw := p.s[start:p.pos]
			p.pos++
			return intrinsicArg{literal: val.String(), raw: raw, isStr: true}, nil
		default:
			val.WriteByte(c)
			p.pos++
		}
	}
	return intrinsicArg{}, errors.New("unterminated string")
}

// pathArg reads a path argument up to the next , or ) outside brackets and
// quotes.
func (p *intrinsicParser) pathArg() (intrinsicArg, error) {
	start := p.pos
	depth := 0
	var quote byte
scan:
	for ; p.pos < len(p.s); p.pos++ {
		c := p.s[p.pos]
		switch {
		case quote != 0:
			if c == '\\' && p.pos+1 < len(p.s) {
				// The escaped character; a backslash that ends the text
				// escapes nothing (the path parser refuses it).
				p.pos++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0 && (c == ',' || c == ')'):
			break scan
		}
	}
	text := strings.TrimSpace(p.s[start:p.pos])
	path, err := parseQueryPath(text)
	if err != nil {
		return intrinsicArg{}, err
	}
	return intrinsicArg{path: path}, nil
}

// isJSONNumber reports whether s is a JSON number literal:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// eval evaluates the call against the state input and the context object.
func (c *intrinsicCall) eval(input any, env *evalEnv) (any, error) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		switch {
		case a.call != nil:
			v, err := a.call.eval(input, env)
			if err != nil {
				return nil, err
			}
			args[i] = v
		case a.path != nil:
			v, ok := a.path.eval(input, env)
			if !ok {
				root := a.path.root(input, env)
				return nil, newError(ErrRuntime, "The JSONPath '%s' specified in the intrinsic function %s could not be found in the input '%s'", a.path, c.name, mustEncode(root))
			}
			args[i] = v
		default:
			args[i] = a.literal
		}
	}
	var v any
	var err error
	if c.fn.callEnv != nil {
		v, err = c.fn.callEnv(c, args, env)
	} else {
		v, err = c.fn.call(c, args)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, newError(ErrIntrinsicFailure, "%s: %v", c.name, err)
	}
	return v, nil
}
