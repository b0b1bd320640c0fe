package iamgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/iam"
)

// Gate holds the stack's principals and checks their calls. It is safe
// for concurrent use.
type Gate struct {
	tpl  *cfn.Template
	r    *cfn.Resolver
	p    *principals
	arns arns
	log  *slog.Logger

	mu      sync.Mutex
	used    map[string]int // grant key -> requests it allowed
	denials []Denial
}

// Denial is one refused call.
type Denial struct {
	// Principal is the assumed-role ARN of the caller, or the service.
	Principal string
	Action    string
	Resource  string
	// Message is the refusal as AWS words it.
	Message string
}

// New reads the principals of tpl, the template as CloudFormation sees it
// (after the SAM transform), resolved for env.
func New(tpl *cfn.Template, env cfn.Env, log *slog.Logger) (*Gate, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r, err := cfn.NewResolver(tpl, env)
	if err != nil {
		return nil, err
	}
	p, err := loadPrincipals(tpl, env)
	if err != nil {
		return nil, err
	}
	e := r.Env()
	return &Gate{tpl: tpl, r: r, p: p, arns: arns{partition: e.Partition, region: e.Region, account: e.AccountID}, log: log, used: map[string]int{}}, nil
}

// FunctionRole is the role the function logicalID runs under; nil when the
// template has no such function.
func (g *Gate) FunctionRole(logicalID string) *Role { return g.p.functionRoles[logicalID] }

// StateMachineRole is the role of the state machine logicalID.
func (g *Gate) StateMachineRole(logicalID string) *Role { return g.p.machineRoles[logicalID] }

// RoleByARN is the role of the stack whose ARN is arn, or nil.
func (g *Gate) RoleByARN(arn string) *Role {
	for _, r := range g.p.byKey {
		if r.ARN == arn {
			return r
		}
	}
	return nil
}

// Denials returns the calls refused so far, in order.
func (g *Gate) Denials() []Denial {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Denial(nil), g.denials...)
}

// DeniedError is a refused invocation, worded as AWS words it.
type DeniedError struct{ Denial }

func (e *DeniedError) Error() string { return "AccessDeniedException: " + e.Message }

// Invocation is a call of lambda:InvokeFunction that the gate checks.
type Invocation struct {
	// Role invokes with its identity policies (a state machine's tasks);
	// nil for a service principal.
	Role *Role
	// Service is the invoking service principal (events.amazonaws.com,
	// apigateway.amazonaws.com) when Role is nil.
	Service string
	// SourceARN is the rule or API method on whose behalf Service
	// invokes; "" for none.
	SourceARN string
	// FunctionARN is the ARN invoked, qualified by the alias or version
	// when the caller names one.
	FunctionARN string
}

// AuthorizeInvoke checks an invocation: a role needs its identity policy
// or the function's resource policy to allow it, a service principal the
// function's resource policy (AWS's same-account evaluation). A refusal
// is a *DeniedError.
func (g *Gate) AuthorizeInvoke(inv Invocation) error {
	req := iam.Request{Account: g.arns.account, Action: "lambda:InvokeFunction", Resource: inv.FunctionARN}
	var identity []*iam.Policy
	var who string
	if inv.Role != nil {
		req.Principal, req.Context = inv.Role.ARN, g.roleContext(inv.Role)
		identity, who = inv.Role.Policies, inv.Role.SessionARN(g.arns.account)
	} else {
		req.Principal, req.PrincipalIsService = inv.Service, true
		req.Context = serviceContext(inv.Service, g.arns.account, inv.SourceARN)
		who = inv.Service
	}
	resource := g.p.resourcePolicies[unqualified(inv.FunctionARN)]
	if err := g.decide(who, []check{{req.Action, req.Resource}}, req, identity, resource); err != nil {
		return err
	}
	return nil
}

// destinationActions are the actions Lambda needs of a function's role to
// send a failed asynchronous invocation to a destination of each type.
var destinationActions = map[string]string{
	"SQS":         "sqs:SendMessage",
	"SNS":         "sns:Publish",
	"Lambda":      "lambda:InvokeFunction",
	"EventBridge": "events:PutEvents",
}

// AuthorizeDestination checks that a function's role may send to its
// on-failure destination (typ: SQS, SNS, Lambda, EventBridge), as Lambda
// sends with the function's execution role.
func (g *Gate) AuthorizeDestination(role *Role, typ, arn string) error {
	action, ok := destinationActions[typ]
	who := role.SessionARN(g.arns.account)
	if !ok {
		return g.deny(who, check{Resource: arn}, fmt.Sprintf("destination type %q is not known to the local IAM check", typ))
	}
	req := iam.Request{Principal: role.ARN, Account: g.arns.account, Context: g.roleContext(role)}
	return g.decide(who, []check{{action, arn}}, req, role.Policies, nil)
}

// decide evaluates each check, records what allowed it, and returns a
// *DeniedError for the first refused.
func (g *Gate) decide(who string, checks []check, req iam.Request, identity, resource []*iam.Policy) error {
	for _, c := range checks {
		req.Action, req.Resource = c.Action, c.Resource
		res, err := iam.Evaluate(req, identity, resource)
		if err != nil {
			return g.deny(who, c, fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because the local IAM check cannot evaluate its policies: %v", who, c.Action, c.Resource, err))
		}
		switch res.Decision {
		case iam.Allow:
			g.record(res.Allowed)
		case iam.ExplicitDeny:
			return g.deny(who, c, fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s with an explicit deny in %s", who, c.Action, c.Resource, policyKinds(res.Denied, identity)))
		default:
			return g.deny(who, c, fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action", who, c.Action, c.Resource, c.Action))
		}
	}
	return nil
}

func policyKinds(ms []iam.Match, identity []*iam.Policy) string {
	for _, m := range ms {
		for _, p := range identity {
			if p.Name == m.Policy {
				return "an identity-based policy"
			}
		}
	}
	return "a resource-based policy"
}

func (g *Gate) deny(who string, c check, msg string) error {
	d := Denial{Principal: who, Action: c.Action, Resource: c.Resource, Message: msg}
	g.mu.Lock()
	g.denials = append(g.denials, d)
	g.mu.Unlock()
	g.log.Warn("access denied", "principal", who, "action", c.Action, "resource", c.Resource, "message", msg)
	return &DeniedError{d}
}

func (g *Gate) record(ms []iam.Match) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range ms {
		g.used[grantKey(m)]++
	}
}

func (g *Gate) roleContext(r *Role) map[string][]string {
	return map[string][]string{
		"aws:PrincipalArn":     {r.ARN},
		"aws:PrincipalAccount": {g.arns.account},
		"aws:PrincipalType":    {"AssumedRole"},
		"aws:RequestedRegion":  {g.arns.region},
		"aws:SecureTransport":  {"true"},
		"aws:SourceArn":        nil,
		"aws:SourceAccount":    nil,
		"aws:CalledVia":        nil,
	}
}

// serviceContext is what AWS puts in the request context of a service
// principal's call made on behalf of sourceARN ("" for none).
func serviceContext(service, account, sourceARN string) map[string][]string {
	ctx := map[string][]string{
		"aws:PrincipalServiceName": {service},
		"aws:PrincipalArn":         nil,
		"aws:PrincipalAccount":     nil,
		"aws:SourceAccount":        {account},
		"aws:SourceArn":            nil,
		"aws:SecureTransport":      {"true"},
	}
	if sourceARN != "" {
		ctx["aws:SourceArn"] = []string{sourceARN}
	}
	return ctx
}

// Transport wraps next: each request signed with a role's credentials is
// checked before it is sent, and a refused one is answered as the service
// answers it (HTTP 400, AccessDeniedException) without reaching it.
// Requests signed with AdminCredentials pass unchecked; unknown access
// keys are refused as AWS refuses them (UnrecognizedClientException).
func (g *Gate) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper{g: g, next: next}
}

type roundTripper struct {
	g    *Gate
	next http.RoundTripper
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	key := accessKeyOf(req.Header.Get("Authorization"))
	if key == AdminCredentials.AccessKeyID || checkedByServer(req) {
		return t.next.RoundTrip(req)
	}
	role := t.g.p.byKey[key]
	if role == nil {
		return refusal(req, "UnrecognizedClientException", "The security token included in the request is invalid."), nil
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	who := role.SessionARN(t.g.arns.account)
	service, op, err := target(req.Header.Get("X-Amz-Target"))
	var checks []check
	if err == nil {
		checks, err = t.g.arns.checks(service, op, body)
	}
	if err != nil {
		derr := t.g.deny(who, check{Action: req.Header.Get("X-Amz-Target")}, fmt.Sprintf("User: %s: the local IAM check refuses a request it cannot map: %v", who, err))
		return refusal(req, "AccessDeniedException", derr.(*DeniedError).Message), nil
	}
	r := iam.Request{Principal: role.ARN, Account: t.g.arns.account, Context: t.g.roleContext(role)}
	if err := t.g.decide(who, checks, r, role.Policies, nil); err != nil {
		var d *DeniedError
		if errors.As(err, &d) {
			return refusal(req, "AccessDeniedException", d.Message), nil
		}
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// AuthorizeRequest checks that the caller whose credentials signed r (its
// SigV4 Authorization header) may perform action on resource: for a
// service whose requests Transport does not map (Lambda's REST Invoke,
// CodeDeploy), the serving endpoint asks. The runtime's own credentials
// pass; unknown ones, and a refused call, are a *DeniedError.
func (g *Gate) AuthorizeRequest(r *http.Request, action, resource string) error {
	key := accessKeyOf(r.Header.Get("Authorization"))
	if key == AdminCredentials.AccessKeyID {
		return nil
	}
	role := g.p.byKey[key]
	if role == nil {
		return g.deny("access key "+key, check{action, resource}, "The security token included in the request is invalid.")
	}
	req := iam.Request{Principal: role.ARN, Account: g.arns.account, Context: g.roleContext(role)}
	return g.decide(role.SessionARN(g.arns.account), []check{{action, resource}}, req, role.Policies, nil)
}

// checkedByServer reports a request to a local endpoint that checks its
// callers itself, with AuthorizeRequest: Lambda's Invoke (REST) and
// CodeDeploy's lifecycle hook status.
func checkedByServer(req *http.Request) bool {
	return strings.HasPrefix(req.URL.Path, "/2015-03-31/functions/") ||
		strings.HasPrefix(req.Header.Get("X-Amz-Target"), "CodeDeploy_20141006.")
}

// accessKeyOf reads the access key id of a SigV4 Authorization header.
func accessKeyOf(auth string) string {
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, "/")
	return key
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}

// refusal is the answer of an AWS JSON-protocol service (DynamoDB, Step
// Functions) refusing a request.
func refusal(req *http.Request, code, msg string) *http.Response {
	body, _ := json.Marshal(map[string]string{"__type": "com.amazon.coral.service#" + code, "message": msg})
	return &http.Response{
		Status:     "400 Bad Request",
		StatusCode: http.StatusBadRequest,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":     {"application/x-amz-json-1.0"},
			"X-Amzn-Requestid": {"iamgate-denied"},
		},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Handler serves a reverse proxy of the checks: requests are checked as
// by Transport, then sent to next. It lets a process outside this one (a
// function's bootstrap) reach a local endpoint through the checks.
func (g *Gate) Handler(endpoint string, next http.RoundTripper) http.Handler {
	rt := g.Transport(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target, err := url.Parse(strings.TrimSuffix(endpoint, "/") + r.URL.RequestURI())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI, out.URL, out.Host = "", target, target.Host
		resp, err := rt.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

// RuleInvocation is the invocation an EventBridge rule of the template
// makes of its Lambda target: events.amazonaws.com on behalf of the rule,
// of the ARN the rule's target names (an alias, as SAM writes it).
func (g *Gate) RuleInvocation(ruleLogicalID string) (Invocation, error) {
	res, ok := g.tpl.Resources[ruleLogicalID]
	if !ok || res.Type != cfn.TypeEventRule {
		return Invocation{}, fmt.Errorf("iamgate: the transformed template has no AWS::Events::Rule %s", ruleLogicalID)
	}
	arn, err := g.r.GetAttString(ruleLogicalID, "Arn")
	if err != nil {
		return Invocation{}, err
	}
	v, err := g.r.Value(res.Properties.Get("Targets"))
	if err != nil {
		return Invocation{}, fmt.Errorf("iamgate: %s.Targets: %w", ruleLogicalID, err)
	}
	targets, _ := v.([]any)
	for _, t := range targets {
		m, _ := t.(map[string]any)
		if a, _ := m["Arn"].(string); strings.Contains(a, ":lambda:") {
			return Invocation{Service: "events.amazonaws.com", SourceARN: arn, FunctionARN: a}, nil
		}
	}
	return Invocation{}, fmt.Errorf("iamgate: rule %s has no Lambda target", ruleLogicalID)
}

// APIInvocation is the invocation API Gateway makes for the route method
// path of the REST API apiLogicalID deployed to stage: apigateway.amazonaws.com
// on behalf of the method's execute-api ARN, of the function ARN its
// integration's uri names.
func (g *Gate) APIInvocation(apiLogicalID, stage, method, path string) (Invocation, error) {
	def, err := g.tpl.APIDefinition(g.r.Env(), apiLogicalID)
	if err != nil {
		return Invocation{}, err
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Integration struct {
				URI string `json:"uri"`
			} `json:"x-amazon-apigateway-integration"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(def, &doc); err != nil {
		return Invocation{}, fmt.Errorf("iamgate: the definition of %s: %w", apiLogicalID, err)
	}
	uri := doc.Paths[path][strings.ToLower(method)].Integration.URI
	_, fn, ok := strings.Cut(uri, "/functions/")
	fn, _, ok2 := strings.Cut(fn, "/invocations")
	if !ok || !ok2 || fn == "" {
		return Invocation{}, fmt.Errorf("iamgate: %s %s of %s has no Lambda integration uri", method, path, apiLogicalID)
	}
	id, err := g.r.RefString(apiLogicalID)
	if err != nil {
		return Invocation{}, err
	}
	source := "arn:" + g.arns.partition + ":execute-api:" + g.arns.region + ":" + g.arns.account + ":" + id + "/" + stage + "/" + strings.ToUpper(method) + path
	return Invocation{Service: "apigateway.amazonaws.com", SourceARN: source, FunctionARN: fn}, nil
}
