package cfn

import (
	"fmt"
	"strings"
)

// attrFunc computes a Ref or Fn::GetAtt value from a resource's physical
// name.
type attrFunc func(r *Resolver, res *Resource, name string) (any, error)

// kind describes how Ref and Fn::GetAtt behave for one resource type
// locally.
type kind struct {
	// nameProps are the properties that set the physical name; the first
	// one present wins.
	nameProps []string
	// defaultName computes the name when no name property is set; nil
	// means the logical ID.
	defaultName func(r *Resolver, res *Resource) (string, error)
	// ref computes Ref; nil means the physical name.
	ref   attrFunc
	attrs map[string]attrFunc
}

func nameAttr(_ *Resolver, _ *Resource, name string) (any, error) { return name, nil }

func arnAttr(service, prefix string) attrFunc {
	return func(r *Resolver, _ *Resource, name string) (any, error) {
		return r.arn(service, prefix+name), nil
	}
}

func queueURL(r *Resolver, _ *Resource, name string) (any, error) {
	return "https://sqs." + r.env.Region + "." + r.env.URLSuffix() + "/" + r.env.AccountID + "/" + name, nil
}

func stateMachineARN(r *Resolver, _ *Resource, name string) (any, error) {
	return r.arn("states", "stateMachine:"+name), nil
}

func ruleARN(r *Resolver, res *Resource, name string) (any, error) {
	bus := "default"
	if b := res.Properties.Get("EventBusName"); b != nil {
		s, err := r.String(b)
		if err != nil {
			return nil, err
		}
		// EventBusName may be a name or an ARN.
		if i := strings.LastIndex(s, "/"); i >= 0 {
			s = s[i+1:]
		}
		bus = s
	}
	if bus == "default" {
		return r.arn("events", "rule/"+name), nil
	}
	return r.arn("events", "rule/"+bus+"/"+name), nil
}

func scheduleARN(r *Resolver, res *Resource, name string) (any, error) {
	group := "default"
	if g := res.Properties.Get("GroupName"); g != nil {
		s, err := r.String(g)
		if err != nil {
			return nil, err
		}
		group = s
	}
	return r.arn("scheduler", "schedule/"+group+"/"+name), nil
}

func roleARN(r *Resolver, res *Resource, name string) (any, error) {
	path := "/"
	if p := res.Properties.Get("Path"); p != nil {
		s, err := r.String(p)
		if err != nil {
			return nil, err
		}
		path = s
	}
	// IAM is global: no region in the ARN.
	return "arn:" + r.env.Partition + ":iam::" + r.env.AccountID + ":role" + path + name, nil
}

func fifoQueueName(r *Resolver, res *Resource) (string, error) {
	if f := res.Properties.Get("FifoQueue"); f != nil {
		v, err := r.Value(f)
		if err != nil {
			return "", err
		}
		if b, _ := toBool(v); b {
			return res.LogicalID + ".fifo", nil
		}
	}
	return res.LogicalID, nil
}

var (
	functionKind = kind{
		nameProps: []string{"FunctionName"},
		attrs:     map[string]attrFunc{"Arn": arnAttr("lambda", "function:")},
	}
	stateMachineKind = kind{
		nameProps: []string{"Name", "StateMachineName"},
		ref:       stateMachineARN,
		attrs:     map[string]attrFunc{"Arn": stateMachineARN, "Name": nameAttr},
	}
	restAPIKind = kind{nameProps: []string{"Name"}, ref: func(_ *Resolver, res *Resource, _ string) (any, error) {
		// The REST API ID: the logical ID stands in for the generated one.
		return res.LogicalID, nil
	}}
)

// kinds is filled in init: its functions resolve properties, which
// looks kinds up again.
var kinds map[string]kind

func init() {
	kinds = map[string]kind{
		TypeTable: {
			nameProps: []string{"TableName"},
			attrs:     map[string]attrFunc{"Arn": arnAttr("dynamodb", "table/")},
		},
		TypeServerlessFunc: functionKind,
		TypeLambdaFunc:     functionKind,
		// Locally there is one version of each function: an alias's ARN
		// is its function's, qualified by the alias name, and invoking it
		// runs the function.
		TypeLambdaAlias: {ref: func(r *Resolver, res *Resource, _ string) (any, error) {
			a, ok := r.t.aliases[res.LogicalID]
			if !ok {
				// An alias written out (as the SAM transform writes
				// AutoPublishAlias): its FunctionName and Name.
				return explicitAliasARN(r, res)
			}
			arn, err := r.getAtt(nil, a.function, "Arn")
			if err != nil {
				return nil, err
			}
			s, ok := arn.(string)
			if !ok {
				return nil, fmt.Errorf("cfn: the ARN of %s is not a string", a.function)
			}
			return s + ":" + a.name, nil
		}},
		// A published version: its function's ARN qualified by
		// LocalVersion, the one version a function has locally.
		"AWS::Lambda::Version": {
			ref: func(r *Resolver, res *Resource, _ string) (any, error) {
				n := res.Properties.Get("FunctionName")
				if n == nil {
					return nil, r.errAt(res.Properties, ErrInvalid, "AWS::Lambda::Version %s has no FunctionName", res.LogicalID)
				}
				fn, err := r.String(n)
				if err != nil {
					return nil, err
				}
				if !strings.HasPrefix(fn, "arn:") {
					fn = r.arn("lambda", "function:"+fn)
				}
				return fn + ":" + LocalVersion, nil
			},
			attrs: map[string]attrFunc{"Version": func(*Resolver, *Resource, string) (any, error) { return LocalVersion, nil }},
		},
		TypeServerlessSM:    stateMachineKind,
		TypeStepFunctionsSM: stateMachineKind,
		TypeServerlessAPI:   restAPIKind,
		TypeRestAPI:         restAPIKind,
		TypeQueue: {
			nameProps:   []string{"QueueName"},
			defaultName: fifoQueueName,
			ref:         queueURL,
			attrs: map[string]attrFunc{
				"Arn":       arnAttr("sqs", ""),
				"QueueName": nameAttr,
				"QueueUrl":  queueURL,
			},
		},
		TypeTopic: {
			nameProps: []string{"TopicName"},
			ref:       arnAttr("sns", ""),
			attrs:     map[string]attrFunc{"TopicArn": arnAttr("sns", ""), "TopicName": nameAttr},
		},
		TypeEventRule: {
			nameProps: []string{"Name"},
			attrs:     map[string]attrFunc{"Arn": ruleARN},
		},
		TypeEventBus: {
			nameProps: []string{"Name"},
			attrs:     map[string]attrFunc{"Arn": arnAttr("events", "event-bus/"), "Name": nameAttr},
		},
		TypeSchedule: {
			nameProps: []string{"Name"},
			attrs:     map[string]attrFunc{"Arn": scheduleARN},
		},
		TypeRole: {
			nameProps: []string{"RoleName"},
			attrs:     map[string]attrFunc{"Arn": roleARN},
		},
		TypeLogGroup: {
			nameProps: []string{"LogGroupName"},
			attrs: map[string]attrFunc{"Arn": func(r *Resolver, _ *Resource, name string) (any, error) {
				return r.arn("logs", "log-group:"+name+":*"), nil
			}},
		},
	}
}

// explicitAliasARN is the ARN of an AWS::Lambda::Alias resource: its
// function's, by name or ARN, qualified by its Name.
func explicitAliasARN(r *Resolver, res *Resource) (any, error) {
	at := func(prop string) (string, error) {
		n := res.Properties.Get(prop)
		if n == nil {
			return "", r.errAt(res.Properties, ErrInvalid, "AWS::Lambda::Alias %s has no %s", res.LogicalID, prop)
		}
		return r.String(n)
	}
	fn, err := at("FunctionName")
	if err != nil {
		return nil, err
	}
	name, err := at("Name")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(fn, "arn:") {
		fn = r.arn("lambda", "function:"+fn)
	}
	return fn + ":" + name, nil
}

// kindOf returns the behaviour of a resource type; unknown types Ref to
// their logical ID and have no attributes.
func kindOf(typ string) kind { return kinds[typ] }
