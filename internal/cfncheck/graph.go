package cfncheck

import "slices"

// components returns the strongly connected components of g that are
// cycles: those of more than one node, and single nodes with an edge to
// themselves. Each is sorted, and they are ordered by their first node.
func components(g map[string][]edge) [][]string {
	nodes := map[string]bool{}
	for from, es := range g {
		nodes[from] = true
		for _, e := range es {
			nodes[e.to] = true
		}
	}
	t := tarjan{g: g, index: map[string]int{}, low: map[string]int{}, on: map[string]bool{}}
	for _, n := range sortedKeys(nodes) {
		if _, seen := t.index[n]; !seen {
			t.visit(n)
		}
	}
	var out [][]string
	for _, comp := range t.comps {
		if len(comp) == 1 && !slices.ContainsFunc(g[comp[0]], func(e edge) bool { return e.to == comp[0] }) {
			continue
		}
		slices.Sort(comp)
		out = append(out, comp)
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}

// tarjan is the state of Tarjan's strongly connected components algorithm.
type tarjan struct {
	g     map[string][]edge
	index map[string]int
	low   map[string]int
	on    map[string]bool
	stack []string
	next  int
	comps [][]string
}

func (t *tarjan) visit(v string) {
	t.index[v] = t.next
	t.low[v] = t.next
	t.next++
	t.stack = append(t.stack, v)
	t.on[v] = true
	for _, w := range targets(t.g, v) {
		if _, seen := t.index[w]; !seen {
			t.visit(w)
			t.low[v] = min(t.low[v], t.low[w])
		} else if t.on[w] {
			t.low[v] = min(t.low[v], t.index[w])
		}
	}
	if t.low[v] != t.index[v] {
		return
	}
	var comp []string
	for {
		w := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.on[w] = false
		comp = append(comp, w)
		if w == v {
			break
		}
	}
	t.comps = append(t.comps, comp)
}

// targets returns the nodes v has edges to, sorted, each once.
func targets(g map[string][]edge, v string) []string {
	var out []string
	for _, e := range g[v] {
		out = append(out, e.to)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// firstEdge returns the first edge from v to w, in the order they were
// found.
func firstEdge(g map[string][]edge, v, w string) edge {
	for _, e := range g[v] {
		if e.to == w {
			return e
		}
	}
	return edge{}
}

// cycleEdge is an edge of a reported cycle.
type cycleEdge struct {
	from string
	edge
}

// shortestCycle returns a shortest cycle within comp, a strongly connected
// component of g: of those, the one starting at the first node of comp
// that has one, and the first found by a breadth-first search visiting
// nodes in sorted order.
func shortestCycle(g map[string][]edge, comp []string) []cycleEdge {
	in := map[string]bool{}
	for _, n := range comp {
		in[n] = true
	}
	var best []string
	for _, s := range comp {
		p := cycleThrough(g, in, s)
		if p != nil && (best == nil || len(p) < len(best)) {
			best = p
		}
	}
	if best == nil {
		return nil
	}
	out := make([]cycleEdge, 0, len(best))
	for i, from := range best {
		to := best[(i+1)%len(best)]
		out = append(out, cycleEdge{from: from, edge: firstEdge(g, from, to)})
	}
	return out
}

// cycleThrough returns the nodes of a shortest cycle from s back to s
// within the nodes in, starting with s, or nil when there is none.
func cycleThrough(g map[string][]edge, in map[string]bool, s string) []string {
	prev := map[string]string{}
	queue := []string{s}
	seen := map[string]bool{s: true}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range targets(g, v) {
			if !in[w] {
				continue
			}
			if w == s {
				path := []string{v}
				for v != s {
					v = prev[v]
					path = append(path, v)
				}
				slices.Reverse(path)
				return path
			}
			if !seen[w] {
				seen[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}
