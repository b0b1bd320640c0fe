package asl

// varScope holds the variables of one scope: the execution, or one
// Parallel branch or Map iteration. A nested scope reads the variables of
// the scopes around it.
type varScope struct {
	vals   map[string]any
	parent *varScope
}

func newVarScope(parent *varScope) *varScope {
	return &varScope{vals: map[string]any{}, parent: parent}
}
