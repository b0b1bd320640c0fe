package asl

import (
	"math"
)

// wait reads a Wait state: exactly one of Seconds, SecondsPath, Timestamp
// and TimestampPath.
func (p *stateParser) wait() error {
	st := p.st
	if err := p.transition(); err != nil {
		return err
	}
	if err := p.paths(false); err != nil {
		return err
	}
	var given []string
	for _, k := range []string{"Seconds", "SecondsPath", "Timestamp", "TimestampPath"} {
		if p.o.has(k) {
			given = append(given, k)
		}
	}
	switch {
	case len(given) == 0:
		return errAt(p.o.place, "a Wait state needs one of Seconds, SecondsPath, Timestamp and TimestampPath")
	case len(given) > 1:
		return errAt(p.o.at(given[1]), "%s and %s are mutually exclusive", given[0], given[1])
	}
	var err error
	switch given[0] {
	case "Seconds":
		st.waitSeconds, st.hasWaitSeconds, err = p.o.integer("Seconds", 0, maxSeconds)
	case "SecondsPath":
		st.waitSecondsPath, err = p.refPathField(p.o, "SecondsPath")
	case "Timestamp":
		var s string
		if s, _, err = p.o.str("Timestamp"); err == nil {
			var ok bool
			if st.waitTimestamp, ok = parseTimestamp(s); !ok {
				return errAt(p.o.at("Timestamp"), "%q is not an ISO 8601 timestamp such as 2026-03-14T01:59:00Z", s)
			}
			st.hasWaitTimestamp = true
		}
	case "TimestampPath":
		st.waitTimestampPath, err = p.refPathField(p.o, "TimestampPath")
	}
	return err
}

// refPathField reads a required non-null reference path (SecondsPath,
// ItemsPath, MaxConcurrencyPath, ...), which may read the context object.
func (p *stateParser) refPathField(o *jsonObject, key string) (*refPath, error) {
	if o.isNull(key) {
		return nil, errAt(o.at(key), "must be a path, not null")
	}
	s, _, err := o.str(key)
	if err != nil {
		return nil, err
	}
	path, err := parsePath(s)
	if err != nil {
		return nil, wrapAt(o.at(key), err)
	}
	return path, nil
}

// common reads the fields Parallel and Map share with Task: the
// transition, the paths, ResultSelector, Retry and Catch.
func (p *stateParser) common() error {
	st := p.st
	var err error
	if err = p.transition(); err != nil {
		return err
	}
	if err = p.paths(true); err != nil {
		return err
	}
	if st.resultSelector, err = p.templateField("ResultSelector"); err != nil {
		return err
	}
	if st.retry, err = p.retriers(); err != nil {
		return err
	}
	st.catch, err = p.catchers()
	return err
}

// parallel reads a Parallel state and its Branches.
func (p *stateParser) parallel(opts Options) error {
	st := p.st
	if err := p.common(); err != nil {
		return err
	}
	var err error
	if st.parameters, err = p.templateField("Parameters"); err != nil {
		return err
	}
	elems, ok, err := p.o.array("Branches")
	switch {
	case err != nil:
		return err
	case !ok:
		return errAt(p.o.at("Branches"), "is required")
	case len(elems) == 0:
		return errAt(p.o.at("Branches"), "must contain at least one branch")
	}
	for i, e := range elems {
		b, err := parseBranch(index(p.o.at("Branches"), i), e, opts, nil)
		if err != nil {
			return err
		}
		st.branches = append(st.branches, b)
	}
	return nil
}

// parseBranch reads a Parallel branch or a Map's ItemProcessor/Iterator:
// StartAt, States and Comment, plus the extra fields given (ProcessorConfig).
func parseBranch(place string, raw []byte, opts Options, extra map[string]bool) (*definition, error) {
	o, err := parseObject(place, raw)
	if err != nil {
		return nil, err
	}
	for _, k := range o.keys {
		switch {
		case k == "StartAt" || k == "States" || k == "Comment" || extra[k]:
		case k == "QueryLanguage":
			if err := checkQueryLanguage(o); err != nil {
				return nil, err
			}
		default:
			return nil, errAt(o.at(k), "unknown field %q", k)
		}
	}
	if _, _, err := o.str("Comment"); err != nil {
		return nil, err
	}
	return parseStateMachine(o, opts)
}

// mapState reads an inline Map state.
func (p *stateParser) mapState(opts Options) error {
	st := p.st
	if err := p.common(); err != nil {
		return err
	}
	var err error
	if p.o.has("ItemsPath") {
		if st.itemsPath, err = p.refPathField(p.o, "ItemsPath"); err != nil {
			return err
		}
	}
	selector := "ItemSelector"
	if p.o.has("Parameters") {
		if p.o.has("ItemSelector") {
			return errAt(p.o.at("Parameters"), "ItemSelector and Parameters are mutually exclusive (Parameters is the older name)")
		}
		selector = "Parameters"
	}
	if st.itemSelector, err = p.templateField(selector); err != nil {
		return err
	}

	processor := "ItemProcessor"
	if p.o.has("Iterator") {
		if p.o.has("ItemProcessor") {
			return errAt(p.o.at("Iterator"), "ItemProcessor and Iterator are mutually exclusive (Iterator is the older name)")
		}
		processor = "Iterator"
	}
	raw, ok := p.o.fields[processor]
	if !ok {
		return errAt(p.o.at("ItemProcessor"), "is required")
	}
	if processor == "ItemProcessor" {
		if err := checkProcessorConfig(p.o.at(processor), raw, st.name); err != nil {
			return err
		}
	}
	if st.processor, err = parseBranch(p.o.at(processor), raw, opts, map[string]bool{"ProcessorConfig": true}); err != nil {
		return err
	}

	if err := exclusive(p.o, "MaxConcurrency", "MaxConcurrencyPath"); err != nil {
		return err
	}
	if st.maxConcurrency, _, err = p.o.integer("MaxConcurrency", 0, math.MaxInt32); err != nil {
		return err
	}
	if p.o.has("MaxConcurrencyPath") {
		if st.maxConcurrencyPath, err = p.refPathField(p.o, "MaxConcurrencyPath"); err != nil {
			return err
		}
	}
	if err := exclusive(p.o, "ToleratedFailurePercentage", "ToleratedFailurePercentagePath"); err != nil {
		return err
	}
	if err := exclusive(p.o, "ToleratedFailureCount", "ToleratedFailureCountPath"); err != nil {
		return err
	}
	if v, ok, err := p.o.float("ToleratedFailurePercentage"); err != nil {
		return err
	} else if ok {
		if v < 0 || v > 100 {
			return errAt(p.o.at("ToleratedFailurePercentage"), "must be between 0 and 100, got %v", v)
		}
		st.toleratedPercent, st.hasToleratedPercent = v, true
	}
	if st.toleratedCount, st.hasToleratedCount, err = p.o.integer("ToleratedFailureCount", 0, math.MaxInt32); err != nil {
		return err
	}
	if p.o.has("ToleratedFailurePercentagePath") {
		if st.toleratedPercentPath, err = p.refPathField(p.o, "ToleratedFailurePercentagePath"); err != nil {
			return err
		}
	}
	if p.o.has("ToleratedFailureCountPath") {
		if st.toleratedCountPath, err = p.refPathField(p.o, "ToleratedFailureCountPath"); err != nil {
			return err
		}
	}
	st.tolerance = st.hasToleratedPercent || st.hasToleratedCount || st.toleratedPercentPath != nil || st.toleratedCountPath != nil
	return nil
}

// checkProcessorConfig accepts an ItemProcessor's ProcessorConfig with
// Mode INLINE (the default) and rejects Distributed Map.
func checkProcessorConfig(place string, raw []byte, name string) error {
	o, err := parseObject(place, raw)
	if err != nil {
		return err
	}
	pc, ok, err := o.object("ProcessorConfig")
	if err != nil || !ok {
		return err
	}
	for _, k := range pc.keys {
		if k != "Mode" && k != "ExecutionType" {
			return errAt(pc.at(k), "unknown field %q in ProcessorConfig", k)
		}
	}
	mode, _, err := pc.str("Mode")
	switch {
	case err != nil:
		return err
	case mode == "" || mode == "INLINE":
		if pc.has("ExecutionType") {
			return errAt(pc.at("ExecutionType"), "is only valid with Mode DISTRIBUTED")
		}
		return nil
	case mode == "DISTRIBUTED":
		return errAt(pc.at("Mode"), "Map state %q: Distributed Map (ProcessorConfig.Mode DISTRIBUTED) is not supported by the local runtime; only inline Map runs locally", name)
	default:
		return errAt(pc.at("Mode"), "must be \"INLINE\" or \"DISTRIBUTED\", got %q", mode)
	}
}

// exclusive rejects a field given together with its ...Path variant.
func exclusive(o *jsonObject, a, b string) error {
	if o.has(a) && o.has(b) {
		return errAt(o.at(b), "%s and %s are mutually exclusive", a, b)
	}
	return nil
}
