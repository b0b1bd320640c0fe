// Package iamgate checks every call a principal of the local stack makes
// against that principal's policies, as AWS does, and refuses what AWS
// would refuse with AccessDeniedException.
//
// The policies come from the template as CloudFormation sees it, after the
// SAM transform (template.cfn.json): each function's and state machine's
// role (inline policies, AWS::IAM::Policy resources attached to it, and the
// AWS managed policies it names), and the functions' resource policies
// (AWS::Lambda::Permission). Each role signs its calls with credentials of
// its own (Credentials), so a check knows the caller from the request's
// SigV4 Authorization header, as AWS does; the runtime's own calls (table
// creation, seeding, a test's reads) sign with AdminCredentials, which
// every check admits.
//
// The checks:
//   - a function's or the workflow's DynamoDB and Step Functions calls
//     (Transport, which wraps the HTTP transport the calls go through);
//   - the workflow's lambda:InvokeFunction of each task (AuthorizeInvoke
//     with the state machine's role);
//   - the invocations of EventBridge rules and API Gateway (AuthorizeInvoke
//     with a service principal, against the function's resource policy).
//
// Policies are evaluated by internal/iam. A condition key the gate cannot
// supply, an action it cannot map from a request, a managed policy it does
// not carry: each is refused with an error naming it, never allowed.
package iamgate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/iam"
)

// AdminCredentials sign the runtime's own calls, which no policy limits:
// the operator's, not a deployed principal's.
var AdminCredentials = aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "iamgate"}

// Role is an IAM role of the transformed template that a local principal
// assumes.
type Role struct {
	LogicalID string
	ARN       string
	// Session is the session name AWS gives the role's calls: the
	// function's name, or the state machine's.
	Session  string
	Policies []*iam.Policy
	// accessKey identifies the role's credentials.
	accessKey string
}

// SessionARN is the assumed-role ARN AWS names in its refusals.
func (r *Role) SessionARN(account string) string {
	return "arn:aws:sts::" + account + ":assumed-role/" + roleName(r.ARN) + "/" + r.Session
}

func roleName(arn string) string {
	if i := strings.LastIndex(arn, "/"); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

// Credentials are the role's: static keys whose access key id names it.
func (r *Role) Credentials() aws.Credentials {
	return aws.Credentials{AccessKeyID: r.accessKey, SecretAccessKey: "local", SessionToken: "local-" + r.LogicalID, Source: "iamgate"}
}

// accessKeyFor is a stable, AWS-shaped access key id for a role ARN.
func accessKeyFor(arn string) string {
	sum := sha256.Sum256([]byte(arn))
	return "ASIA" + strings.ToUpper(hex.EncodeToString(sum[:8]))
}

// principals reads the roles that the template's functions and state
// machines run under, and the functions' resource policies.
type principals struct {
	account string
	// functionRoles and machineRoles by the logical ID of the function or
	// state machine; byKey by access key id.
	functionRoles map[string]*Role
	machineRoles  map[string]*Role
	byKey         map[string]*Role
	// resourcePolicies holds one policy per AWS::Lambda::Permission, by the
	// unqualified ARN of its function.
	resourcePolicies map[string][]*iam.Policy
}

func loadPrincipals(tpl *cfn.Template, env cfn.Env) (*principals, error) {
	r, err := cfn.NewResolver(tpl, env)
	if err != nil {
		return nil, err
	}
	p := &principals{
		account:          r.Env().AccountID,
		functionRoles:    map[string]*Role{},
		machineRoles:     map[string]*Role{},
		byKey:            map[string]*Role{},
		resourcePolicies: map[string][]*iam.Policy{},
	}
	roles := map[string]*Role{} // by role ARN
	for _, id := range tpl.ResourceOrder {
		res := tpl.Resources[id]
		var roleProp, service string
		switch res.Type {
		case cfn.TypeLambdaFunc:
			roleProp, service = "Role", "lambda.amazonaws.com"
		case cfn.TypeStepFunctionsSM:
			roleProp, service = "RoleArn", "states.amazonaws.com"
		default:
			continue
		}
		if ok, err := r.Exists(res); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		n := res.Properties.Get(roleProp)
		if n == nil {
			return nil, fmt.Errorf("iamgate: %s %s has no %s", res.Type, id, roleProp)
		}
		arn, err := r.String(n)
		if err != nil {
			return nil, fmt.Errorf("iamgate: %s.%s: %w", id, roleProp, err)
		}
		session, err := r.PhysicalName(res)
		if err != nil {
			return nil, err
		}
		role := roles[arn]
		if role == nil {
			if role, err = loadRole(tpl, r, arn); err != nil {
				return nil, fmt.Errorf("iamgate: the role of %s: %w", id, err)
			}
			if err := checkTrust(tpl, r, role, service); err != nil {
				return nil, fmt.Errorf("iamgate: %s cannot assume its role: %w", id, err)
			}
			roles[arn] = role
		}
		// A role shared by several principals keeps its first session
		// name: its calls are told apart by role, as AWS's policies do.
		if role.Session == "" {
			role.Session = session
		}
		p.byKey[role.accessKey] = role
		if res.Type == cfn.TypeLambdaFunc {
			p.functionRoles[id] = role
		} else {
			p.machineRoles[id] = role
		}
	}
	if err := p.loadPermissions(tpl, r); err != nil {
		return nil, err
	}
	return p, nil
}

// loadRole finds the AWS::IAM::Role whose ARN is arn and collects its
// policies: inline Policies, ManagedPolicyArns, and the AWS::IAM::Policy
// and AWS::IAM::ManagedPolicy resources that attach to it.
func loadRole(tpl *cfn.Template, r *cfn.Resolver, arn string) (*Role, error) {
	var found *cfn.Resource
	for _, res := range tpl.ResourcesOfType(cfn.TypeRole) {
		if ok, err := r.Exists(res); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		got, err := r.GetAttString(res.LogicalID, "Arn")
		if err != nil {
			return nil, err
		}
		if got == arn {
			found = res
			break
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s is not a role of the template (a role from outside the stack cannot be checked locally)", arn)
	}
	role := &Role{LogicalID: found.LogicalID, ARN: arn, accessKey: accessKeyFor(arn)}
	props, err := r.Value(found.Properties)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", found.LogicalID, err)
	}
	m, _ := props.(map[string]any)
	if list, ok := m["Policies"].([]any); ok {
		for i, v := range list {
			entry, _ := v.(map[string]any)
			name, _ := entry["PolicyName"].(string)
			if name == "" {
				name = fmt.Sprintf("Policies[%d]", i)
			}
			pol, err := iam.ParsePolicy(found.LogicalID+"/"+name, entry["PolicyDocument"])
			if err != nil {
				return nil, err
			}
			role.Policies = append(role.Policies, pol)
		}
	}
	if list, ok := m["ManagedPolicyArns"].([]any); ok {
		for _, v := range list {
			marn, _ := v.(string)
			pol, err := managedPolicy(marn)
			if err != nil {
				return nil, fmt.Errorf("%s.ManagedPolicyArns: %w", found.LogicalID, err)
			}
			role.Policies = append(role.Policies, pol)
		}
	}
	// Policies attached from elsewhere.
	for _, res := range tpl.ResourcesOfType("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") {
		if ok, err := r.Exists(res); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		v, err := r.Value(res.Properties)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.LogicalID, err)
		}
		pm, _ := v.(map[string]any)
		attached := false
		names, _ := pm["Roles"].([]any)
		for _, n := range names {
			if s, _ := n.(string); s == roleName(arn) {
				attached = true
			}
		}
		if !attached {
			continue
		}
		pol, err := iam.ParsePolicy(res.LogicalID, pm["PolicyDocument"])
		if err != nil {
			return nil, err
		}
		role.Policies = append(role.Policies, pol)
	}
	return role, nil
}

// checkTrust requires the role's trust policy to let service assume it,
// as the service's own sts:AssumeRole would.
func checkTrust(tpl *cfn.Template, r *cfn.Resolver, role *Role, service string) error {
	doc, err := r.Value(tpl.Resources[role.LogicalID].Properties.Get("AssumeRolePolicyDocument"))
	if err != nil {
		return err
	}
	// A trust policy names no Resource: the role is its resource.
	if m, ok := doc.(map[string]any); ok {
		stmts, ok := m["Statement"].([]any)
		if !ok {
			stmts = []any{m["Statement"]}
		}
		for _, st := range stmts {
			if sm, ok := st.(map[string]any); ok && sm["Resource"] == nil && sm["NotResource"] == nil {
				sm["Resource"] = role.ARN
			}
		}
	}
	trust, err := iam.ParsePolicy(role.LogicalID+"/AssumeRolePolicyDocument", doc)
	if err != nil {
		return err
	}
	res, err := iam.Evaluate(iam.Request{
		Principal: service, PrincipalIsService: true, Account: r.Env().AccountID,
		Action: "sts:AssumeRole", Resource: role.ARN,
		Context: serviceContext(service, r.Env().AccountID, ""),
	}, nil, []*iam.Policy{trust})
	if err != nil {
		return err
	}
	if res.Decision != iam.Allow {
		return fmt.Errorf("the trust policy of %s does not let %s assume it (%s)", role.LogicalID, service, res.Decision)
	}
	return nil
}

// loadPermissions turns each AWS::Lambda::Permission into the statement
// Lambda adds to its function's resource policy.
func (p *principals) loadPermissions(tpl *cfn.Template, r *cfn.Resolver) error {
	for _, res := range tpl.ResourcesOfType("AWS::Lambda::Permission") {
		if ok, err := r.Exists(res); err != nil {
			return err
		} else if !ok {
			continue
		}
		v, err := r.Value(res.Properties)
		if err != nil {
			return fmt.Errorf("iamgate: %s: %w", res.LogicalID, err)
		}
		m, _ := v.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		fn := str("FunctionName")
		if fn == "" || str("Action") == "" || str("Principal") == "" {
			return fmt.Errorf("iamgate: %s: FunctionName, Action and Principal are required", res.LogicalID)
		}
		if !strings.HasPrefix(fn, "arn:") {
			fn = "arn:" + r.Env().Partition + ":lambda:" + r.Env().Region + ":" + r.Env().AccountID + ":function:" + fn
		}
		stmt := map[string]any{"Sid": res.LogicalID, "Effect": "Allow", "Action": str("Action"), "Resource": fn}
		principal := str("Principal")
		if strings.HasSuffix(principal, ".amazonaws.com") {
			stmt["Principal"] = map[string]any{"Service": principal}
		} else {
			stmt["Principal"] = map[string]any{"AWS": principal}
		}
		cond := map[string]any{}
		if s := str("SourceArn"); s != "" {
			cond["ArnLike"] = map[string]any{"aws:SourceArn": s}
		}
		if s := str("SourceAccount"); s != "" {
			cond["StringEquals"] = map[string]any{"aws:SourceAccount": s}
		}
		if len(cond) > 0 {
			stmt["Condition"] = cond
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			switch k {
			case "FunctionName", "Action", "Principal", "SourceArn", "SourceAccount":
			default:
				return fmt.Errorf("iamgate: %s: property %s is not modelled locally", res.LogicalID, k)
			}
		}
		raw, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{stmt}})
		pol, err := iam.ParsePolicy(res.LogicalID, raw)
		if err != nil {
			return err
		}
		base := unqualified(fn)
		p.resourcePolicies[base] = append(p.resourcePolicies[base], pol)
	}
	return nil
}

// unqualified drops an alias or version from a function ARN.
func unqualified(arn string) string {
	parts := strings.SplitN(arn, ":", 8)
	if len(parts) == 8 {
		return strings.Join(parts[:7], ":")
	}
	return arn
}
