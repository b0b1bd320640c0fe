package asl

// varScope holds the variables of one scope: the execution, or one
// Parallel branch or Map iteration. A nested scope reads the variables of
// the scopes around it.
type varScope struct {
	vals   map[string]any
	sizes  map[string]int // encoded size of each value
	parent *varScope
}

func newVarScope(parent *varScope) *varScope {
	return &varScope{vals: map[string]any{}, sizes: map[string]int{}, parent: parent}
}

// evalEnv is what paths and intrinsic functions read besides the state
// input: the context object ($$), the variables ($name) and the machine
// (for States.MathRandom's random source).
type evalEnv struct {
	ctx  map[string]any
	vars *varScope
	m    *Machine
}

// lookup finds a variable in the scope or the scopes around it.
func (s *varScope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vals[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// root is the value a path starts from: the input, the context object
// or a variable (nil when the variable is not set).
func (p *refPath) root(input any, env *evalEnv) any {
	switch {
	case p.context:
		return env.ctx
	case p.variable != "":
		v, _ := env.vars.lookup(p.variable)
		return v
	}
	return input
}

// eval resolves the path against the input, the context object or a
// variable.
func (p *refPath) eval(input any, env *evalEnv) (any, bool) {
	if p.variable != "" {
		if _, ok := env.vars.lookup(p.variable); !ok {
			return nil, false
		}
	}
	return p.get(p.root(input, env))
}
