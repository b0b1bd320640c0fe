package apigw

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidRoute reports a route NewServer cannot serve.
var ErrInvalidRoute = errors.New("apigw: invalid route")

// methods are the HTTP methods API Gateway methods can have, besides ANY.
var methods = []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"}

type segmentKind int

// Ordered by precedence: a literal segment beats a parameter, which beats a
// greedy parameter.
const (
	literalSegment segmentKind = iota
	paramSegment
	greedySegment
)

type segment struct {
	kind segmentKind
	text string // the literal, or the parameter name
}

// resource is one path template with its methods.
type resource struct {
	path     string
	id       string // requestContext.resourceId
	segments []segment
	methods  map[string]*Route // by method; "ANY" catches the rest
}

var paramNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// parseTemplate parses a resource path such as /transfers/{transferId} or
// /files/{proxy+}.
func parseTemplate(path string) ([]segment, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q must start with /", path)
	}
	if path == "/" {
		return nil, nil
	}
	parts := strings.Split(path[1:], "/")
	segs := make([]segment, 0, len(parts))
	seen := make(map[string]bool)
	for i, p := range parts {
		switch {
		case p == "":
			return nil, fmt.Errorf("path %q has an empty segment", path)
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			name, greedy := strings.CutSuffix(p[1:len(p)-1], "+")
			if !paramNameRE.MatchString(name) {
				return nil, fmt.Errorf("path %q: bad parameter name in %q", path, p)
			}
			if seen[name] {
				return nil, fmt.Errorf("path %q repeats parameter %q", path, name)
			}
			seen[name] = true
			kind := paramSegment
			if greedy {
				if i != len(parts)-1 {
					return nil, fmt.Errorf("path %q: greedy parameter %q must be the last segment", path, p)
				}
				kind = greedySegment
			}
			segs = append(segs, segment{kind: kind, text: name})
		case strings.ContainsAny(p, "{}"):
			return nil, fmt.Errorf("path %q: segment %q mixes literal text and a parameter", path, p)
		default:
			segs = append(segs, segment{kind: literalSegment, text: p})
		}
	}
	return segs, nil
}

// checkSiblings reports two templates with different variable segments
// under the same parent resource, which API Gateway rejects ("A sibling
// ({id}) of this resource already has a variable path part"): variable
// children of one parent must be the same resource.
func checkSiblings(templates map[string][]segment) error {
	variableChild := make(map[string]string) // parent path -> "{name}" or "{name+}"
	paths := make([]string, 0, len(templates))
	for p := range templates {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		parent := ""
		for _, s := range templates[p] {
			var part string
			switch s.kind {
			case literalSegment:
				part = s.text
			case paramSegment:
				part = "{" + s.text + "}"
			case greedySegment:
				part = "{" + s.text + "+}"
			}
			if s.kind != literalSegment {
				if other, ok := variableChild[parent]; ok && other != part {
					return fmt.Errorf("%w: %s: %s/%s conflicts with its sibling %s/%s", ErrInvalidRoute, p, parent, part, parent, other)
				}
				variableChild[parent] = part
			}
			parent += "/" + part
		}
	}
	return nil
}

// match matches the escaped request path segments against the resource,
// returning the decoded path parameters and the precedence of the match.
func (r *resource) match(raw []string) (params map[string]string, rank []segmentKind, ok bool) {
	if len(raw) < len(r.segments) {
		return nil, nil, false
	}
	rank = make([]segmentKind, 0, len(r.segments))
	for i, s := range r.segments {
		switch s.kind {
		case literalSegment:
			v, err := url.PathUnescape(raw[i])
			if err != nil || v != s.text {
				return nil, nil, false
			}
		case paramSegment:
			v, err := url.PathUnescape(raw[i])
			if err != nil {
				return nil, nil, false
			}
			if params == nil {
				params = make(map[string]string)
			}
			params[s.text] = v
		case greedySegment:
			rest := raw[i:]
			decoded := make([]string, len(rest))
			for j, p := range rest {
				v, err := url.PathUnescape(p)
				if err != nil {
					return nil, nil, false
				}
				decoded[j] = v
			}
			joined := strings.Join(decoded, "/")
			if joined == "" {
				return nil, nil, false
			}
			if params == nil {
				params = make(map[string]string)
			}
			params[s.text] = joined
			return params, append(rank, greedySegment), true
		}
		rank = append(rank, s.kind)
	}
	if len(raw) != len(r.segments) {
		return nil, nil, false
	}
	return params, rank, true
}

// router finds the resource of a request path.
type router struct {
	resources []*resource
}

// find returns the most specific resource matching the escaped path.
func (rt *router) find(escapedPath string) (*resource, map[string]string) {
	raw := splitPath(escapedPath)
	if slices.Contains(raw, "") {
		return nil, nil // "//" matches no resource
	}
	var best *resource
	var bestParams map[string]string
	var bestRank []segmentKind
	for _, r := range rt.resources {
		params, rank, ok := r.match(raw)
		if !ok {
			continue
		}
		if best == nil || slices.Compare(rank, bestRank) < 0 {
			best, bestParams, bestRank = r, params, rank
		}
	}
	return best, bestParams
}

// splitPath splits an escaped path into segments, ignoring one trailing
// slash.
func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// allowed lists the methods of a resource for the Allow header.
func (r *resource) allowed() string {
	var out []string
	for m := range r.methods {
		out = append(out, m)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
