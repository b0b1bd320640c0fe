package cfn

import (
	"bytes"
	"encoding/json"
	"strings"
)

// EventBridge and EventBridge Scheduler retry defaults, used for fields a
// RetryPolicy leaves out.
const (
	DefaultMaximumRetryAttempts     = 185
	DefaultMaximumEventAgeInSeconds = 86400
)

// Rule sources.
const (
	SourceEventBridgeRule = "EventBridgeRule"
	SourceCloudWatchEvent = "CloudWatchEvent"
	SourceSchedule        = "Schedule"
	SourceScheduleV2      = "ScheduleV2"
	SourceEventsRule      = TypeEventRule
)

// Rule delivers events or scheduled invocations to one function.
type Rule struct {
	// LogicalID of the rule: for function events the ID SAM generates
	// (function logical ID + event name), else the AWS::Events::Rule's.
	LogicalID string
	// Source is the function event type (EventBridgeRule, CloudWatchEvent,
	// Schedule, ScheduleV2) or AWS::Events::Rule.
	Source string
	// Name is the rule or schedule name: its name property, or LogicalID.
	Name string
	// TargetFunction is the logical ID of the function invoked; TargetID
	// the target's Id for AWS::Events::Rule targets.
	TargetFunction string
	TargetID       string
	// EventBusName is the bus of a pattern rule; "" is the default bus.
	EventBusName string
	// Pattern is the JSON event pattern; nil for schedules.
	Pattern []byte
	// ScheduleExpression such as "rate(5 minutes)"; "" for pattern rules.
	ScheduleExpression string
	Enabled            bool
	// Input is the constant JSON the target receives instead of the event;
	// "" passes the event.
	Input string
	// RetryPolicy is nil when the template sets none (the service
	// defaults then apply: DefaultMaximumRetryAttempts and
	// DefaultMaximumEventAgeInSeconds).
	RetryPolicy *RetryPolicy
	// DeadLetterARN is the SQS queue ARN of the dead-letter queue; "" for
	// none.
	DeadLetterARN string
}

// RetryPolicy of an EventBridge target or schedule.
type RetryPolicy struct {
	MaximumRetryAttempts     int
	MaximumEventAgeInSeconds int
}

// Rules returns the event rules and schedules that invoke functions: the
// EventBridgeRule, CloudWatchEvent, Schedule and ScheduleV2 events of
// AWS::Serverless::Function resources, then the Lambda targets of
// AWS::Events::Rule resources.
func (t *Template) Rules(env Env) ([]Rule, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	var out []Rule
	functionARNs := map[string]string{}
	resources, err := r.existing(TypeServerlessFunc, TypeLambdaFunc)
	if err != nil {
		return nil, err
	}
	for _, res := range resources {
		arn, err := r.getAtt(res.Properties, res.LogicalID, "Arn")
		if err != nil {
			return nil, err
		}
		functionARNs[arn.(string)] = res.LogicalID
		if res.Type != TypeServerlessFunc {
			continue
		}
		events := res.Properties.Get("Events")
		if !events.Is(KindMapping) {
			continue
		}
		for _, name := range events.Keys {
			en := events.Get(name)
			typ, _ := en.Get("Type").Str()
			switch typ {
			case SourceEventBridgeRule, SourceCloudWatchEvent, SourceSchedule, SourceScheduleV2:
			default:
				continue
			}
			rule, err := r.eventRule(res, name, typ, propsOf(en))
			if err != nil {
				return nil, err
			}
			out = append(out, rule)
		}
	}
	eventRules, err := r.existing(TypeEventRule)
	if err != nil {
		return nil, err
	}
	for _, res := range eventRules {
		rules, err := r.eventsRuleResource(res, functionARNs)
		if err != nil {
			return nil, err
		}
		out = append(out, rules...)
	}
	return out, nil
}

func (r *Resolver) eventRule(fn *Resource, event, typ string, props *Node) (Rule, error) {
	rule := Rule{LogicalID: fn.LogicalID + event, Source: typ, TargetFunction: fn.LogicalID, Enabled: true}
	p, err := r.object(props)
	if err != nil {
		return Rule{}, err
	}
	nameKey := "Name"
	if typ == SourceEventBridgeRule || typ == SourceCloudWatchEvent {
		nameKey = "RuleName"
		pv, ok := p.value("Pattern")
		if !ok {
			return Rule{}, r.errAt(props, ErrInvalid, "Pattern is required")
		}
		if rule.Pattern, err = r.patternJSON(p.at("Pattern"), pv); err != nil {
			return Rule{}, err
		}
		if rule.EventBusName, err = p.str("EventBusName", false); err != nil {
			return Rule{}, err
		}
	} else {
		exprKey := "Schedule"
		if typ == SourceScheduleV2 {
			exprKey = "ScheduleExpression"
		}
		if rule.ScheduleExpression, err = p.str(exprKey, true); err != nil {
			return Rule{}, err
		}
	}
	if rule.Name, err = p.str(nameKey, false); err != nil {
		return Rule{}, err
	}
	if rule.Name == "" {
		rule.Name = rule.LogicalID
	}
	if en, ok, err := p.boolean("Enabled"); err != nil {
		return Rule{}, err
	} else if ok {
		rule.Enabled = en
	}
	state, err := p.str("State", false)
	if err != nil {
		return Rule{}, err
	}
	if state != "" {
		rule.Enabled = state == "ENABLED"
	}
	if rule.Input, err = p.str("Input", false); err != nil {
		return Rule{}, err
	}
	if rule.RetryPolicy, err = retryPolicy(p); err != nil {
		return Rule{}, err
	}
	if d, ok, err := p.child("DeadLetterConfig"); err != nil {
		return Rule{}, err
	} else if ok {
		if rule.DeadLetterARN, err = d.str("Arn", false); err != nil {
			return Rule{}, err
		}
		if rule.DeadLetterARN == "" {
			// SAM creates the queue: Type: SQS, with QueueLogicalId or
			// "<rule logical ID>Queue".
			typ, err := d.str("Type", false)
			if err != nil {
				return Rule{}, err
			}
			if typ != "SQS" {
				return Rule{}, d.errf("Type", ErrInvalid, "DeadLetterConfig needs Arn, or Type: SQS")
			}
			queue, err := d.str("QueueLogicalId", false)
			if err != nil {
				return Rule{}, err
			}
			if queue == "" {
				queue = rule.LogicalID + "Queue"
			}
			rule.DeadLetterARN = r.arn("sqs", queue)
		}
	}
	return rule, nil
}

func retryPolicy(p *object) (*RetryPolicy, error) {
	rp, ok, err := p.child("RetryPolicy")
	if err != nil || !ok {
		return nil, err
	}
	out := &RetryPolicy{MaximumRetryAttempts: DefaultMaximumRetryAttempts, MaximumEventAgeInSeconds: DefaultMaximumEventAgeInSeconds}
	if v, ok, err := rp.integer("MaximumRetryAttempts"); err != nil {
		return nil, err
	} else if ok {
		out.MaximumRetryAttempts = int(v)
	}
	if v, ok, err := rp.integer("MaximumEventAgeInSeconds"); err != nil {
		return nil, err
	} else if ok {
		out.MaximumEventAgeInSeconds = int(v)
	}
	if err := rp.unknown("RetryPolicy", nil); err != nil {
		return nil, err
	}
	return out, nil
}

// patternJSON encodes an event pattern given as a mapping, or checks and
// compacts one given as a JSON string.
func (r *Resolver) patternJSON(n *Node, v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(s)); err != nil {
			return nil, r.errAt(n, ErrInvalid, "event pattern is not JSON: %v", err)
		}
		return buf.Bytes(), nil
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, r.errAt(n, ErrInvalid, "event pattern must be a mapping, got %s", describe(v))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, r.errAt(n, ErrInvalid, "encode event pattern: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (r *Resolver) eventsRuleResource(res *Resource, functionARNs map[string]string) ([]Rule, error) {
	p, err := r.object(res.Properties)
	if err != nil {
		return nil, err
	}
	base := Rule{LogicalID: res.LogicalID, Source: SourceEventsRule, Enabled: true}
	if base.Name, err = r.PhysicalName(res); err != nil {
		return nil, err
	}
	if pv, ok := p.value("EventPattern"); ok {
		if base.Pattern, err = r.patternJSON(p.at("EventPattern"), pv); err != nil {
			return nil, err
		}
	}
	if base.ScheduleExpression, err = p.str("ScheduleExpression", false); err != nil {
		return nil, err
	}
	if base.EventBusName, err = p.str("EventBusName", false); err != nil {
		return nil, err
	}
	if state, err := p.str("State", false); err != nil {
		return nil, err
	} else if state != "" {
		base.Enabled = state == "ENABLED"
	}
	targets, err := p.objects("Targets")
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, tg := range targets {
		arn, err := tg.str("Arn", true)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(arn, ":lambda:") {
			continue // not a function: the local runtime has nothing to invoke
		}
		rule := base
		fn, ok := functionARNs[arn]
		if !ok {
			return nil, tg.errf("Arn", ErrUnresolved, "target %s is not a function of this template", arn)
		}
		rule.TargetFunction = fn
		if rule.TargetID, err = tg.str("Id", false); err != nil {
			return nil, err
		}
		if rule.Input, err = tg.str("Input", false); err != nil {
			return nil, err
		}
		if rule.RetryPolicy, err = retryPolicy(tg); err != nil {
			return nil, err
		}
		if d, ok, err := tg.child("DeadLetterConfig"); err != nil {
			return nil, err
		} else if ok {
			if rule.DeadLetterARN, err = d.str("Arn", true); err != nil {
				return nil, err
			}
		}
		out = append(out, rule)
	}
	return out, nil
}
