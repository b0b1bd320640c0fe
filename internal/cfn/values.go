package cfn

import (
	"slices"
	"strconv"
)

// object reads one resolved mapping of resource properties, remembering
// which keys were read so the rest can be reported as unknown. Errors are
// placed at the template node the value came from when it can be found.
type object struct {
	r    *Resolver
	node *Node // the mapping node the values came from (or the closest ancestor)
	m    map[string]any
	used map[string]bool
}

func (r *Resolver) object(n *Node) (*object, error) {
	v, err := r.Value(n)
	if err != nil {
		return nil, err
	}
	return r.objectOf(n, v)
}

func (r *Resolver) objectOf(n *Node, v any) (*object, error) {
	if n == nil {
		n = &Node{Kind: KindNull}
	}
	switch m := v.(type) {
	case map[string]any:
		return &object{r: r, node: n, m: m, used: map[string]bool{}}, nil
	case nil:
		return &object{r: r, node: n, m: map[string]any{}, used: map[string]bool{}}, nil
	}
	return nil, r.errAt(n, ErrInvalid, "expected a mapping, got %s", describe(v))
}

// at returns the node of key, or the object's node when the value did
// not come straight from a mapping node (it was produced by a function).
func (o *object) at(key string) *Node {
	if c := o.node.Get(key); c != nil {
		return c
	}
	return o.node
}

func (o *object) errf(key string, sentinel error, format string, args ...any) error {
	return o.r.errAt(o.at(key), sentinel, format, args...)
}

func (o *object) get(key string) (any, bool) {
	o.used[key] = true
	v, ok := o.m[key]
	if ok && v == nil {
		return nil, false
	}
	return v, ok
}

func (o *object) str(key string, required bool) (string, error) {
	v, ok := o.get(key)
	if !ok {
		if required {
			return "", o.r.errAt(o.node, ErrInvalid, "%s is required", key)
		}
		return "", nil
	}
	s, ok := stringify(v)
	if !ok {
		return "", o.errf(key, ErrInvalid, "%s must be a string, got %s", key, describe(v))
	}
	return s, nil
}

func (o *object) integer(key string) (int64, bool, error) {
	v, ok := o.get(key)
	if !ok {
		return 0, false, nil
	}
	i, ok := toInt(v)
	if !ok {
		return 0, false, o.errf(key, ErrInvalid, "%s must be an integer, got %v", key, v)
	}
	return i, true, nil
}

func (o *object) boolean(key string) (bool, bool, error) {
	v, ok := o.get(key)
	if !ok {
		return false, false, nil
	}
	b, ok := toBool(v)
	if !ok {
		return false, false, o.errf(key, ErrInvalid, "%s must be a boolean, got %v", key, v)
	}
	return b, true, nil
}

func (o *object) child(key string) (*object, bool, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, false, nil
	}
	c, err := o.r.objectOf(o.at(key), v)
	return c, err == nil, err
}

// value returns a property as resolved, for generic consumers.
func (o *object) value(key string) (any, bool) { return o.get(key) }

func (o *object) list(key string) ([]any, *Node, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, nil, o.errf(key, ErrInvalid, "%s must be a list, got %s", key, describe(v))
	}
	return l, o.at(key), nil
}

func (o *object) objects(key string) ([]*object, error) {
	l, n, err := o.list(key)
	if err != nil || l == nil {
		return nil, err
	}
	out := make([]*object, len(l))
	for i, v := range l {
		itemNode := n
		if n.Is(KindSequence) && len(n.Items) == len(l) {
			itemNode = n.Items[i]
		}
		if out[i], err = o.r.objectOf(itemNode, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (o *object) strings(key string) ([]string, error) {
	l, n, err := o.list(key)
	if err != nil || l == nil {
		return nil, err
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, ok := stringify(v)
		if !ok {
			return nil, o.r.errAt(n, ErrInvalid, "%s[%d] must be a string, got %s", key, i, describe(v))
		}
		out[i] = s
	}
	return out, nil
}

// unknown reports the first key that was neither read nor is in ignored,
// in document order.
func (o *object) unknown(what string, ignored map[string]string) error {
	keys := make([]string, 0, len(o.m))
	if o.node.Is(KindMapping) {
		keys = append(keys, o.node.Keys...)
	}
	for k := range o.m {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if _, present := o.m[k]; !present || o.used[k] {
			continue
		}
		if _, ok := ignored[k]; ok {
			continue
		}
		return o.errf(k, ErrUnknownProperty, "%s of %s", strconv.Quote(k), what)
	}
	return nil
}
