package iam

import (
	"encoding/base64"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// opKind is the comparison an operator makes.
type opKind uint8

const (
	opString opKind = iota
	opStringIgnoreCase
	opStringLike
	opNumericEquals
	opNumericLessThan
	opNumericLessThanEquals
	opNumericGreaterThan
	opNumericGreaterThanEquals
	opDateEquals
	opDateLessThan
	opDateLessThanEquals
	opDateGreaterThan
	opDateGreaterThanEquals
	opBool
	opBinary
	opIPAddress
	opARN
	opNull
)

// operators are AWS's condition operators, without the IfExists suffix and
// the ForAnyValue: and ForAllValues: prefixes.
var operators = map[string]struct {
	kind    opKind
	negated bool
}{
	"StringEquals":              {opString, false},
	"StringNotEquals":           {opString, true},
	"StringEqualsIgnoreCase":    {opStringIgnoreCase, false},
	"StringNotEqualsIgnoreCase": {opStringIgnoreCase, true},
	"StringLike":                {opStringLike, false},
	"StringNotLike":             {opStringLike, true},
	"NumericEquals":             {opNumericEquals, false},
	"NumericNotEquals":          {opNumericEquals, true},
	"NumericLessThan":           {opNumericLessThan, false},
	"NumericLessThanEquals":     {opNumericLessThanEquals, false},
	"NumericGreaterThan":        {opNumericGreaterThan, false},
	"NumericGreaterThanEquals":  {opNumericGreaterThanEquals, false},
	"DateEquals":                {opDateEquals, false},
	"DateNotEquals":             {opDateEquals, true},
	"DateLessThan":              {opDateLessThan, false},
	"DateLessThanEquals":        {opDateLessThanEquals, false},
	"DateGreaterThan":           {opDateGreaterThan, false},
	"DateGreaterThanEquals":     {opDateGreaterThanEquals, false},
	"Bool":                      {opBool, false},
	"BinaryEquals":              {opBinary, false},
	"IpAddress":                 {opIPAddress, false},
	"NotIpAddress":              {opIPAddress, true},
	"ArnEquals":                 {opARN, false},
	"ArnLike":                   {opARN, false},
	"ArnNotEquals":              {opARN, true},
	"ArnNotLike":                {opARN, true},
	"Null":                      {opNull, false},
}

// setOp is a condition operator's set prefix.
type setOp uint8

const (
	setNone setOp = iota
	setAnyValue
	setAllValues
)

// operator is a parsed condition operator.
type operator struct {
	kind     opKind
	negated  bool
	ifExists bool
	set      setOp
}

// parseOperator reads a condition operator as written in a policy.
func parseOperator(s string) (operator, *fault) {
	var op operator
	name := s
	if rest, ok := strings.CutPrefix(name, "ForAnyValue:"); ok {
		op.set, name = setAnyValue, rest
	} else if rest, ok := strings.CutPrefix(name, "ForAllValues:"); ok {
		op.set, name = setAllValues, rest
	}
	if rest, ok := strings.CutSuffix(name, "IfExists"); ok {
		op.ifExists, name = true, rest
	}
	o, ok := operators[name]
	if !ok {
		return op, &fault{msg: "unknown condition operator " + quote(s)}
	}
	op.kind, op.negated = o.kind, o.negated
	if op.kind == opNull && op.ifExists {
		return op, &fault{msg: "condition operator " + quote(s) + ": Null takes no IfExists suffix"}
	}
	if op.kind == opNull && op.set != setNone {
		return op, &fault{msg: "condition operator " + quote(s) + ": Null takes no ForAnyValue: or ForAllValues: prefix"}
	}
	return op, nil
}

// condition is a compiled Condition.
type condition struct {
	src Condition
	op  operator
	// key is the condition key in lower case.
	key string
	// Compiled values; which one is set depends on op.kind.
	strs     []string
	globs    []pattern
	arns     []arnPattern
	numbers  []float64
	times    []time.Time
	prefixes []netip.Prefix
	bools    []bool
}

// compileCondition checks a Condition and compiles its values; vars tells
// whether the policy's Version gives "${...}" a meaning.
func compileCondition(c Condition, vars bool) (*condition, *fault) {
	op, f := parseOperator(c.Operator)
	if f != nil {
		return nil, f
	}
	if c.Key == "" {
		return nil, &fault{msg: "condition operator " + quote(c.Operator) + " has an empty condition key"}
	}
	if len(c.Values) == 0 {
		return nil, &fault{msg: "condition " + quote(c.Operator) + " gives key " + quote(c.Key) + " no value"}
	}
	cond := &condition{src: c, op: op, key: strings.ToLower(c.Key)}
	bad := func(v, what string) *fault {
		return &fault{msg: "condition " + quote(c.Operator) + " key " + quote(c.Key) + ": value " + quote(v) + " is not " + what}
	}
	for _, v := range c.Values {
		switch op.kind {
		case opString, opStringIgnoreCase, opBinary:
			p, f := compile(v, false, vars)
			if f != nil {
				return nil, f
			}
			if op.kind == opBinary {
				if _, err := base64.StdEncoding.DecodeString(v); err != nil {
					return nil, bad(v, "base64")
				}
			}
			cond.strs = append(cond.strs, p.literalText())
		case opStringLike:
			p, f := compile(v, true, vars)
			if f != nil {
				return nil, f
			}
			cond.globs = append(cond.globs, p)
		case opARN:
			if strings.Contains(v, "${") {
				if _, f := compile(v, true, vars); f != nil {
					return nil, f
				}
			}
			a, f := compileARN(v, vars)
			if f != nil {
				f.msg = "condition " + quote(c.Operator) + " key " + quote(c.Key) + ": " + f.msg
				return nil, f
			}
			cond.arns = append(cond.arns, a)
		case opNumericEquals, opNumericLessThan, opNumericLessThanEquals, opNumericGreaterThan, opNumericGreaterThanEquals:
			n, ok := parseNumber(v)
			if !ok {
				return nil, bad(v, "a number")
			}
			cond.numbers = append(cond.numbers, n)
		case opDateEquals, opDateLessThan, opDateLessThanEquals, opDateGreaterThan, opDateGreaterThanEquals:
			t, ok := parseDate(v)
			if !ok {
				return nil, bad(v, "a date (ISO 8601, or seconds since the epoch)")
			}
			cond.times = append(cond.times, t)
		case opIPAddress:
			p, ok := parsePrefix(v)
			if !ok {
				return nil, bad(v, "an IP address or CIDR block")
			}
			cond.prefixes = append(cond.prefixes, p)
		case opBool, opNull:
			b, ok := parseBool(v)
			if !ok {
				return nil, bad(v, `"true" or "false"`)
			}
			cond.bools = append(cond.bools, b)
		}
	}
	return cond, nil
}

// eval reports whether the condition holds for the request values of its
// key; present is false when the key is known to be absent.
func (c *condition) eval(values []string) (bool, *fault) {
	present := len(values) > 0
	if c.op.kind == opNull {
		for _, isNull := range c.bools {
			if isNull != present {
				return true, nil
			}
		}
		return false, nil
	}
	switch c.op.set {
	case setAnyValue:
		if !present {
			return c.op.ifExists, nil
		}
		for _, v := range values {
			if c.test(v) {
				return true, nil
			}
		}
		return false, nil
	case setAllValues:
		for _, v := range values {
			if !c.test(v) {
				return false, nil
			}
		}
		return true, nil
	}
	if !present {
		return c.op.ifExists || c.op.negated, nil
	}
	if len(values) > 1 {
		return false, &fault{
			msg: "the request has " + strconv.Itoa(len(values)) + " values for this multivalued key: its operator " +
				quote(c.src.Operator) + " needs a ForAnyValue: or ForAllValues: prefix, and AWS does not document the result without one",
			err: ErrUnsupported,
		}
	}
	return c.test(values[0]), nil
}

// test applies the operator to one request value: true when the value
// matches any policy value, or, for a negated operator, none.
func (c *condition) test(v string) bool {
	return c.matchAny(v) != c.op.negated
}

// matchAny reports whether the request value v matches any of the policy
// values under the operator's comparison.
func (c *condition) matchAny(v string) bool {
	switch c.op.kind {
	case opString, opBinary:
		for _, s := range c.strs {
			if v == s {
				return true
			}
		}
	case opStringIgnoreCase:
		for _, s := range c.strs {
			if strings.EqualFold(v, s) {
				return true
			}
		}
	case opStringLike:
		for _, p := range c.globs {
			if p.match(v) {
				return true
			}
		}
	case opARN:
		for _, a := range c.arns {
			if a.match(v) {
				return true
			}
		}
	case opNumericEquals, opNumericLessThan, opNumericLessThanEquals, opNumericGreaterThan, opNumericGreaterThanEquals:
		n, ok := parseNumber(v)
		if !ok {
			return false
		}
		for _, m := range c.numbers {
			if compareOK(c.op.kind-opNumericEquals, cmpFloat(n, m)) {
				return true
			}
		}
	case opDateEquals, opDateLessThan, opDateLessThanEquals, opDateGreaterThan, opDateGreaterThanEquals:
		t, ok := parseDate(v)
		if !ok {
			return false
		}
		for _, m := range c.times {
			if compareOK(c.op.kind-opDateEquals, t.Compare(m)) {
				return true
			}
		}
	case opIPAddress:
		a, err := netip.ParseAddr(v)
		if err != nil {
			return false
		}
		for _, p := range c.prefixes {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
	case opBool:
		b, ok := parseBool(v)
		if !ok {
			return false
		}
		for _, m := range c.bools {
			if b == m {
				return true
			}
		}
	}
	return false
}

// compareOK reports whether cmp (-1, 0, +1 for request value against policy
// value) satisfies the comparison rel, counted from the Equals operator of
// its family: Equals, LessThan, LessThanEquals, GreaterThan,
// GreaterThanEquals.
func compareOK(rel opKind, cmp int) bool {
	switch rel {
	case 0:
		return cmp == 0
	case 1:
		return cmp < 0
	case 2:
		return cmp <= 0
	case 3:
		return cmp > 0
	default:
		return cmp >= 0
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func parseNumber(s string) (float64, bool) {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return n, err == nil
}

func parseBool(s string) (bool, bool) {
	switch {
	case strings.EqualFold(s, "true"):
		return true, true
	case strings.EqualFold(s, "false"):
		return false, true
	}
	return false, false
}

// dateLayouts are the W3C profile of ISO 8601 that AWS accepts for dates.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02",
	"2006-01",
	"2006",
}

// parseDate reads an ISO 8601 date or a count of seconds since the epoch;
// four digits alone are a year.
func parseDate(s string) (time.Time, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) != 4 {
		return time.Unix(n, 0).UTC(), true
	}
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parsePrefix reads a CIDR block, or one address as the block of that
// address alone.
func parsePrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}
