package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// OpCost is what one operation of a transfer costs in DynamoDB on-demand
// request units, as DynamoDB bills them: a write unit per 1 KB of the
// larger of the item's old and new image, twice that in a transaction (a
// ConditionCheck included), plus, for each index, a write of the index
// entry it puts or deletes, two when its key changes and one when an
// attribute it projects changes; a strongly consistent read a unit per
// 4 KB of the whole item (a projection does not make it cheaper).
type OpCost struct {
	By, Kind string
	// Writes and Reads are the operation's request units; Indexes names
	// the index entries its writes touched, with their units.
	Writes, Reads int
	Indexes       []string
}

// Meter measures a Mix's operations against the template's tables: it
// replays one pass of the mix, reading every item an operation writes
// before and after it.
type Meter struct {
	db     *dynamodb.Client
	tables map[string]tableDef // by physical name
	costs  []OpCost
}

type tableDef struct {
	keys    []string
	indexes []indexDef
}

type indexDef struct {
	name string
	keys []string
	// projection: ALL, KEYS_ONLY or INCLUDE (with include).
	projection types.ProjectionType
	include    []string
}

// NewMeter reads the tables' keys and indexes from the template as the
// stack created them.
func NewMeter(st *stack.Stack, tpl *cfn.Template) (*Meter, error) {
	tables, err := tpl.Tables(cfn.Env{Region: stack.Region, AccountID: stack.AccountID})
	if err != nil {
		return nil, fmt.Errorf("e2e: meter: %w", err)
	}
	m := &Meter{db: dynamodb.NewFromConfig(st.AWS, func(o *dynamodb.Options) { o.APIOptions = nil }), tables: map[string]tableDef{}}
	for _, t := range tables {
		def := tableDef{keys: keyNames(t.Input.KeySchema)}
		for _, g := range t.Input.GlobalSecondaryIndexes {
			def.indexes = append(def.indexes, indexDef{name: aws.ToString(g.IndexName), keys: keyNames(g.KeySchema),
				projection: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes})
		}
		for _, l := range t.Input.LocalSecondaryIndexes {
			def.indexes = append(def.indexes, indexDef{name: aws.ToString(l.IndexName), keys: keyNames(l.KeySchema),
				projection: l.Projection.ProjectionType, include: l.Projection.NonKeyAttributes})
		}
		m.tables[st.Tables[t.LogicalID]] = def
	}
	return m, nil
}

func keyNames(ks []types.KeySchemaElement) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = aws.ToString(k.AttributeName)
	}
	return out
}

// Measure replays one pass of mix on pair and returns each operation's
// cost, in the mix's order.
func (m *Meter) Measure(ctx context.Context, st *stack.Stack, mix Mix, pair Pair) ([]OpCost, error) {
	m.costs = nil
	rep, err := Replay(ctx, st, mix, ReplayConfig{Clients: 1, Count: 1, Pairs: []Pair{pair}, around: m.around})
	if err != nil {
		return nil, err
	}
	if len(rep.Failures) > 0 {
		return nil, fmt.Errorf("e2e: meter: the measured pass failed: %v", rep.Failures)
	}
	if len(m.costs) != len(mix.Ops) {
		return nil, fmt.Errorf("e2e: meter: measured %d operations of %d", len(m.costs), len(mix.Ops))
	}
	for i := range m.costs {
		m.costs[i].By = mix.Ops[i].By
	}
	return m.costs, nil
}

// written is one item an operation writes or checks.
type written struct {
	table string
	key   map[string]types.AttributeValue
	check bool // a ConditionCheck: billed, not written
}

func (m *Meter) around(ctx context.Context, o Op, body []byte, send func() (string, []byte, error)) (string, []byte, error) {
	c := OpCost{Kind: o.Kind()}
	items, transactional, read, err := m.targets(o.Operation, body)
	if err != nil {
		return "", nil, err
	}
	before := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		if before[i], err = m.get(ctx, it); err != nil {
			return "", nil, err
		}
	}
	code, answer, err := send()
	if err != nil || code != "" {
		return code, answer, err
	}
	factor := 1
	if transactional {
		factor = 2
	}
	for i, it := range items {
		if read {
			c.Reads += units(itemSize(before[i]), 4096)
			continue
		}
		if it.check {
			c.Writes += factor * units(itemSize(before[i]), 1024)
			continue
		}
		after, err := m.get(ctx, it)
		if err != nil {
			return "", nil, err
		}
		c.Writes += factor * units(max(itemSize(before[i]), itemSize(after)), 1024)
		def := m.tables[it.table]
		for _, ix := range def.indexes {
			if n := ix.writes(def.keys, before[i], after); n > 0 {
				c.Writes += factor * n
				c.Indexes = append(c.Indexes, fmt.Sprintf("%s %d", ix.name, factor*n))
			}
		}
	}
	m.costs = append(m.costs, c)
	return code, answer, nil
}

// targets are the items an operation reads or writes.
func (m *Meter) targets(operation string, body []byte) (items []written, transactional, read bool, err error) {
	type item struct {
		TableName string
		Key, Item map[string]json.RawMessage
	}
	keyOf := func(it item) (written, error) {
		def, ok := m.tables[it.TableName]
		if !ok {
			return written{}, fmt.Errorf("e2e: meter: table %q is not the template's", it.TableName)
		}
		src := it.Key
		if src == nil {
			src = it.Item
		}
		raw := map[string]json.RawMessage{}
		for _, k := range def.keys {
			raw[k] = src[k]
		}
		key, err := decodeItem(raw)
		return written{table: it.TableName, key: key}, err
	}
	switch operation {
	case "PutItem", "UpdateItem", "GetItem":
		var it item
		if err := json.Unmarshal(body, &it); err != nil {
			return nil, false, false, err
		}
		w, err := keyOf(it)
		return []written{w}, false, operation == "GetItem", err
	case "TransactWriteItems":
		var tx struct {
			TransactItems []map[string]item
		}
		if err := json.Unmarshal(body, &tx); err != nil {
			return nil, false, false, err
		}
		for _, ti := range tx.TransactItems {
			for action, it := range ti {
				w, err := keyOf(it)
				if err != nil {
					return nil, false, false, err
				}
				w.check = action == "ConditionCheck"
				items = append(items, w)
			}
		}
		return items, true, false, nil
	}
	return nil, false, false, fmt.Errorf("e2e: meter: operation %s is not metered", operation)
}

func (m *Meter) get(ctx context.Context, w written) (map[string]types.AttributeValue, error) {
	out, err := m.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), Key: w.key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("e2e: meter: read %s: %w", w.table, err)
	}
	return out.Item, nil
}

// writes is how many index writes a change of an item from before to
// after costs this index (items of at most 1 KB each in the index).
func (ix indexDef) writes(tableKeys []string, before, after map[string]types.AttributeValue) int {
	inB, inA := ix.has(before), ix.has(after)
	switch {
	case !inB && !inA:
		return 0
	case inB && !inA:
		return units(itemSize(ix.entry(tableKeys, before)), 1024)
	case !inB && inA:
		return units(itemSize(ix.entry(tableKeys, after)), 1024)
	case !sameValues(ix.keys, before, after):
		return units(itemSize(ix.entry(tableKeys, before)), 1024) + units(itemSize(ix.entry(tableKeys, after)), 1024)
	case !reflect.DeepEqual(plain(ix.entry(tableKeys, before)), plain(ix.entry(tableKeys, after))):
		return units(itemSize(ix.entry(tableKeys, after)), 1024)
	}
	return 0
}

// has reports whether an item is in the index: it has every key.
func (ix indexDef) has(item map[string]types.AttributeValue) bool {
	if len(item) == 0 {
		return false
	}
	for _, k := range ix.keys {
		if _, ok := item[k]; !ok {
			return false
		}
	}
	return true
}

// entry is the item's index entry: the attributes the index projects.
func (ix indexDef) entry(tableKeys []string, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(item) == 0 || !ix.has(item) {
		return nil
	}
	if ix.projection == types.ProjectionTypeAll {
		return item
	}
	out := map[string]types.AttributeValue{}
	for _, k := range slices.Concat(tableKeys, ix.keys, ix.include) {
		if v, ok := item[k]; ok {
			out[k] = v
		}
	}
	return out
}

func sameValues(names []string, a, b map[string]types.AttributeValue) bool {
	for _, n := range names {
		if !reflect.DeepEqual(plain(map[string]types.AttributeValue{n: a[n]}), plain(map[string]types.AttributeValue{n: b[n]})) {
			return false
		}
	}
	return true
}

func plain(item map[string]types.AttributeValue) map[string]any {
	var out map[string]any
	if err := attributevalue.UnmarshalMap(item, &out); err != nil {
		return map[string]any{"error": err.Error()}
	}
	return out
}

// units is how many units of size per unit an item of size bytes takes:
// at least one.
func units(size, per int) int {
	return max(1, (size+per-1)/per)
}

// itemSize is an item's size as DynamoDB counts it: each attribute's name
// and value (a number about one byte per two digits, plus one).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		return 3 + itemSize(v.Value) + len(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += (len(s)+1)/2 + 1
		}
		return n
	}
	return 0
}

// decodeItem reads a DynamoDB JSON item (attribute name to {"S": ...}).
func decodeItem(raw map[string]json.RawMessage) (map[string]types.AttributeValue, error) {
	out := map[string]types.AttributeValue{}
	for name, r := range raw {
		var v struct {
			S *string
			N *string
		}
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, fmt.Errorf("e2e: meter: key %s: %w", name, err)
		}
		switch {
		case v.S != nil:
			out[name] = &types.AttributeValueMemberS{Value: *v.S}
		case v.N != nil:
			out[name] = &types.AttributeValueMemberN{Value: *v.N}
		default:
			return nil, fmt.Errorf("e2e: meter: key %s is neither S nor N: %s", name, r)
		}
	}
	return out, nil
}

// Totals adds up the costs: write units and read units.
func Totals(costs []OpCost) (writes, reads int) {
	for _, c := range costs {
		writes += c.Writes
		reads += c.Reads
	}
	return writes, reads
}
