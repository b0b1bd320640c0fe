package cfn

import (
	"time"
)

// SAM defaults for AWS::Serverless::Function.
const (
	// DefaultAsyncMaximumRetryAttempts and DefaultAsyncMaximumEventAgeInSeconds
	// are Lambda's asynchronous invocation defaults, used when a function
	// has no EventInvokeConfig or leaves a field out.
	DefaultAsyncMaximumRetryAttempts     = 2
	DefaultAsyncMaximumEventAgeInSeconds = 21600

	DefaultFunctionTimeout    = 3 * time.Second
	DefaultFunctionMemorySize = 128
	DefaultArchitecture       = "x86_64"
)

// Function is an AWS::Serverless::Function with Globals.Function merged in.
type Function struct {
	LogicalID string
	// Name is the function name: FunctionName, or the logical ID.
	Name string
	// CodeUri is the code location as written, relative to the template's
	// directory.
	CodeUri string
	Handler string
	Runtime string
	// Architectures defaults to [x86_64].
	Architectures []string
	// Timeout defaults to 3 s and MemorySize to 128 MB, as in SAM.
	Timeout    time.Duration
	MemorySize int
	// Environment holds the resolved Environment.Variables.
	Environment map[string]string
	// Events by event name.
	Events map[string]Event
	// EventInvokeConfig configures asynchronous invocations (such as
	// EventBridge's); nil when the template sets none.
	EventInvokeConfig *EventInvokeConfig
	// ReservedConcurrency is ReservedConcurrentExecutions: at most this
	// many invocations run at once. nil when the template sets none (or
	// AWS::NoValue).
	ReservedConcurrency *int
}

// EventInvokeConfig is a function's EventInvokeConfig: how Lambda retries
// a failed asynchronous invocation, and where the event goes after the
// last failure.
type EventInvokeConfig struct {
	// MaximumRetryAttempts is 0-2 (default DefaultAsyncMaximumRetryAttempts).
	MaximumRetryAttempts int
	// MaximumEventAgeInSeconds is 60-21600 (default
	// DefaultAsyncMaximumEventAgeInSeconds).
	MaximumEventAgeInSeconds int
	// OnFailure is DestinationConfig.OnFailure; nil for none.
	OnFailure *Destination
}

// Destination is an asynchronous invocation destination.
type Destination struct {
	// Type is SQS, SNS, Lambda, EventBridge or S3.
	Type string
	// Destination is the resolved ARN.
	Destination string
}

// Event is one entry of a function's Events.
type Event struct {
	Type string
	// Properties with intrinsic functions resolved.
	Properties map[string]any
}

// Functions returns the template's AWS::Serverless::Function resources
// (those whose condition holds) in document order.
func (t *Template) Functions(env Env) ([]Function, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	var out []Function
	resources, err := r.existing(TypeServerlessFunc)
	if err != nil {
		return nil, err
	}
	for _, res := range resources {
		f, err := r.function(res)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (r *Resolver) function(res *Resource) (Function, error) {
	f := Function{
		LogicalID:     res.LogicalID,
		Timeout:       DefaultFunctionTimeout,
		MemorySize:    DefaultFunctionMemorySize,
		Architectures: []string{DefaultArchitecture},
		Environment:   map[string]string{},
		Events:        map[string]Event{},
	}
	var err error
	if f.Name, err = r.PhysicalName(res); err != nil {
		return Function{}, err
	}
	p := res.Properties
	if n := p.Get("CodeUri"); n != nil {
		v, err := r.Value(n)
		if err != nil {
			return Function{}, err
		}
		s, ok := v.(string)
		if !ok {
			return Function{}, r.unsupported(n, "CodeUri that is not a local path")
		}
		f.CodeUri = s
	}
	for key, dst := range map[string]*string{"Handler": &f.Handler, "Runtime": &f.Runtime} {
		if n := p.Get(key); n != nil {
			if *dst, err = r.String(n); err != nil {
				return Function{}, err
			}
		}
	}
	if n := p.Get("Timeout"); n != nil {
		secs, err := r.integer(n, "Timeout")
		if err != nil {
			return Function{}, err
		}
		f.Timeout = time.Duration(secs) * time.Second
	}
	if n := p.Get("MemorySize"); n != nil {
		mb, err := r.integer(n, "MemorySize")
		if err != nil {
			return Function{}, err
		}
		f.MemorySize = int(mb)
	}
	if n := p.Get("Architectures"); n != nil {
		if f.Architectures, err = r.stringList(n, "Architectures"); err != nil {
			return Function{}, err
		}
	}
	if vars := p.Get("Environment").Get("Variables"); vars != nil {
		if vars.Kind != KindMapping {
			return Function{}, r.errAt(vars, ErrInvalid, "Environment.Variables must be a mapping")
		}
		for _, k := range vars.Keys {
			v, err := r.Value(vars.Get(k))
			if err != nil {
				return Function{}, err
			}
			if v == nil {
				continue // AWS::NoValue
			}
			s, ok := stringify(v)
			if !ok {
				return Function{}, r.errAt(vars.Get(k), ErrInvalid, "environment variable %s must be a string, got %s", k, describe(v))
			}
			if s, err = r.dynamicRefs(vars.Get(k), s); err != nil {
				return Function{}, err
			}
			f.Environment[k] = s
		}
	}
	if n := p.Get("ReservedConcurrentExecutions"); n != nil {
		v, err := r.Value(n)
		if err != nil {
			return Function{}, err
		}
		if v != nil {
			c, ok := toInt(v)
			if !ok || c < 0 {
				return Function{}, r.errAt(n, ErrInvalid, "ReservedConcurrentExecutions must be a whole number, got %v", v)
			}
			reserved := int(c)
			f.ReservedConcurrency = &reserved
		}
	}
	if n := p.Get("EventInvokeConfig"); n != nil {
		if f.EventInvokeConfig, err = r.eventInvokeConfig(n); err != nil {
			return Function{}, err
		}
	}
	if events := p.Get("Events"); events != nil {
		if events.Kind != KindMapping {
			return Function{}, r.errAt(events, ErrInvalid, "Events must be a mapping")
		}
		for _, name := range events.Keys {
			en := events.Get(name)
			typ, ok := en.Get("Type").Str()
			if !ok {
				return Function{}, r.errAt(en, ErrInvalid, "event %s needs a Type", name)
			}
			props, err := r.Value(en.Get("Properties"))
			if err != nil {
				return Function{}, err
			}
			m, _ := props.(map[string]any)
			if m == nil {
				if props != nil {
					return Function{}, r.errAt(en.Get("Properties"), ErrInvalid, "event Properties must be a mapping")
				}
				m = map[string]any{}
			}
			f.Events[name] = Event{Type: typ, Properties: m}
		}
	}
	return f, nil
}

func (r *Resolver) integer(n *Node, what string) (int64, error) {
	v, err := r.Value(n)
	if err != nil {
		return 0, err
	}
	i, ok := toInt(v)
	if !ok {
		return 0, r.errAt(n, ErrInvalid, "%s must be an integer, got %v", what, v)
	}
	return i, nil
}

func (r *Resolver) stringList(n *Node, what string) ([]string, error) {
	v, err := r.Value(n)
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, r.errAt(n, ErrInvalid, "%s must be a list, got %s", what, describe(v))
	}
	out := make([]string, len(l))
	for i, it := range l {
		s, ok := stringify(it)
		if !ok {
			return nil, r.errAt(n, ErrInvalid, "%s[%d] must be a string, got %s", what, i, describe(it))
		}
		out[i] = s
	}
	return out, nil
}

// eventInvokeConfig reads a SAM EventInvokeConfig.
func (r *Resolver) eventInvokeConfig(n *Node) (*EventInvokeConfig, error) {
	c := &EventInvokeConfig{MaximumRetryAttempts: DefaultAsyncMaximumRetryAttempts, MaximumEventAgeInSeconds: DefaultAsyncMaximumEventAgeInSeconds}
	if n.Kind != KindMapping {
		return nil, r.errAt(n, ErrInvalid, "EventInvokeConfig must be a mapping")
	}
	for _, k := range n.Keys {
		v := n.Get(k)
		switch k {
		case "MaximumRetryAttempts":
			i, err := r.integer(v, "EventInvokeConfig.MaximumRetryAttempts")
			if err != nil {
				return nil, err
			}
			if i < 0 || i > 2 {
				return nil, r.errAt(v, ErrInvalid, "EventInvokeConfig.MaximumRetryAttempts must be 0-2, got %d", i)
			}
			c.MaximumRetryAttempts = int(i)
		case "MaximumEventAgeInSeconds":
			i, err := r.integer(v, "EventInvokeConfig.MaximumEventAgeInSeconds")
			if err != nil {
				return nil, err
			}
			if i < 60 || i > 21600 {
				return nil, r.errAt(v, ErrInvalid, "EventInvokeConfig.MaximumEventAgeInSeconds must be 60-21600, got %d", i)
			}
			c.MaximumEventAgeInSeconds = int(i)
		case "DestinationConfig":
			if v.Kind != KindMapping {
				return nil, r.errAt(v, ErrInvalid, "EventInvokeConfig.DestinationConfig must be a mapping")
			}
			for _, dk := range v.Keys {
				switch dk {
				case "OnFailure":
					d, err := r.destination(v.Get(dk))
					if err != nil {
						return nil, err
					}
					c.OnFailure = d
				case "OnSuccess":
					// Successful asynchronous invocations go nowhere locally.
				default:
					return nil, r.errAt(v.Get(dk), ErrInvalid, "unknown EventInvokeConfig.DestinationConfig property %s", dk)
				}
			}
		default:
			return nil, r.errAt(v, ErrInvalid, "unknown EventInvokeConfig property %s", k)
		}
	}
	return c, nil
}

// destination reads an OnFailure / OnSuccess destination.
func (r *Resolver) destination(n *Node) (*Destination, error) {
	if n == nil || n.Kind != KindMapping {
		return nil, r.errAt(n, ErrInvalid, "a destination must be a mapping with Type and Destination")
	}
	d := &Destination{}
	for _, k := range n.Keys {
		var err error
		switch k {
		case "Type":
			d.Type, err = r.String(n.Get(k))
		case "Destination":
			d.Destination, err = r.String(n.Get(k))
		default:
			err = r.errAt(n.Get(k), ErrInvalid, "unknown destination property %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if d.Destination == "" {
		return nil, r.errAt(n, ErrInvalid, "a destination needs a Destination ARN")
	}
	return d, nil
}
