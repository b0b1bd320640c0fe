package asl

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Limits from the Amazon States Language and Step Functions quotas.
const (
	maxStateNameLength = 80
	maxSeconds         = 99999999 // TimeoutSeconds, IntervalSeconds, MaxAttempts
	maxDelaySeconds    = 31622400 // Retry MaxDelaySeconds
)

// Fields each supported state type accepts.
var stateFields = map[string][]string{
	typeTask: {"Type", "Comment", "QueryLanguage", "Assign", "Resource", "Parameters", "ResultSelector",
		"ResultPath", "OutputPath", "InputPath", "Retry", "Catch", "TimeoutSeconds", "TimeoutSecondsPath",
		"HeartbeatSeconds", "HeartbeatSecondsPath", "Next", "End"},
	typePass:    {"Type", "Comment", "QueryLanguage", "Assign", "Result", "ResultPath", "Parameters", "InputPath", "OutputPath", "Next", "End"},
	typeChoice:  {"Type", "Comment", "QueryLanguage", "Assign", "Choices", "Default", "InputPath", "OutputPath"},
	typeSucceed: {"Type", "Comment", "QueryLanguage", "InputPath", "OutputPath"},
	typeFail:    {"Type", "Comment", "QueryLanguage", "Error", "Cause", "ErrorPath", "CausePath"},
	typeWait:    {"Type", "Comment", "QueryLanguage", "Assign", "Seconds", "SecondsPath", "Timestamp", "TimestampPath", "InputPath", "OutputPath", "Next", "End"},
	typeParallel: {"Type", "Comment", "QueryLanguage", "Assign", "Branches", "InputPath", "OutputPath", "ResultPath", "Parameters",
		"ResultSelector", "Retry", "Catch", "Next", "End"},
	typeMap: {"Type", "Comment", "QueryLanguage", "Assign", "ItemsPath", "ItemSelector", "Parameters", "ItemProcessor", "Iterator",
		"MaxConcurrency", "MaxConcurrencyPath", "ToleratedFailurePercentage", "ToleratedFailurePercentagePath",
		"ToleratedFailureCount", "ToleratedFailureCountPath", "InputPath", "OutputPath", "ResultPath", "ResultSelector",
		"Retry", "Catch", "Next", "End"},
}

// unsupportedStateTypes are valid ASL state types this runtime does not
// execute.
var unsupportedStateTypes = map[string]bool{}

// unsupportedFields are valid ASL state fields this runtime does not
// implement.
var unsupportedFields = map[string]bool{
	"Credentials": true, "Arguments": true, "Output": true, "Items": true,
}

// distributedMapFields are the Map fields of Distributed Map only.
var distributedMapFields = map[string]bool{"ItemReader": true, "ItemBatcher": true, "ResultWriter": true, "Label": true}

// load parses and validates a definition; see Load.
func load(name string, data []byte, opts Options) (*Machine, error) {
	if s := opts.TimeScale; s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("%s: Options.TimeScale must be a finite number >= 0, got %v", name, s)
	}
	var probe any
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := syntaxPosition(data, se)
			return nil, fmt.Errorf("%s:%d:%d: invalid JSON: %w", name, line, col, err)
		}
		return nil, fmt.Errorf("%s: invalid JSON: %w", name, err)
	}
	def, err := parseDefinition(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Machine{def: def, opts: opts}, nil
}

func parseDefinition(data []byte, opts Options) (*definition, error) {
	if kind := rawKind(data); kind != "object" {
		return nil, fmt.Errorf("the definition must be a JSON object, got %s", kind)
	}
	top, err := parseObject("", data)
	if err != nil {
		return nil, err
	}
	for _, k := range top.keys {
		switch k {
		case "Comment", "Version", "StartAt", "States", "TimeoutSeconds", "QueryLanguage":
		default:
			return nil, errAt(k, "unknown top-level field %q", k)
		}
	}
	if err := checkQueryLanguage(top); err != nil {
		return nil, err
	}
	for _, k := range []string{"Comment", "Version"} {
		if _, _, err := top.str(k); err != nil {
			return nil, err
		}
	}
	def, err := parseStateMachine(top, opts)
	if err != nil {
		return nil, err
	}
	if err := checkScopes(def, nil, ""); err != nil {
		return nil, err
	}
	if def.timeoutSeconds, _, err = top.integer("TimeoutSeconds", 1, maxSeconds); err != nil {
		return nil, err
	}
	return def, nil
}

// parseStateMachine reads StartAt and States of the top level, a Parallel
// branch or a Map's ItemProcessor.
func parseStateMachine(top *jsonObject, opts Options) (*definition, error) {
	def := &definition{states: map[string]*state{}}
	var err error
	if def.startAt, err = top.requiredStr("StartAt"); err != nil {
		return nil, err
	}
	statesObj, ok, err := top.object("States")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errAt(top.at("States"), "is required")
	case len(statesObj.keys) == 0:
		return nil, errAt(top.at("States"), "must contain at least one state")
	}
	names := map[string]bool{}
	for _, n := range statesObj.keys {
		names[n] = true
	}
	if !names[def.startAt] {
		return nil, errAt(top.at("StartAt"), "no state named %q", def.startAt)
	}
	for _, n := range statesObj.keys {
		st, err := parseState(statesObj.at(n), n, statesObj.fields[n], names, opts)
		if err != nil {
			return nil, err
		}
		def.states[n] = st
		def.order = append(def.order, n)
	}
	if err := checkReachable(top.place, def); err != nil {
		return nil, err
	}
	return def, nil
}

// checkQueryLanguage accepts only the JSONPath query language.
func checkQueryLanguage(o *jsonObject) error {
	ql, ok, err := o.str("QueryLanguage")
	switch {
	case err != nil || !ok || ql == "JSONPath":
		return err
	case ql == "JSONata":
		return errAt(o.at("QueryLanguage"), "%q is not supported by the local runtime: no JSONata implementation is available to it; use \"JSONPath\"", ql)
	default:
		return errAt(o.at("QueryLanguage"), "unknown query language %q", ql)
	}
}

// checkReachable rejects states that no path from StartAt leads to, as
// Step Functions does.
func checkReachable(place string, def *definition) error {
	seen := map[string]bool{def.startAt: true}
	queue := []string{def.startAt}
	for len(queue) > 0 {
		st := def.states[queue[0]]
		queue = queue[1:]
		for _, n := range st.transitions() {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	for _, n := range def.order {
		if !seen[n] {
			return errAt(join(join(place, "States"), n), "state is not reachable from StartAt %q", def.startAt)
		}
	}
	return nil
}

func parseState(place, name string, raw json.RawMessage, names map[string]bool, opts Options) (*state, error) {
	if name == "" {
		return nil, errAt(place, "a state name must not be empty")
	}
	if n := len([]rune(name)); n > maxStateNameLength {
		return nil, errAt(place, "a state name must be at most %d characters, got %d", maxStateNameLength, n)
	}
	o, err := parseObject(place, raw)
	if err != nil {
		return nil, err
	}
	typ, err := o.requiredStr("Type")
	if err != nil {
		return nil, err
	}
	allowed, ok := stateFields[typ]
	if typ == typeMap {
		for _, k := range o.keys {
			if distributedMapFields[k] {
				return nil, errAt(o.at(k), "Map state %q: Distributed Map (%s) is not supported by the local runtime; only inline Map runs locally", name, k)
			}
		}
	}
	switch {
	case unsupportedStateTypes[typ]:
		return nil, errAt(o.at("Type"), "%q is not supported by the local runtime", typ)
	case !ok:
		return nil, errAt(o.at("Type"), "unknown state type %q", typ)
	}
	if err := checkQueryLanguage(o); err != nil {
		return nil, err
	}
	if err := checkFields(o, typ, allowed); err != nil {
		return nil, err
	}
	if _, _, err := o.str("Comment"); err != nil {
		return nil, err
	}
	st := &state{name: name, typ: typ}
	p := &stateParser{o: o, st: st, names: names}
	switch typ {
	case typeTask:
		err = p.task(opts)
	case typePass:
		err = p.pass()
	case typeChoice:
		err = p.choice()
	case typeSucceed:
		err = p.paths(false)
	case typeFail:
		err = p.fail()
	case typeWait:
		err = p.wait()
	case typeParallel:
		err = p.parallel(opts)
	case typeMap:
		err = p.mapState(opts)
	}
	if err != nil {
		return nil, err
	}
	if st.assign, err = compileAssign(o); err != nil {
		return nil, err
	}
	return st, nil
}

// checkFields rejects fields the state type does not accept, naming them.
func checkFields(o *jsonObject, typ string, allowed []string) error {
	ok := map[string]bool{}
	for _, f := range allowed {
		ok[f] = true
	}
	for _, k := range o.keys {
		switch {
		case ok[k]:
		case unsupportedFields[k]:
			return errAt(o.at(k), "field %q is not supported by the local runtime", k)
		case isStateField(k):
			return errAt(o.at(k), "field %q is not valid in a %s state", k, typ)
		default:
			return errAt(o.at(k), "unknown field %q", k)
		}
	}
	return nil
}

func isStateField(k string) bool {
	for _, fields := range stateFields {
		for _, f := range fields {
			if f == k {
				return true
			}
		}
	}
	return false
}

// stateParser fills a state from its JSON object.
type stateParser struct {
	o     *jsonObject
	st    *state
	names map[string]bool
}

// target reads a state name field that must name an existing state.
func (p *stateParser) target(o *jsonObject, key string) (string, bool, error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return "", ok, err
	}
	if !p.names[s] {
		return "", true, errAt(o.at(key), "no state named %q", s)
	}
	return s, true, nil
}

// transition reads Next/End of a Task or Pass state.
func (p *stateParser) transition() error {
	next, hasNext, err := p.target(p.o, "Next")
	if err != nil {
		return err
	}
	end, _, err := p.o.boolean("End")
	if err != nil {
		return err
	}
	switch {
	case hasNext && end:
		return errAt(p.o.at("End"), "a state cannot have both Next and \"End\": true")
	case !hasNext && !end:
		return errAt(p.o.place, "a %s state needs Next or \"End\": true", p.st.typ)
	}
	p.st.next, p.st.end = next, end
	return nil
}

// pathField reads InputPath, OutputPath or ResultPath: absent is "$", null
// is nil.
func (p *stateParser) pathField(o *jsonObject, key string, allowContext bool) (*refPath, error) {
	if !o.has(key) {
		return parsePath("$")
	}
	if o.isNull(key) {
		return nil, nil
	}
	s, _, err := o.str(key)
	if err != nil {
		return nil, err
	}
	// InputPath and OutputPath are Paths; ResultPath is a reference path.
	parse := parseQueryPath
	if !allowContext {
		parse = parsePath
	}
	path, err := parse(s)
	if err != nil {
		return nil, wrapAt(o.at(key), err)
	}
	if path.context && !allowContext {
		return nil, errAt(o.at(key), "must be a reference path into the state input, not the context object ($$)")
	}
	if path.variable != "" && !allowContext {
		return nil, errAt(o.at(key), "must be a reference path into the state input, not a variable ($%s)", path.variable)
	}
	return path, nil
}

// paths reads InputPath and OutputPath, and ResultPath when withResult.
func (p *stateParser) paths(withResult bool) error {
	var err error
	if p.st.inputPath, err = p.pathField(p.o, "InputPath", true); err != nil {
		return err
	}
	if p.st.outputPath, err = p.pathField(p.o, "OutputPath", true); err != nil {
		return err
	}
	if withResult {
		if p.st.resultPath, err = p.pathField(p.o, "ResultPath", false); err != nil {
			return err
		}
	}
	return nil
}

// templateField compiles Parameters or ResultSelector.
func (p *stateParser) templateField(key string) (template, error) {
	v, ok, err := p.o.value(key)
	if err != nil || !ok {
		return nil, err
	}
	return compileTemplate(p.o.at(key), v)
}

func (p *stateParser) pass() error {
	if err := p.transition(); err != nil {
		return err
	}
	if err := p.paths(true); err != nil {
		return err
	}
	var err error
	if p.st.parameters, err = p.templateField("Parameters"); err != nil {
		return err
	}
	p.st.result, p.st.hasResult, err = p.o.value("Result")
	return err
}

func (p *stateParser) task(opts Options) error {
	st := p.st
	var err error
	if st.resource, err = p.o.requiredStr("Resource"); err != nil {
		return err
	}
	if opts.Tasks == nil {
		return errAt(p.o.at("Resource"), "no task invoker is configured (Options.Tasks)")
	}
	if err := opts.Tasks.CheckResource(st.resource); err != nil {
		return wrapAt(p.o.at("Resource"), err)
	}
	if err := p.transition(); err != nil {
		return err
	}
	if err := p.paths(true); err != nil {
		return err
	}
	if st.parameters, err = p.templateField("Parameters"); err != nil {
		return err
	}
	if st.resultSelector, err = p.templateField("ResultSelector"); err != nil {
		return err
	}
	if err := p.taskTimeouts(); err != nil {
		return err
	}
	if st.retry, err = p.retriers(); err != nil {
		return err
	}
	st.catch, err = p.catchers()
	return err
}

// taskTimeouts reads TimeoutSeconds(Path) and HeartbeatSeconds(Path). As
// Step Functions validates, a constant HeartbeatSeconds must be smaller
// than the TimeoutSeconds, whose default is 99999999.
func (p *stateParser) taskTimeouts() error {
	st := p.st
	if err := exclusive(p.o, "TimeoutSeconds", "TimeoutSecondsPath"); err != nil {
		return err
	}
	if err := exclusive(p.o, "HeartbeatSeconds", "HeartbeatSecondsPath"); err != nil {
		return err
	}
	var err error
	if st.timeoutSeconds, _, err = p.o.integer("TimeoutSeconds", 1, maxSeconds); err != nil {
		return err
	}
	if p.o.has("TimeoutSecondsPath") {
		if st.timeoutSecondsPath, err = p.refPathField(p.o, "TimeoutSecondsPath"); err != nil {
			return err
		}
	}
	if st.heartbeatSeconds, _, err = p.o.integer("HeartbeatSeconds", 1, maxSeconds); err != nil {
		return err
	}
	if p.o.has("HeartbeatSecondsPath") {
		if st.heartbeatSecondsPath, err = p.refPathField(p.o, "HeartbeatSecondsPath"); err != nil {
			return err
		}
	}
	if st.heartbeatSeconds > 0 && st.timeoutSecondsPath == nil {
		limit, name := st.timeoutSeconds, "TimeoutSeconds"
		if limit == 0 {
			limit, name = maxSeconds, "the default TimeoutSeconds"
		}
		if st.heartbeatSeconds >= limit {
			return errAt(p.o.at("HeartbeatSeconds"), "must be smaller than %s (%d), got %d", name, limit, st.heartbeatSeconds)
		}
	}
	return nil
}

func (p *stateParser) retriers() ([]retrier, error) {
	elems, _, err := p.o.array("Retry")
	if err != nil {
		return nil, err
	}
	var out []retrier
	for i, e := range elems {
		o, err := parseObject(index(p.o.at("Retry"), i), e)
		if err != nil {
			return nil, err
		}
		for _, k := range o.keys {
			switch k {
			case "ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment":
			default:
				return nil, errAt(o.at(k), "unknown field %q in a retrier", k)
			}
		}
		r := retrier{intervalSeconds: defaultIntervalSeconds, maxAttempts: defaultMaxAttempts, backoffRate: defaultBackoffRate}
		if r.errorEquals, err = errorEquals(o, i == len(elems)-1); err != nil {
			return nil, err
		}
		if v, ok, err := o.integer("IntervalSeconds", 1, maxSeconds); err != nil {
			return nil, err
		} else if ok {
			r.intervalSeconds = v
		}
		if v, ok, err := o.integer("MaxAttempts", 0, maxSeconds); err != nil {
			return nil, err
		} else if ok {
			r.maxAttempts = v
		}
		if v, ok, err := o.float("BackoffRate"); err != nil {
			return nil, err
		} else if ok {
			if v < 1 {
				return nil, errAt(o.at("BackoffRate"), "must be >= 1.0, got %v", v)
			}
			r.backoffRate = v
		}
		if r.maxDelaySeconds, _, err = o.integer("MaxDelaySeconds", 1, maxDelaySeconds); err != nil {
			return nil, err
		}
		switch js, ok, err := o.str("JitterStrategy"); {
		case err != nil:
			return nil, err
		case !ok || js == "NONE":
		case js == "FULL":
			r.fullJitter = true
		default:
			return nil, errAt(o.at("JitterStrategy"), "must be \"FULL\" or \"NONE\", got %q", js)
		}
		if _, _, err := o.str("Comment"); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *stateParser) catchers() ([]catcher, error) {
	elems, _, err := p.o.array("Catch")
	if err != nil {
		return nil, err
	}
	var out []catcher
	for i, e := range elems {
		o, err := parseObject(index(p.o.at("Catch"), i), e)
		if err != nil {
			return nil, err
		}
		for _, k := range o.keys {
			switch {
			case k == "ErrorEquals" || k == "Next" || k == "ResultPath" || k == "Comment" || k == "Assign":
			case unsupportedFields[k]:
				return nil, errAt(o.at(k), "field %q is not supported by the local runtime", k)
			default:
				return nil, errAt(o.at(k), "unknown field %q in a catcher", k)
			}
		}
		var c catcher
		if c.errorEquals, err = errorEquals(o, i == len(elems)-1); err != nil {
			return nil, err
		}
		next, ok, err := p.target(o, "Next")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errAt(o.at("Next"), "is required")
		}
		c.next = next
		if c.resultPath, err = p.pathField(o, "ResultPath", false); err != nil {
			return nil, err
		}
		if c.assign, err = compileAssign(o); err != nil {
			return nil, err
		}
		if _, _, err := o.str("Comment"); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// errorEquals reads and checks the ErrorEquals of a retrier or catcher.
func errorEquals(o *jsonObject, last bool) ([]string, error) {
	elems, ok, err := o.array("ErrorEquals")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errAt(o.at("ErrorEquals"), "is required")
	case len(elems) == 0:
		return nil, errAt(o.at("ErrorEquals"), "must not be empty")
	}
	names := make([]string, len(elems))
	for i, e := range elems {
		place := index(o.at("ErrorEquals"), i)
		if kind := rawKind(e); kind != "string" {
			return nil, errAt(place, "must be a string, got %s", kind)
		}
		if err := json.Unmarshal(e, &names[i]); err != nil {
			return nil, wrapAt(place, err)
		}
		n := names[i]
		switch {
		case n == "":
			return nil, errAt(place, "must not be empty")
		case strings.HasPrefix(n, "States.") && !knownStatesErrors[n]:
			return nil, errAt(place, "unknown error name %q", n)
		case n == ErrAll && len(elems) > 1:
			return nil, errAt(place, "%s must appear alone in ErrorEquals", ErrAll)
		case n == ErrAll && !last:
			return nil, errAt(place, "%s must be in the last retrier or catcher", ErrAll)
		}
	}
	return names, nil
}

func (p *stateParser) choice() error {
	st := p.st
	if err := p.paths(false); err != nil {
		return err
	}
	elems, ok, err := p.o.array("Choices")
	switch {
	case err != nil:
		return err
	case !ok:
		return errAt(p.o.at("Choices"), "is required")
	case len(elems) == 0:
		return errAt(p.o.at("Choices"), "must not be empty")
	}
	for i, e := range elems {
		o, err := parseObject(index(p.o.at("Choices"), i), e)
		if err != nil {
			return err
		}
		rule, err := compileRule(o, true)
		if err != nil {
			return err
		}
		if _, _, err := p.target(o, "Next"); err != nil {
			return err
		}
		st.choices = append(st.choices, rule)
	}
	st.defaultNext, _, err = p.target(p.o, "Default")
	return err
}

func (p *stateParser) fail() error {
	st := p.st
	var err error
	if st.errorName, st.errorPath, err = p.constOrDynamic("Error", "ErrorPath"); err != nil {
		return err
	}
	st.cause, st.causePath, err = p.constOrDynamic("Cause", "CausePath")
	return err
}

// constOrDynamic reads a Fail state's Error/ErrorPath or Cause/CausePath
// pair, which are mutually exclusive.
func (p *stateParser) constOrDynamic(key, pathKey string) (string, template, error) {
	if p.o.has(key) && p.o.has(pathKey) {
		return "", nil, errAt(p.o.at(pathKey), "%s and %s are mutually exclusive", key, pathKey)
	}
	s, _, err := p.o.str(key)
	if err != nil {
		return "", nil, err
	}
	v, ok, err := p.o.value(pathKey)
	if err != nil || !ok {
		return s, nil, err
	}
	t, err := compileDynamic(p.o.at(pathKey), pathKey, v)
	return "", t, err
}
