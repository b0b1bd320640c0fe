package iam

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokenKind is the kind of one token of a compiled pattern.
type tokenKind uint8

const (
	literal tokenKind = iota
	anyRun            // *
	anyOne            // ?
)

// token is one character of a compiled pattern.
type token struct {
	kind tokenKind
	r    rune
	// colon reports whether the wildcard may match a ':'.
	colon bool
}

// pattern is a compiled pattern: one token per character.
type pattern []token

// fault is a problem found in a policy, before the policy, statement and
// element are known.
type fault struct {
	msg string
	err error // ErrUnsupported, ErrMissingContextKey or nil
}

func (f *fault) Error() string { return f.msg }

// compile reads s as a pattern. With wild, * and ? are wildcards that match
// any character, ':' included; without, they are literal. With vars (policy
// Version 2012-10-17), "${*}", "${?}" and "${$}" stand for the literal
// character and any other "${...}" is a policy variable, which is refused;
// without, "${" is literal text, as AWS reads it in older versions.
func compile(s string, wild, vars bool) (pattern, *fault) {
	p := make(pattern, 0, len(s))
	for i := 0; i < len(s); {
		if vars && strings.HasPrefix(s[i:], "${") {
			if end := strings.IndexByte(s[i:], '}'); end >= 0 {
				switch inner := s[i+2 : i+end]; inner {
				case "*", "?", "$":
					p = append(p, token{kind: literal, r: rune(inner[0])})
					i += end + 1
					continue
				default:
					return nil, &fault{
						msg: "policy variable " + s[i:i+end+1] + " is not supported: a local request has no values to substitute",
						err: ErrUnsupported,
					}
				}
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case wild && r == '*':
			p = append(p, token{kind: anyRun, colon: true})
		case wild && r == '?':
			p = append(p, token{kind: anyOne, colon: true})
		default:
			p = append(p, token{kind: literal, r: r})
		}
		i += size
	}
	return p, nil
}

// arnSegments is the number of colon-separated segments that precede an
// ARN's resource part: arn, partition, service, region, account.
const arnSegments = 5

// restrictColons makes p a resource ARN pattern: within the first five
// segments a ? never matches a ':' and a * matches one only when it is the
// last character of its segment, which AWS documents may "expand to match
// beyond the colon boundaries"; in the resource part every wildcard
// matches any character.
func restrictColons(p pattern) {
	colons := 0
	for i := range p {
		switch t := &p[i]; t.kind {
		case literal:
			if t.r == ':' {
				colons++
			}
		case anyOne:
			t.colon = colons >= arnSegments
		case anyRun:
			t.colon = colons >= arnSegments || i+1 == len(p) ||
				(p[i+1].kind == literal && p[i+1].r == ':')
		}
	}
}

// match reports whether p matches all of s.
func (p pattern) match(s string) bool {
	rs := []rune(s)
	// next[j] reports whether p[i+1:] matches rs[j:]; cur the same for p[i:].
	next := make([]bool, len(rs)+1)
	cur := make([]bool, len(rs)+1)
	next[len(rs)] = true
	for i := len(p) - 1; i >= 0; i-- {
		t := p[i]
		cur[len(rs)] = t.kind == anyRun && next[len(rs)]
		for j := len(rs) - 1; j >= 0; j-- {
			fits := t.colon || rs[j] != ':'
			switch t.kind {
			case literal:
				cur[j] = rs[j] == t.r && next[j+1]
			case anyOne:
				cur[j] = fits && next[j+1]
			case anyRun:
				cur[j] = next[j] || (fits && cur[j+1])
			}
		}
		next, cur = cur, next
	}
	return next[0]
}

// literalText is the text p stands for when it holds no wildcard.
func (p pattern) literalText() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteRune(t.r)
	}
	return b.String()
}

// actionPattern compiles an Action or NotAction value; actions compare
// case-insensitively.
func actionPattern(s string) pattern {
	p, _ := compile(strings.ToLower(s), true, false)
	return p
}

// checkAction reports what is wrong with an action pattern, if anything: it
// must be "*" or "service:Action", wildcards allowed. With pattern false it
// must name one action, without wildcards.
func checkAction(s string, pattern bool) string {
	if pattern && s == "*" {
		return ""
	}
	service, name, ok := strings.Cut(s, ":")
	if !ok || service == "" || name == "" || strings.Contains(name, ":") {
		return "action " + quote(s) + " is not of the form \"service:Action\""
	}
	for _, part := range []string{service, name} {
		for _, r := range part {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			case pattern && (r == '*' || r == '?'):
			default:
				return "action " + quote(s) + " has the character " + quote(string(r)) + ", not allowed in an action"
			}
		}
	}
	return ""
}

// resourcePattern compiles a Resource or NotResource value, returning nil
// for "*", which matches every resource.
func resourcePattern(s string, vars bool) (pattern, *fault) {
	if s == "*" {
		return nil, nil
	}
	segs := strings.SplitN(s, ":", arnSegments+1)
	if segs[0] != "arn" {
		return nil, &fault{msg: "resource " + quote(s) + " is neither \"*\" nor an ARN (arn:partition:service:region:account:resource)"}
	}
	if len(segs) >= 3 && strings.ContainsAny(segs[2], "*?") {
		return nil, &fault{msg: "resource " + quote(s) + " has a wildcard in the service segment, which AWS does not allow"}
	}
	p, f := compile(s, true, vars)
	if f != nil {
		return nil, f
	}
	// A pattern of fewer parts can only match through a final * that
	// expands beyond the colons, after an explicit service.
	if len(segs) < 3 || len(segs) <= arnSegments && p[len(p)-1].kind != anyRun {
		return nil, &fault{msg: "resource " + quote(s) + " has fewer than the six colon-separated parts of an ARN (arn:partition:service:region:account:resource)"}
	}
	restrictColons(p)
	return p, nil
}

// matchResource reports whether the compiled Resource value p (nil for
// "*") matches resource.
func matchResource(p pattern, resource string) bool {
	return p == nil || p.match(resource)
}

// arnPattern is a compiled ArnEquals or ArnLike value: its six segments.
type arnPattern [arnSegments + 1]pattern

// compileARN compiles an ARN condition value. AWS checks each of the six
// colon-delimited components separately, wildcards allowed in each; the
// last, the resource part, may itself contain colons.
func compileARN(s string, vars bool) (arnPattern, *fault) {
	var a arnPattern
	segs := strings.SplitN(s, ":", arnSegments+1)
	if len(segs) != arnSegments+1 {
		return a, &fault{msg: "value " + quote(s) + " is not an ARN: an ARN condition value needs the six colon-separated parts arn:partition:service:region:account:resource"}
	}
	for i, seg := range segs {
		p, f := compile(seg, true, vars)
		if f != nil {
			return a, f
		}
		a[i] = p
	}
	return a, nil
}

// match reports whether a matches the ARN s; a value that is not an ARN
// matches no pattern.
func (a arnPattern) match(s string) bool {
	segs := strings.SplitN(s, ":", arnSegments+1)
	if len(segs) != arnSegments+1 {
		return false
	}
	for i, seg := range segs {
		if !a[i].match(seg) {
			return false
		}
	}
	return true
}

// splitARN returns the six parts of an ARN, or false when s is not one.
func splitARN(s string) ([]string, bool) {
	segs := strings.SplitN(s, ":", arnSegments+1)
	if len(segs) != arnSegments+1 || segs[0] != "arn" || segs[1] == "" || segs[2] == "" || segs[5] == "" {
		return nil, false
	}
	return segs, true
}

func quote(s string) string { return strconv.Quote(s) }
