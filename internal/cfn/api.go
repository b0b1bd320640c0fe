package cfn

import (
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

// APIRoutes returns the Api events of the template's functions in
// document order.
func (t *Template) APIRoutes(env Env) ([]Route, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	var out []Route
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
