package asl

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// runWait runs a Wait state: it waits the scaled duration and passes its
// effective input on.
func (r *runner) runWait(ctx context.Context, st *state, input any, entered time.Time, vars *varScope) (any, map[string]any, *Error) {
	ctxObj := r.contextObject(st, entered, noRetryCount, vars)
	eff, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
	if err != nil {
		return nil, nil, err
	}
	d, err := r.waitDuration(st, eff, ctxObj)
	if err != nil {
		return nil, nil, err
	}
	assigned, err := evalAssign(st.assign, eff, ctxObj)
	if err != nil {
		return nil, nil, err
	}
	if d > 0 && r.sleep(ctx, d) != nil {
		return nil, nil, errInterrupted
	}
	out, err := applyPath(st.outputPath, eff, ctxObj, "OutputPath")
	return out, assigned, err
}

// waitDuration resolves how long a Wait state waits, scaled.
func (r *runner) waitDuration(st *state, eff any, ctxObj *evalEnv) (time.Duration, *Error) {
	var d time.Duration
	switch {
	case st.hasWaitSeconds:
		d = r.scale(float64(st.waitSeconds))
	case st.waitSecondsPath != nil:
		v, ok := resolve(st.waitSecondsPath, eff, ctxObj)
		if !ok {
			return 0, newError(ErrRuntime, "Invalid path '%s': The SecondsPath parameter does not reference a valid value.", st.waitSecondsPath)
		}
		n, ok := asInteger(v)
		if !ok || n < 0 || n > maxSeconds {
			return 0, newError(ErrRuntime, "The SecondsPath parameter '%s' references %s; it must be an integer between 0 and %d.", st.waitSecondsPath, mustEncode(v), maxSeconds)
		}
		d = r.scale(float64(n))
	case st.hasWaitTimestamp:
		d = r.scaleUntil(st.waitTimestamp)
	case st.waitTimestampPath != nil:
		v, ok := resolve(st.waitTimestampPath, eff, ctxObj)
		if !ok {
			return 0, newError(ErrRuntime, "Invalid path '%s': The TimestampPath parameter does not reference a valid value.", st.waitTimestampPath)
		}
		s, _ := v.(string)
		ts, ok := parseTimestamp(s)
		if !ok {
			return 0, newError(ErrRuntime, "The TimestampPath parameter '%s' references %s, which is not an ISO 8601 timestamp.", st.waitTimestampPath, mustEncode(v))
		}
		d = r.scaleUntil(ts)
	}
	return d, nil
}

// scaleUntil is the time left until t, applying Options.TimeScale; 0 when
// t has passed.
func (r *runner) scaleUntil(t time.Time) time.Duration {
	left := time.Until(t)
	if left <= 0 {
		return 0
	}
	return r.scale(left.Seconds())
}

// runAll runs n jobs concurrently, at most limit at once (0: no limit),
// and returns their results in order. Unless tolerate, the first failure
// cancels the jobs still running and the ones not started. first is the
// first failure of a job that was not cancelled; errs holds every job's
// failure.
func (r *runner) runAll(ctx context.Context, n int, limit int64, tolerate bool, job func(ctx context.Context, i int) (any, *Error)) (results []any, errs []*Error, first *Error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results = make([]any, n)
	errs = make([]*Error, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var sem chan struct{}
	if limit > 0 {
		sem = make(chan struct{}, limit)
	}
start:
	for i := 0; i < n; i++ {
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-cctx.Done():
				break start
			}
		}
		if cctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			v, e := job(cctx, i)
			mu.Lock()
			defer mu.Unlock()
			results[i], errs[i] = v, e
			if e != nil && first == nil && cctx.Err() == nil {
				first = e
				if !tolerate {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	return results, errs, first
}

// parallelAttempt runs one attempt of a Parallel state: every branch on
// the effective input, concurrently; the output is the array of the
// branches' outputs in branch order. A failing branch stops the others and
// fails the state with its error.
func (r *runner) parallelAttempt(ctx context.Context, st *state, input any, entered time.Time, retryCount int, vars *varScope) (any, json.RawMessage, map[string]any, *Error) {
	ctxObj := r.contextObject(st, entered, retryCount, vars)
	eff, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
	if err == nil {
		eff, err = applyTemplate(st.parameters, eff, ctxObj)
	}
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	r.emit(HistoryEvent{Type: "ParallelStateStarted", StateName: st.name})
	results, _, first := r.runAll(ctx, len(st.branches), 0, false, func(bctx context.Context, i int) (any, *Error) {
		out, _, e := r.runStates(bctx, st.branches[i], eff, newVarScope(vars))
		return out, e
	})
	if ctx.Err() != nil {
		return nil, nil, nil, errInterrupted
	}
	if first != nil {
		r.emit(HistoryEvent{Type: "ParallelStateFailed", StateName: st.name, Error: first.Name, Cause: first.Cause})
		return nil, nil, nil, first
	}
	r.emit(HistoryEvent{Type: "ParallelStateSucceeded", StateName: st.name})
	return r.finishResult(st, input, results, ctxObj)
}

// finishResult applies ResultSelector, Assign, ResultPath and OutputPath
// to the result of a Task, Parallel or Map state.
func (r *runner) finishResult(st *state, input any, result any, ctxObj *evalEnv) (any, json.RawMessage, map[string]any, *Error) {
	out, err := applyTemplate(st.resultSelector, result, ctxObj)
	var assigned map[string]any
	if err == nil {
		assigned, err = evalAssign(st.assign, out, ctxObj)
	}
	if err == nil {
		out, err = applyResultPath(st.resultPath, input, out)
	}
	if err == nil {
		out, err = applyPath(st.outputPath, out, ctxObj, "OutputPath")
	}
	var raw json.RawMessage
	if err == nil {
		raw, err = encodeOutput(out)
	}
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	return out, raw, assigned, nil
}

// mapAttempt runs one attempt of an inline Map state: the ItemProcessor
// on every item of ItemsPath (through ItemSelector), at most
// MaxConcurrency at once; the output is the array of the iterations'
// outputs in item order.
//
// Without a ToleratedFailure field, the first failing iteration stops the
// others and fails the state with its error. With one, every iteration
// runs; the state fails with States.ExceedToleratedFailureThreshold when
// more iterations failed than tolerated, and otherwise the output holds
// {"Error","Cause"} in the place of each failed iteration.
func (r *runner) mapAttempt(ctx context.Context, st *state, input any, entered time.Time, retryCount int, vars *varScope) (any, json.RawMessage, map[string]any, *Error) {
	ctxObj := r.contextObject(st, entered, retryCount, vars)
	eff, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	items, limit, err := r.mapSetup(st, eff, ctxObj)
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	maxCount, maxPercent, err := r.mapTolerance(st, eff, ctxObj)
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	r.emit(HistoryEvent{Type: "MapStateStarted", StateName: st.name})
	results, errs, first := r.runAll(ctx, len(items), limit, st.tolerance, func(ictx context.Context, i int) (any, *Error) {
		r.emit(HistoryEvent{Type: "MapIterationStarted", StateName: st.name})
		item := items[i]
		if st.itemSelector != nil {
			ictxObj := r.contextObject(st, entered, retryCount, vars)
			ictxObj.ctx["Map"] = map[string]any{"Item": map[string]any{"Index": intNumber(int64(i)), "Value": items[i]}}
			var e *Error
			if item, e = applyTemplate(st.itemSelector, eff, ictxObj); e != nil {
				e = inState(st, e)
				r.emit(HistoryEvent{Type: "MapIterationFailed", StateName: st.name, Error: e.Name, Cause: e.Cause})
				return nil, e
			}
		}
		out, _, e := r.runStates(ictx, st.processor, item, newVarScope(vars))
		switch {
		case e != nil && ictx.Err() != nil:
			r.emit(HistoryEvent{Type: "MapIterationAborted", StateName: st.name})
		case e != nil:
			r.emit(HistoryEvent{Type: "MapIterationFailed", StateName: st.name, Error: e.Name, Cause: e.Cause})
		default:
			r.emit(HistoryEvent{Type: "MapIterationSucceeded", StateName: st.name})
		}
		return out, e
	})
	if ctx.Err() != nil {
		return nil, nil, nil, errInterrupted
	}
	if first != nil && first.Name == ErrRuntime {
		r.emit(HistoryEvent{Type: "MapStateFailed", StateName: st.name, Error: first.Name, Cause: first.Cause})
		return nil, nil, nil, first
	}
	if first != nil && !st.tolerance {
		r.emit(HistoryEvent{Type: "MapStateFailed", StateName: st.name, Error: first.Name, Cause: first.Cause})
		return nil, nil, nil, first
	}
	failed := 0
	for i, e := range errs {
		if e != nil {
			failed++
			results[i] = map[string]any{"Error": e.Name, "Cause": e.Cause}
		}
	}
	if (maxCount >= 0 && int64(failed) > maxCount) || (maxPercent >= 0 && float64(failed)*100 > maxPercent*float64(len(items))) {
		e := newError("States.ExceedToleratedFailureThreshold", "The specified tolerated failure threshold was exceeded: %d of %d iterations failed.", failed, len(items))
		r.emit(HistoryEvent{Type: "MapStateFailed", StateName: st.name, Error: e.Name, Cause: e.Cause})
		return nil, nil, nil, e
	}
	r.emit(HistoryEvent{Type: "MapStateSucceeded", StateName: st.name})
	return r.finishResult(st, input, results, ctxObj)
}

// mapSetup resolves a Map state's items and its concurrency limit.
func (r *runner) mapSetup(st *state, eff any, ctxObj *evalEnv) ([]any, int64, *Error) {
	itemsV := eff
	if st.itemsPath != nil {
		v, ok := resolve(st.itemsPath, eff, ctxObj)
		if !ok {
			return nil, 0, newError(ErrRuntime, "Invalid path '%s' for ItemsPath: No results for path: %s", st.itemsPath, st.itemsPath.canonical())
		}
		itemsV = v
	}
	items, ok := itemsV.([]any)
	if !ok {
		return nil, 0, newError(ErrRuntime, "Map state input: ItemsPath '%s' must reference a JSON array, got %s", pathText(st.itemsPath), typeName(itemsV))
	}
	limit := st.maxConcurrency
	if st.maxConcurrencyPath != nil {
		n, err := maxConcurrencyAt(st.maxConcurrencyPath, eff, ctxObj)
		if err != nil {
			return nil, 0, err
		}
		limit = n
	}
	return items, limit, nil
}

// mapTolerance resolves the tolerated failures of a Map state; -1 means
// no limit of that kind. Without any ToleratedFailure field no failure is
// tolerated.
func (r *runner) mapTolerance(st *state, eff any, ctxObj *evalEnv) (count int64, percent float64, err *Error) {
	count, percent = -1, -1
	if !st.tolerance {
		return 0, -1, nil
	}
	if st.hasToleratedCount {
		count = st.toleratedCount
	}
	if st.hasToleratedPercent {
		percent = st.toleratedPercent
	}
	if st.toleratedCountPath != nil {
		if count, err = nonNegativeAt(st.toleratedCountPath, "ToleratedFailureCountPath", eff, ctxObj); err != nil {
			return 0, 0, err
		}
	}
	if st.toleratedPercentPath != nil {
		v, ok := resolve(st.toleratedPercentPath, eff, ctxObj)
		n, isNum := v.(json.Number)
		f, ferr := n.Float64()
		if !ok || !isNum || ferr != nil || f < 0 || f > 100 {
			return 0, 0, newError(ErrRuntime, "ToleratedFailurePercentagePath '%s' must reference a number between 0 and 100", st.toleratedPercentPath)
		}
		percent = f
	}
	return count, percent, nil
}

// nonNegativeAt resolves a path that must give a non-negative integer.
func nonNegativeAt(p *refPath, field string, eff any, ctxObj *evalEnv) (int64, *Error) {
	v, ok := resolve(p, eff, ctxObj)
	n, isInt := asInteger(v)
	if !ok || !isInt || n < 0 {
		return 0, newError(ErrRuntime, "%s '%s' must reference a non-negative integer, got %s", field, p, mustEncode(v))
	}
	return n, nil
}

// maxConcurrencyAt resolves MaxConcurrencyPath. Step Functions accepts a
// non-negative integer there, or a string of one ("5"), as execution input
// often carries numbers as strings.
func maxConcurrencyAt(p *refPath, eff any, ctxObj *evalEnv) (int64, *Error) {
	if v, ok := resolve(p, eff, ctxObj); ok {
		if s, isString := v.(string); isString {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && s == strconv.FormatInt(n, 10) {
				return n, nil
			}
		}
	}
	return nonNegativeAt(p, "MaxConcurrencyPath", eff, ctxObj)
}

// pathText renders an optional path, "$" when absent.
func pathText(p *refPath) string {
	if p == nil {
		return "$"
	}
	return p.String()
}
