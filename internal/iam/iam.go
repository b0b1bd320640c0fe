// Package iam evaluates AWS IAM policies the way AWS does for a request
// made within one account, so that the local runtime can refuse every call
// a role's policies would not allow.
//
// ParsePolicy reads a policy document (identity-based or resource-based)
// and refuses what AWS refuses, and what cannot be evaluated locally,
// naming the policy, the statement and the element. Evaluate applies the
// documented evaluation logic: an explicit Deny in any applicable policy
// wins; otherwise an Allow in an identity-based policy, or in a
// resource-based policy whose Principal names the caller, allows;
// otherwise the request is implicitly denied. Grants lists what Allow
// statements grant, for least-privilege accounting.
//
// Matching follows AWS's documentation ("IAM JSON policy elements",
// "Condition operators", "Policy evaluation logic"):
//
//   - Actions match case-insensitively, with * (any run of characters) and
//     ? (one character).
//   - Resources match case-sensitively, segment by segment for the first
//     five colon-separated parts of the ARN (arn, partition, service,
//     region, account); the sixth, the resource part, may contain colons
//     and slashes and its wildcards match anything. A * that is the last
//     character of one of the first five segments may, as documented,
//     expand beyond the colon that ends it. "*" alone matches every
//     resource. The service segment may not hold a wildcard.
//   - A Principal "*" or {"AWS": "*"} names everyone; a role ARN names that
//     role (and its sessions); an account ID or "arn:aws:iam::ACCOUNT:root"
//     names the account: a Deny applies to every principal of the account,
//     while an Allow only delegates to the account's identity-based
//     policies and so allows nothing by itself.
//   - Condition operators are AND-ed, the keys of one operator are AND-ed,
//     the values given for one key are OR-ed. A key known to be absent
//     from the request (present in Request.Context with no values) fails
//     every positive operator, satisfies every negated one (StringNotEquals,
//     ArnNotLike, ...), every ...IfExists operator, Null "true" and
//     ForAllValues, and fails ForAnyValue.
//
// What cannot be evaluated locally is an error, never a silent allow or
// deny: a condition key missing from Request.Context, a policy variable,
// NotPrincipal, a multivalued context key under an operator without
// ForAnyValue or ForAllValues, or a cross-account request.
package iam

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Policy is a parsed policy document (identity-based or resource-based).
type Policy struct {
	// Name is where the policy came from, e.g.
	// "OrchestratorFunctionRole/OrchestratorFunctionRolePolicy0"; errors
	// and matches carry it.
	Name string
	// Version is the document's Version: "2012-10-17", "2008-10-17", or
	// empty when the document has none, which AWS reads as "2008-10-17".
	// Only "2012-10-17" gives "${...}" its meaning of a policy variable.
	Version string
	// ID is the document's Id element, if any.
	ID         string
	Statements []Statement
}

// Statement is one statement of a policy.
type Statement struct {
	Sid string
	// Index is the statement's position in the document, from 0.
	Index int
	// Effect is "Allow" or "Deny".
	Effect string
	// Principal is nil when the element is absent, as it must be in an
	// identity-based policy; a resource-based policy needs one.
	Principal *Principals
	// Exactly one of Actions and NotActions is non-empty, and exactly one
	// of Resources and NotResources.
	Actions, NotActions     []string
	Resources, NotResources []string
	// Conditions lists the Condition block, one entry per operator and
	// key, in the order of operator then key.
	Conditions []Condition
}

// Principals is a statement's Principal element.
type Principals struct {
	// All is set by "Principal": "*".
	All bool
	// AWS holds "*", account IDs and IAM ARNs (account root, role, user,
	// assumed-role session).
	AWS []string
	// Service holds service principals, e.g. "events.amazonaws.com".
	Service []string
	// Federated and CanonicalUser are kept as written; no request this
	// package evaluates comes from such a principal, so they match none.
	Federated     []string
	CanonicalUser []string
}

// Condition is one key of one operator of a Condition block.
type Condition struct {
	// Operator is as written, e.g. "ForAnyValue:StringLikeIfExists".
	Operator string
	// Key is the condition key as written; keys compare case-insensitively.
	Key string
	// Values are the values given for the key, numbers and booleans in
	// their JSON text. The condition holds when any of them matches.
	Values []string
}

// Request is one call to evaluate.
type Request struct {
	// Principal is, for a role session, the role ARN
	// ("arn:aws:iam::123456789012:role/name"; an assumed-role session ARN
	// "arn:aws:sts::123456789012:assumed-role/name/session" is accepted
	// too); for a service principal, its name, e.g. "events.amazonaws.com".
	Principal          string
	PrincipalIsService bool
	// Account is the account of the caller and of the resource: only
	// same-account requests are evaluated. Empty means the principal's
	// account.
	Account string
	// Action is the action called, e.g. "dynamodb:PutItem".
	Action string
	// Resource is the resource's ARN, or "*" for an action that applies to
	// no particular resource (only a Resource "*" matches it).
	Resource string
	// Context holds every condition key the caller can evaluate for this
	// request. A key present with an empty slice is known to be absent from
	// the request. A condition naming a key that is not in the map cannot
	// be evaluated and makes Evaluate return an error. Key names compare
	// case-insensitively.
	Context map[string][]string
}

// Decision is the outcome of an evaluation.
type Decision int

// The decisions, from weakest to strongest.
const (
	// ImplicitDeny: no applicable statement allows the request.
	ImplicitDeny Decision = iota
	// Allow: an applicable statement allows it and none denies it.
	Allow
	// ExplicitDeny: an applicable Deny statement denies it.
	ExplicitDeny
)

func (d Decision) String() string {
	switch d {
	case ImplicitDeny:
		return "ImplicitDeny"
	case Allow:
		return "Allow"
	case ExplicitDeny:
		return "ExplicitDeny"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Match names one grant of a statement: a statement matches once for
// every pair of its action and resource patterns that matched.
type Match struct {
	Policy    string
	Statement int
	Sid       string
	// Action is the Action pattern that matched; empty when NotAction is
	// set, the statement then applying to every action outside its
	// NotAction list.
	Action string
	// Resource is the Resource pattern that matched; empty when
	// NotResource is set, likewise.
	Resource    string
	NotAction   bool
	NotResource bool
}

// Result is the outcome of Evaluate.
type Result struct {
	Decision Decision
	// Allowed lists the Allow statements that matched. An Allow of a
	// resource-based policy that names the caller only through its account
	// is listed although it allows nothing by itself.
	Allowed []Match
	// Denied lists the Deny statements that matched.
	Denied []Match
}

// ErrUnsupported is matched (errors.Is) by errors about what is valid in
// AWS but cannot be evaluated locally: policy variables, NotPrincipal,
// cross-account requests, multivalued keys without a set operator.
var ErrUnsupported = errors.New("not supported locally")

// ErrMissingContextKey is matched (errors.Is) by the error for a condition
// key that Request.Context does not hold.
var ErrMissingContextKey = errors.New("condition key not in the request context")

// PolicyError reports a policy that is invalid, or that cannot be evaluated
// for a request, with the place in the policy.
type PolicyError struct {
	Policy string
	// Statement is the statement's index, or -1 for the document as a
	// whole.
	Statement int
	Sid       string
	// Element is the policy element at fault ("Version", "Action",
	// "Condition", ...), or the unknown element's name.
	Element string
	// Key is the condition key at fault, if any.
	Key string
	Msg string
	// Err is ErrUnsupported, ErrMissingContextKey or nil.
	Err error
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "iam: policy %q", e.Policy)
	if e.Statement >= 0 {
		fmt.Fprintf(&b, " Statement[%d]", e.Statement)
		if e.Sid != "" {
			fmt.Fprintf(&b, " (Sid %q)", e.Sid)
		}
	}
	if e.Element != "" {
		b.WriteString(" " + e.Element)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, " key %q", e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

func (e *PolicyError) Unwrap() error { return e.Err }

// RequestError reports a Request that cannot be evaluated.
type RequestError struct {
	// Field is the Request field at fault, e.g. "Resource".
	Field string
	Value string
	Msg   string
	// Err is ErrUnsupported or nil.
	Err error
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("iam: request %s %q: %s", e.Field, e.Value, e.Msg)
}

func (e *RequestError) Unwrap() error { return e.Err }
