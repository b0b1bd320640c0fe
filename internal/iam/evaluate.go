package iam

import (
	"strings"
)

// caller is the checked principal of a request.
type caller struct {
	service   bool
	name      string // service name, or IAM or STS ARN
	partition string
	account   string
	// roleName is the name of the role of an assumed-role session ARN.
	roleName string
}

// principalMatch is how a statement's Principal names the caller.
type principalMatch uint8

const (
	notNamed principalMatch = iota
	// namedByAccount: through the caller's account, which for an Allow
	// delegates to the account's identity-based policies.
	namedByAccount
	// named: as "*", or by the caller's own ARN or service name.
	named
)

// Evaluate applies AWS's same-account policy evaluation logic to req:
// an explicit Deny in any applicable policy wins; otherwise an Allow in an
// identity-based policy, or in a resource-based policy whose Principal
// names the request's principal, allows; otherwise the request is
// implicitly denied. An Allow that names the principal only through its
// account (an account ID or "arn:aws:iam::ACCOUNT:root") delegates to the
// identity-based policies and allows nothing by itself, while a Deny that
// names the account denies.
//
// identity holds the principal's identity-based policies (none for a
// service principal) and resource the resource's resource-based policies.
// Every policy is checked as ParsePolicy checks a document, and also for
// Principal: absent from identity-based policies, present in
// resource-based ones.
//
// A statement whose action, resource and principal apply to the request
// has every condition evaluated; a condition key missing from
// req.Context is an error naming the key, policy and statement (errors.Is
// ErrMissingContextKey), never a silent allow or deny. So is a request
// that is malformed (*RequestError), or that crosses accounts (errors.Is
// ErrUnsupported).
func Evaluate(req Request, identity, resource []*Policy) (Result, error) {
	var res Result
	who, err := checkRequest(req)
	if err != nil {
		return res, err
	}
	if who.service && len(identity) > 0 {
		return res, &RequestError{Field: "Principal", Value: req.Principal,
			Msg: "a service principal has no identity-based policies: pass resource-based policies only"}
	}
	ctx, err := contextIndex(req.Context)
	if err != nil {
		return res, err
	}
	identityAllows, resourceAllows := false, false
	for _, set := range []struct {
		kind     policyKind
		policies []*Policy
	}{{identityPolicy, identity}, {resourcePolicy, resource}} {
		for _, p := range set.policies {
			if p == nil {
				return res, &PolicyError{Statement: -1, Msg: "nil policy"}
			}
			statements, err := p.compile(set.kind)
			if err != nil {
				return res, err
			}
			for i := range statements {
				cs := &statements[i]
				how := named
				if set.kind == resourcePolicy {
					if how = cs.st.Principal.match(who); how == notNamed {
						continue
					}
				}
				matches, err := cs.apply(p, req, ctx)
				if err != nil {
					return res, err
				}
				if len(matches) == 0 {
					continue
				}
				if cs.st.Effect == "Deny" {
					res.Denied = append(res.Denied, matches...)
					continue
				}
				res.Allowed = append(res.Allowed, matches...)
				switch {
				case set.kind == identityPolicy:
					identityAllows = true
				case how == named:
					resourceAllows = true
				}
			}
		}
	}
	switch {
	case len(res.Denied) > 0:
		res.Decision = ExplicitDeny
	case identityAllows || resourceAllows:
		res.Decision = Allow
	default:
		res.Decision = ImplicitDeny
	}
	return res, nil
}

// apply returns the grants of the statement that match the request: none
// when its action, resource or conditions do not apply.
func (cs *compiledStatement) apply(p *Policy, req Request, ctx map[string][]string) ([]Match, error) {
	st := cs.st
	type hit struct {
		pattern string
		not     bool
	}
	var actions, resources []hit
	action := strings.ToLower(req.Action)
	if len(cs.notAction) > 0 {
		if !anyMatch(cs.notAction, action) {
			actions = append(actions, hit{not: true})
		}
	} else {
		for i, ap := range cs.actions {
			if ap.match(action) {
				actions = append(actions, hit{pattern: st.Actions[i]})
			}
		}
	}
	if len(actions) == 0 {
		return nil, nil
	}
	if len(cs.notRes) > 0 {
		matched := false
		for _, rp := range cs.notRes {
			matched = matched || matchResource(rp, req.Resource)
		}
		if !matched {
			resources = append(resources, hit{not: true})
		}
	} else {
		for i, rp := range cs.resources {
			if matchResource(rp, req.Resource) {
				resources = append(resources, hit{pattern: st.Resources[i]})
			}
		}
	}
	if len(resources) == 0 {
		return nil, nil
	}
	// Every condition is evaluated, so that a key missing from the context
	// is reported whatever the other conditions decide.
	holds := true
	for _, c := range cs.conds {
		values, ok := ctx[c.key]
		if !ok {
			return nil, &PolicyError{Policy: p.Name, Statement: st.Index, Sid: st.Sid, Element: "Condition", Key: c.src.Key,
				Msg: "operator " + quote(c.src.Operator) + " names a key the request context does not hold, so the condition cannot be evaluated locally",
				Err: ErrMissingContextKey}
		}
		ok, f := c.eval(values)
		if f != nil {
			return nil, &PolicyError{Policy: p.Name, Statement: st.Index, Sid: st.Sid, Element: "Condition", Key: c.src.Key, Msg: f.msg, Err: f.err}
		}
		holds = holds && ok
	}
	if !holds {
		return nil, nil
	}
	var out []Match
	for _, a := range actions {
		for _, r := range resources {
			out = append(out, Match{Policy: p.Name, Statement: st.Index, Sid: st.Sid,
				Action: a.pattern, NotAction: a.not, Resource: r.pattern, NotResource: r.not})
		}
	}
	return out, nil
}

func anyMatch(patterns []pattern, s string) bool {
	for _, p := range patterns {
		if p.match(s) {
			return true
		}
	}
	return false
}

// match reports how p names the caller.
func (p *Principals) match(who caller) principalMatch {
	if p.All {
		return named
	}
	how := notNamed
	for _, v := range p.AWS {
		if v == "*" {
			return named
		}
		if who.service {
			continue
		}
		switch {
		case v == who.name:
			return named
		case v == who.account:
			how = namedByAccount
		}
		segs, ok := splitARN(v)
		if !ok || segs[1] != who.partition || segs[4] != who.account {
			continue
		}
		switch {
		case segs[2] == "iam" && segs[5] == "root":
			how = namedByAccount
		case who.roleName != "" && segs[2] == "iam" && strings.HasPrefix(segs[5], "role/") &&
			segs[5][strings.LastIndexByte(segs[5], '/')+1:] == who.roleName:
			// A role's name is unique in its account, whatever its path.
			return named
		}
	}
	if who.service {
		for _, v := range p.Service {
			if v == who.name {
				return named
			}
		}
	}
	return how
}

// checkRequest checks req and returns its principal.
func checkRequest(req Request) (caller, error) {
	var who caller
	if msg := checkAction(req.Action, false); msg != "" {
		return who, &RequestError{Field: "Action", Value: req.Action, Msg: msg}
	}
	var resourceAccount string
	if req.Resource != "*" {
		segs, ok := splitARN(req.Resource)
		if !ok {
			return who, &RequestError{Field: "Resource", Value: req.Resource, Msg: "is neither \"*\" nor an ARN (arn:partition:service:region:account:resource)"}
		}
		resourceAccount = segs[4]
		if resourceAccount == "aws" { // AWS-owned, e.g. a managed policy
			resourceAccount = ""
		}
	}
	who.service, who.name = req.PrincipalIsService, req.Principal
	if req.PrincipalIsService {
		if req.Principal == "" || strings.ContainsAny(req.Principal, ":/*? ") {
			return who, &RequestError{Field: "Principal", Value: req.Principal, Msg: "is not a service principal such as \"events.amazonaws.com\""}
		}
	} else {
		segs, ok := splitARN(req.Principal)
		valid := ok && segs[4] != "" && (segs[2] == "iam" && (strings.HasPrefix(segs[5], "role/") || strings.HasPrefix(segs[5], "user/")) ||
			segs[2] == "sts" && strings.HasPrefix(segs[5], "assumed-role/"))
		if !valid {
			return who, &RequestError{Field: "Principal", Value: req.Principal,
				Msg: "is not a role ARN (arn:aws:iam::ACCOUNT:role/NAME), user ARN or assumed-role session ARN; for a service principal set PrincipalIsService"}
		}
		who.partition, who.account = segs[1], segs[4]
		if segs[2] == "sts" {
			// assumed-role/NAME/SESSION
			parts := strings.Split(segs[5], "/")
			if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
				return who, &RequestError{Field: "Principal", Value: req.Principal, Msg: "is not an assumed-role session ARN (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION)"}
			}
			who.roleName = parts[1]
		}
		if req.Account != "" && req.Account != who.account {
			return who, &RequestError{Field: "Account", Value: req.Account,
				Msg: "differs from the principal's account " + who.account + ": cross-account evaluation is not supported", Err: ErrUnsupported}
		}
	}
	account := req.Account
	if account == "" {
		account = who.account
	}
	if account != "" && resourceAccount != "" && resourceAccount != account {
		return who, &RequestError{Field: "Resource", Value: req.Resource,
			Msg: "belongs to account " + resourceAccount + ", not " + account + ": cross-account evaluation is not supported", Err: ErrUnsupported}
	}
	return who, nil
}

// contextIndex returns the request context keyed by lower-case key.
func contextIndex(ctx map[string][]string) (map[string][]string, error) {
	out := make(map[string][]string, len(ctx))
	for k, v := range ctx {
		lk := strings.ToLower(k)
		if _, dup := out[lk]; dup {
			return nil, &RequestError{Field: "Context", Value: k, Msg: "holds the key twice, in different cases; keys compare case-insensitively"}
		}
		out[lk] = v
	}
	return out, nil
}

// Grants lists every grant of the policies' Allow statements: one Match per
// action pattern and resource pattern (a NotAction or NotResource list
// counting as one, with NotAction or NotResource set), in document order,
// so that a caller can report the grants no request used.
func Grants(policies ...*Policy) []Match {
	var out []Match
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, st := range p.Statements {
			if st.Effect != "Allow" {
				continue
			}
			actions, notAction := st.Actions, false
			if len(actions) == 0 {
				actions, notAction = []string{""}, true
			}
			resources, notResource := st.Resources, false
			if len(resources) == 0 {
				resources, notResource = []string{""}, true
			}
			for _, a := range actions {
				for _, r := range resources {
					out = append(out, Match{Policy: p.Name, Statement: st.Index, Sid: st.Sid,
						Action: a, Resource: r, NotAction: notAction, NotResource: notResource})
				}
			}
		}
	}
	return out
}
