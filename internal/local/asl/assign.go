package asl

import (
	"fmt"
)

// Variables follow the developer guide's "Passing data between states with
// variables" (https://docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html),
// in JSONPath mode:
//
//   - Pass, Task, Map, Parallel, Choice and Wait states take an Assign
//     field, and so do the rules of a Choice state and the catchers of
//     Task, Map and Parallel. A Choice state's own Assign applies when it
//     takes its Default; a matching rule's Assign when it takes the rule.
//   - Fields ending in ".$" take a path or an intrinsic function, as in
//     Parameters. "$" is the state's result before ResultPath (a Task's
//     after ResultSelector, a Pass state's Result or Parameters), the
//     effective input of a Choice or Wait state, and the error output
//     {"Error","Cause"} in a catcher.
//   - Every expression of a state, its Assign included, reads the
//     variables as they were when the state was entered; the assignments
//     take effect when the state completes, so later states see them.
//   - A Parallel branch or a Map iteration has a scope of its own: it reads
//     the variables of the scopes around it, but may not assign a name an
//     outer scope assigns (the definition is rejected), and its own
//     variables end with it.
//   - A variable's value and an Assign as a whole are at most 256 KiB; the
//     variables of an execution at most 10 MiB.

// Limits on variables.
const (
	maxVariableBytes    = 256 * 1024       // one variable, and one Assign field
	maxAllVariableBytes = 10 * 1024 * 1024 // every variable of an execution
)

// compileAssign compiles the Assign field of o, if any.
func compileAssign(o *jsonObject) (template, error) {
	if !o.has("Assign") {
		return nil, nil
	}
	obj, _, err := o.object("Assign")
	if err != nil {
		return nil, err
	}
	v, _, err := o.value("Assign")
	if err != nil {
		return nil, err
	}
	t, err := compileTemplate(o.at("Assign"), v)
	if err != nil {
		return nil, err
	}
	for _, k := range obj.keys {
		name := trimDynamic(k)
		switch {
		case name == "" || variableNameLen(name) != len(name):
			return nil, errAt(join(o.at("Assign"), k), "%q is not a valid variable name (a letter or _, then letters, digits or _)", name)
		case name == "states":
			return nil, errAt(join(o.at("Assign"), k), "$states is a reserved variable name")
		}
	}
	return t, nil
}

// trimDynamic removes the ".$" of a dynamic field name.
func trimDynamic(k string) string {
	if len(k) >= 2 && k[len(k)-2:] == ".$" {
		return k[:len(k)-2]
	}
	return k
}

// assignedNames lists the variables an Assign field sets.
func assignedNames(t template) []string {
	if ot, ok := t.(*objectTemplate); ok {
		return ot.keys
	}
	return nil
}

// stateAssigns lists the Assign fields of a state with their places
// relative to the state: its own, its Choice rules' and its catchers'.
func stateAssigns(st *state) map[string]template {
	out := map[string]template{}
	if st.assign != nil {
		out["Assign"] = st.assign
	}
	for i, r := range st.choices {
		if r.assign != nil {
			out[fmt.Sprintf("Choices[%d].Assign", i)] = r.assign
		}
	}
	for i, c := range st.catch {
		if c.assign != nil {
			out[fmt.Sprintf("Catch[%d].Assign", i)] = c.assign
		}
	}
	return out
}

// checkScopes rejects an Assign inside a Parallel branch or a Map's
// ItemProcessor that sets a name an outer scope assigns: a branch or an
// iteration may read outer variables but not assign them.
func checkScopes(def *definition, outer map[string]bool, place string) error {
	inner := map[string]bool{}
	for k := range outer {
		inner[k] = true
	}
	for _, n := range def.order {
		st := def.states[n]
		for field, t := range stateAssigns(st) {
			for _, name := range assignedNames(t) {
				if outer[name] {
					return errAt(join(join(join(place, "States"), n), field)+"."+name,
						"variable %q is assigned in an outer scope; a Parallel branch or Map iteration may read it but not assign it", name)
				}
				inner[name] = true
			}
		}
	}
	for _, n := range def.order {
		st := def.states[n]
		at := join(join(place, "States"), n)
		for i, b := range st.branches {
			if err := checkScopes(b, inner, index(join(at, "Branches"), i)); err != nil {
				return err
			}
		}
		if st.processor != nil {
			if err := checkScopes(st.processor, inner, join(at, "ItemProcessor")); err != nil {
				return err
			}
		}
	}
	return nil
}

// evalAssign evaluates an Assign field against v; nil when there is none.
func evalAssign(t template, v any, env *evalEnv) (map[string]any, *Error) {
	if t == nil {
		return nil, nil
	}
	out, err := t.eval(v, env)
	if err != nil {
		return nil, asError(err)
	}
	vals, _ := out.(map[string]any)
	total := 0
	for _, k := range sortedKeys(vals) {
		n := encodedSize(vals[k])
		if n > maxVariableBytes {
			return nil, newError(ErrDataLimitExceeded, "the value assigned to the variable '%s' has %d bytes, more than the limit of %d", k, n, maxVariableBytes)
		}
		total += n
	}
	if total > maxVariableBytes {
		return nil, newError(ErrDataLimitExceeded, "the Assign field gives %d bytes, more than the limit of %d", total, maxVariableBytes)
	}
	return vals, nil
}

// encodedSize is the size of a value in JSON.
func encodedSize(v any) int {
	raw, err := encodeValue(v)
	if err != nil {
		return 0
	}
	return len(raw)
}

// assign sets variables in the scope once their state has completed,
// keeping every variable the execution can see within the total limit.
func (s *varScope) assign(vals map[string]any) *Error {
	if len(vals) == 0 {
		return nil
	}
	sizes := make(map[string]int, len(vals))
	total := 0
	for sc := s; sc != nil; sc = sc.parent {
		for k, n := range sc.sizes {
			if _, replaced := vals[k]; sc == s && replaced {
				continue
			}
			total += n
		}
	}
	for k, v := range vals {
		sizes[k] = encodedSize(v)
		total += sizes[k]
	}
	if total > maxAllVariableBytes {
		return newError(ErrDataLimitExceeded, "the variables would hold %d bytes, more than the limit of %d", total, maxAllVariableBytes)
	}
	for k, v := range vals {
		s.vals[k] = v
		s.sizes[k] = sizes[k]
	}
	return nil
}
