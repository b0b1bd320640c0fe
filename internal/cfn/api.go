package cfn

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Route is an Api event of an AWS::Serverless::Function.
type Route struct {
	// Path such as /transfers/{id}; Method upper-case, ANY for "any".
	Path   string
	Method string
	// FunctionLogicalID is the function invoked; EventName the event's
	// key in its Events.
	FunctionLogicalID string
	EventName         string
	// RestApiID is the logical ID of the AWS::Serverless::Api, or
	// ServerlessRestApi for the API SAM creates implicitly.
	RestApiID string
	// Authorizer is the event's Auth.Authorizer, else the API's
	// Auth.DefaultAuthorizer, else "NONE". AWS_IAM requires SigV4-signed
	// requests.
	Authorizer string
}

// AuthorizerNone is the Authorizer of a route without authorization.
const AuthorizerNone = "NONE"

// APIRoutes returns the routes of the template's APIs: first the Lambda
// proxy integrations of each API's OpenAPI definition (DefinitionBody or
// Body, AWS::Include resolved), ordered by path and method, then the Api
// events of the functions in document order.
func (t *Template) APIRoutes(env Env) ([]Route, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	out, err := r.definitionRoutes()
	if err != nil {
		return nil, err
	}
	resources, err := r.existing(TypeServerlessFunc)
	if err != nil {
		return nil, err
	}
	for _, res := range resources {
		events := res.Properties.Get("Events")
		if !events.Is(KindMapping) {
			continue
		}
		for _, name := range events.Keys {
			en := events.Get(name)
			if typ, _ := en.Get("Type").Str(); typ != "Api" {
				continue
			}
			route, err := r.route(res, name, propsOf(en))
			if err != nil {
				return nil, err
			}
			out = append(out, route)
		}
	}
	return out, nil
}

// propsOf returns the Properties of an event, or the event itself (for
// error positions) when it has none.
func propsOf(event *Node) *Node {
	if p := event.Get("Properties"); p != nil {
		return p
	}
	return event
}

func (r *Resolver) route(fn *Resource, event string, props *Node) (Route, error) {
	p, err := r.object(props)
	if err != nil {
		return Route{}, err
	}
	rt := Route{FunctionLogicalID: fn.LogicalID, EventName: event, RestApiID: implicitRestAPIID}
	if rt.Path, err = p.str("Path", true); err != nil {
		return Route{}, err
	}
	if rt.Method, err = p.str("Method", true); err != nil {
		return Route{}, err
	}
	rt.Method = strings.ToUpper(rt.Method)
	if id, err := p.str("RestApiId", false); err != nil {
		return Route{}, err
	} else if id != "" {
		rt.RestApiID = id
	}
	api, ok := r.t.Resources[rt.RestApiID]
	if !ok {
		return Route{}, p.errf("RestApiId", ErrUnresolved, "RestApiId %s is not an API of this template", rt.RestApiID)
	}
	if a, ok, err := p.child("Auth"); err != nil {
		return Route{}, err
	} else if ok {
		if rt.Authorizer, err = a.str("Authorizer", false); err != nil {
			return Route{}, err
		}
	}
	if rt.Authorizer == "" {
		if n := api.Properties.Get("Auth").Get("DefaultAuthorizer"); n != nil {
			if rt.Authorizer, err = r.String(n); err != nil {
				return Route{}, err
			}
		}
	}
	if rt.Authorizer == "" {
		rt.Authorizer = AuthorizerNone
	}
	return rt, nil
}

// definitionProperty is the property holding an API's OpenAPI document.
func definitionProperty(res *Resource) *Node {
	switch res.Type {
	case TypeServerlessAPI:
		return res.Properties.Get("DefinitionBody")
	case TypeRestAPI:
		return res.Properties.Get("Body")
	}
	return nil
}

// APIDefinition returns the OpenAPI document of an API resource
// (DefinitionBody of an AWS::Serverless::Api, Body of an
// AWS::ApiGateway::RestApi) as JSON, with AWS::Include resolved and every
// intrinsic function evaluated for env; nil when the API has none.
func (t *Template) APIDefinition(env Env, apiID string) ([]byte, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	res, ok := t.Resources[apiID]
	if !ok {
		return nil, fmt.Errorf("%w: no API %s", ErrUnresolved, apiID)
	}
	doc, err := r.definition(res)
	if err != nil || doc == nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, t.errAt(definitionProperty(res), ErrInvalid, "the API definition does not encode as JSON: %v", err)
	}
	return b, nil
}

func (r *Resolver) definition(res *Resource) (map[string]any, error) {
	n := definitionProperty(res)
	if n.IsNull() {
		return nil, nil
	}
	v, err := r.Value(n)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, r.errAt(n, ErrInvalid, "the API definition must be a mapping, not %s", describe(v))
	}
	return doc, nil
}

// definitionRoutes returns the aws_proxy integrations of the existing
// APIs' definitions whose URI names a function of the template.
func (r *Resolver) definitionRoutes() ([]Route, error) {
	apis, err := r.existing(TypeServerlessAPI, TypeRestAPI)
	if err != nil {
		return nil, err
	}
	var functionARNs map[string]string // ARN -> logical ID
	var out []Route
	for _, api := range apis {
		doc, err := r.definition(api)
		if err != nil {
			return nil, err
		}
		paths, _ := doc["paths"].(map[string]any)
		if len(paths) == 0 {
			continue
		}
		if functionARNs == nil {
			if functionARNs, err = r.functionARNs(); err != nil {
				return nil, err
			}
		}
		names := make([]string, 0, len(paths))
		for p := range paths {
			names = append(names, p)
		}
		slices.Sort(names)
		for _, path := range names {
			item, _ := paths[path].(map[string]any)
			methods := make([]string, 0, len(item))
			for m := range item {
				methods = append(methods, m)
			}
			slices.Sort(methods)
			for _, m := range methods {
				op, _ := item[m].(map[string]any)
				integ, _ := op["x-amazon-apigateway-integration"].(map[string]any)
				if integ == nil {
					continue
				}
				if typ, _ := integ["type"].(string); !strings.EqualFold(typ, "aws_proxy") {
					continue
				}
				uri, _ := integ["uri"].(string)
				fn, ok := functionOfURI(uri, functionARNs)
				if !ok {
					return nil, r.errAt(definitionProperty(api), ErrUnresolved,
						"%s %s: integration URI %q names no function of this template", strings.ToUpper(m), path, uri)
				}
				method := strings.ToUpper(m)
				if method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
					method = "ANY"
				}
				out = append(out, Route{Path: path, Method: method, FunctionLogicalID: fn, RestApiID: api.LogicalID,
					Authorizer: authorizerOf(doc, op)})
			}
		}
	}
	return out, nil
}

// functionARNs maps the ARN of each existing function to its logical ID.
func (r *Resolver) functionARNs() (map[string]string, error) {
	fns, err := r.existing(TypeServerlessFunc, TypeLambdaFunc)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(fns))
	for _, fn := range fns {
		arn, err := r.getAtt(nil, fn.LogicalID, "Arn")
		if err != nil {
			return nil, err
		}
		if s, ok := arn.(string); ok {
			out[s] = fn.LogicalID
		}
	}
	return out, nil
}

// functionOfURI finds the function of a Lambda integration URI,
// arn:aws:apigateway:<region>:lambda:path/2015-03-31/functions/<function
// ARN>/invocations.
func functionOfURI(uri string, functionARNs map[string]string) (string, bool) {
	_, rest, ok := strings.Cut(uri, ":lambda:path/2015-03-31/functions/")
	if !ok {
		return "", false
	}
	arn, ok := strings.CutSuffix(rest, "/invocations")
	if !ok {
		return "", false
	}
	if id, ok := functionARNs[arn]; ok {
		return id, true
	}
	// A qualified ARN (an alias or a version) invokes its function:
	// arn:aws:lambda:region:account:function:name:qualifier.
	if parts := strings.Split(arn, ":"); len(parts) == 8 {
		id, ok := functionARNs[strings.Join(parts[:7], ":")]
		return id, ok
	}
	return "", false
}

// authorizerOf is the authorization of an operation: AWS_IAM for a
// security scheme with x-amazon-apigateway-authtype awsSigv4, the scheme's
// name for others, NONE without security (the operation's, else the
// document's).
func authorizerOf(doc, op map[string]any) string {
	sec, ok := op["security"].([]any)
	if !ok {
		sec, _ = doc["security"].([]any)
	}
	for _, req := range sec {
		m, _ := req.(map[string]any)
		for name := range m {
			components, _ := doc["components"].(map[string]any)
			if components == nil {
				components, _ = doc["securityDefinitions"].(map[string]any)
			} else {
				components, _ = components["securitySchemes"].(map[string]any)
			}
			scheme, _ := components[name].(map[string]any)
			if t, _ := scheme["x-amazon-apigateway-authtype"].(string); strings.EqualFold(t, "awsSigv4") {
				return "AWS_IAM"
			}
			return name
		}
	}
	return AuthorizerNone
}
