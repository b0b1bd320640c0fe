package asl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"unicode/utf8"
)

// intrinsicFunc describes one States.* function.
type intrinsicFunc struct {
	minArgs, maxArgs int // maxArgs < 0: unlimited
	// check validates literal arguments at load time (optional).
	check func(c *intrinsicCall) error
	// call computes the result from evaluated arguments. A plain error
	// becomes States.IntrinsicFailure.
	call func(c *intrinsicCall, args []any) (any, error)
	// callEnv replaces call for functions that need the run's environment.
	callEnv func(c *intrinsicCall, args []any, env *evalEnv) (any, error)
}

func (f *intrinsicFunc) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d argument(s)", f.minArgs)
	default:
		return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
	}
}

// Limits Step Functions applies to intrinsic arguments and results.
const (
	maxIntrinsicString = 10000 // Base64Encode/Decode and Hash input characters
	maxArrayRange      = 1000  // ArrayRange result length
)

var intrinsics map[string]*intrinsicFunc

func init() {
	intrinsics = map[string]*intrinsicFunc{
		"States.Format":         {minArgs: 1, maxArgs: -1, check: checkFormat, call: fnFormat},
		"States.StringToJson":   {minArgs: 1, maxArgs: 1, call: fnStringToJSON},
		"States.JsonToString":   {minArgs: 1, maxArgs: 1, call: fnJSONToString},
		"States.Array":          {minArgs: 0, maxArgs: -1, call: fnArray},
		"States.ArrayPartition": {minArgs: 2, maxArgs: 2, call: fnArrayPartition},
		"States.ArrayContains":  {minArgs: 2, maxArgs: 2, call: fnArrayContains},
		"States.ArrayRange":     {minArgs: 3, maxArgs: 3, call: fnArrayRange},
		"States.ArrayGetItem":   {minArgs: 2, maxArgs: 2, call: fnArrayGetItem},
		"States.ArrayLength":    {minArgs: 1, maxArgs: 1, call: fnArrayLength},
		"States.ArrayUnique":    {minArgs: 1, maxArgs: 1, call: fnArrayUnique},
		"States.Base64Encode":   {minArgs: 1, maxArgs: 1, call: fnBase64Encode},
		"States.Base64Decode":   {minArgs: 1, maxArgs: 1, call: fnBase64Decode},
		"States.Hash":           {minArgs: 2, maxArgs: 2, check: checkHash, call: fnHash},
		"States.JsonMerge":      {minArgs: 3, maxArgs: 3, check: checkJSONMerge, call: fnJSONMerge},
		"States.MathAdd":        {minArgs: 2, maxArgs: 2, call: fnMathAdd},
		"States.StringSplit":    {minArgs: 2, maxArgs: 2, call: fnStringSplit},
		"States.UUID":           {minArgs: 0, maxArgs: 0, call: fnUUID},
		"States.MathRandom":     {minArgs: 2, maxArgs: 3, callEnv: fnMathRandom},
	}
}

// --- States.Format ---

// formatParts splits a template into the literal text around its {}
// placeholders. With escapes, \{ \} \' \\ stand for the character itself
// (a template written as a quoted literal); without, the text is taken as
// is (a template that came from a path).
func formatParts(tmpl string, escapes bool) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case escapes && c == '\\' && i+1 < len(tmpl):
			i++
			cur.WriteByte(tmpl[i])
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			parts = append(parts, cur.String())
			cur.Reset()
			i++
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}

func checkFormat(c *intrinsicCall) error {
	a := c.args[0]
	switch {
	case a.isStr:
		if n := len(formatParts(a.raw, true)) - 1; n != len(c.args)-1 {
			return fmt.Errorf("the template has %d placeholder(s) but %d value argument(s) follow", n, len(c.args)-1)
		}
	case a.path == nil && a.call == nil:
		return errors.New("the first argument must be a string template")
	}
	return nil
}

func fnFormat(c *intrinsicCall, args []any) (any, error) {
	var parts []string
	if c.args[0].isStr {
		parts = formatParts(c.args[0].raw, true)
	} else {
		tmpl, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("the template must be a string, got %s", typeName(args[0]))
		}
		parts = formatParts(tmpl, false)
	}
	values := args[1:]
	if len(parts)-1 != len(values) {
		return nil, fmt.Errorf("the template has %d placeholder(s) but %d value argument(s) were given", len(parts)-1, len(values))
	}
	var b strings.Builder
	for i, part := range parts {
		b.WriteString(part)
		if i < len(values) {
			b.WriteString(formatValue(values[i]))
		}
	}
	return b.String(), nil
}

// formatValue renders a value the way Step Functions' States.Format does:
// strings verbatim, scalars as JSON, arrays as [a, b], objects as {k=v}.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			parts = append(parts, k+"="+formatValue(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return mustEncode(v)
	}
}

// --- JSON ---

func fnStringToJSON(_ *intrinsicCall, args []any) (any, error) {
	s, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(s) == "" {
		// AWS answers null for an empty or blank string.
		return nil, nil
	}
	v, err := decodeValue([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("the argument is not valid JSON: %v", err)
	}
	return v, nil
}

func fnJSONToString(_ *intrinsicCall, args []any) (any, error) {
	b, err := encodeValue(args[0])
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func checkJSONMerge(c *intrinsicCall) error {
	if a := c.args[2]; a.path == nil && a.call == nil && a.literal != false {
		return errors.New("only a shallow merge is supported: the third argument must be false")
	}
	return nil
}

func fnJSONMerge(_ *intrinsicCall, args []any) (any, error) {
	a, ok1 := args[0].(map[string]any)
	b, ok2 := args[1].(map[string]any)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("the first two arguments must be objects, got %s and %s", typeName(args[0]), typeName(args[1]))
	}
	if deep, ok := args[2].(bool); !ok || deep {
		return nil, errors.New("only a shallow merge is supported: the third argument must be false")
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out, nil
}

// --- arrays ---

func fnArray(_ *intrinsicCall, args []any) (any, error) {
	out := make([]any, len(args))
	copy(out, args)
	return out, nil
}

func fnArrayPartition(_ *intrinsicCall, args []any) (any, error) {
	arr, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	size, ok := asInteger(args[1])
	if !ok || size <= 0 {
		return nil, fmt.Errorf("the chunk size must be a positive integer, got %s", mustEncode(args[1]))
	}
	out := []any{}
	for start := 0; start < len(arr); start += int(size) {
		end := min(start+int(size), len(arr))
		chunk := make([]any, end-start)
		copy(chunk, arr[start:end])
		out = append(out, chunk)
	}
	return out, nil
}

func fnArrayContains(_ *intrinsicCall, args []any) (any, error) {
	arr, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	for _, e := range arr {
		if valuesEqual(e, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

func fnArrayRange(_ *intrinsicCall, args []any) (any, error) {
	var n [3]int64
	for i := range n {
		v, ok := asInteger(args[i])
		if !ok {
			return nil, fmt.Errorf("argument %d must be an integer, got %s", i+1, mustEncode(args[i]))
		}
		n[i] = v
	}
	start, end, step := n[0], n[1], n[2]
	if step == 0 {
		return nil, errors.New("the step must not be 0")
	}
	out := []any{}
	for v := start; (step > 0 && v <= end) || (step < 0 && v >= end); v += step {
		if len(out) == maxArrayRange {
			return nil, fmt.Errorf("the range has more than %d items", maxArrayRange)
		}
		out = append(out, intNumber(v))
	}
	return out, nil
}

func fnArrayGetItem(_ *intrinsicCall, args []any) (any, error) {
	arr, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	i, ok := asInteger(args[1])
	if !ok || i < 0 {
		return nil, fmt.Errorf("the index must be a non-negative integer, got %s", mustEncode(args[1]))
	}
	if i >= int64(len(arr)) {
		return nil, fmt.Errorf("index %d is out of range for an array of length %d", i, len(arr))
	}
	return arr[i], nil
}

func fnArrayLength(_ *intrinsicCall, args []any) (any, error) {
	arr, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	return intNumber(int64(len(arr))), nil
}

func fnArrayUnique(_ *intrinsicCall, args []any) (any, error) {
	arr, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	out := []any{}
next:
	for _, e := range arr {
		for _, seen := range out {
			if valuesEqual(e, seen) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// --- encoding and hashing ---

func fnBase64Encode(_ *intrinsicCall, args []any) (any, error) {
	s, err := boundedStringArg(args, 0)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func fnBase64Decode(_ *intrinsicCall, args []any) (any, error) {
	s, err := boundedStringArg(args, 0)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("the argument is not valid base64: %v", err)
	}
	if !utf8.Valid(b) {
		return nil, errors.New("the decoded data is not valid UTF-8 text")
	}
	return string(b), nil
}

var hashAlgorithms = map[string]func() hash.Hash{
	"MD5":     md5.New,
	"SHA-1":   sha1.New,
	"SHA-256": sha256.New,
	"SHA-384": sha512.New384,
	"SHA-512": sha512.New,
}

func checkHash(c *intrinsicCall) error {
	if a := c.args[1]; a.isStr {
		if _, ok := hashAlgorithms[a.literal.(string)]; !ok {
			return fmt.Errorf("unknown hash algorithm %q (MD5, SHA-1, SHA-256, SHA-384, SHA-512)", a.literal)
		}
	}
	return nil
}

func fnHash(_ *intrinsicCall, args []any) (any, error) {
	data, err := boundedStringArg(args, 0)
	if err != nil {
		return nil, err
	}
	alg, err := stringArg(args, 1)
	if err != nil {
		return nil, err
	}
	newHash, ok := hashAlgorithms[alg]
	if !ok {
		return nil, fmt.Errorf("unknown hash algorithm %q (MD5, SHA-1, SHA-256, SHA-384, SHA-512)", alg)
	}
	h := newHash()
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// --- math, strings, identifiers ---

// fnMathAdd adds two numbers. Like Step Functions, non-integer arguments
// are rounded to the nearest integer (halves round up) before the sum.
func fnMathAdd(_ *intrinsicCall, args []any) (any, error) {
	sum := new(big.Int)
	for i := range 2 {
		n, ok := args[i].(json.Number)
		if !ok {
			return nil, fmt.Errorf("argument %d must be a number, got %s", i+1, typeName(args[i]))
		}
		r, ok := numberRat(n)
		if !ok {
			return nil, fmt.Errorf("argument %d is not a valid number: %s", i+1, n)
		}
		// floor(r + 1/2)
		r.Add(r, big.NewRat(1, 2))
		q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
		sum.Add(sum, q)
	}
	return json.Number(sum.String()), nil
}

func fnStringSplit(_ *intrinsicCall, args []any) (any, error) {
	s, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	delims, err := stringArg(args, 1)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) }) {
		out = append(out, f)
	}
	return out, nil
}

func fnUUID(_ *intrinsicCall, _ []any) (any, error) {
	return newUUID(), nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// --- argument helpers ---

func stringArg(args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", fmt.Errorf("argument %d must be a string, got %s", i+1, typeName(args[i]))
	}
	return s, nil
}

func boundedStringArg(args []any, i int) (string, error) {
	s, err := stringArg(args, i)
	if err != nil {
		return "", err
	}
	if n := utf8.RuneCountInString(s); n > maxIntrinsicString {
		return "", fmt.Errorf("argument %d has %d characters, more than the limit of %d", i+1, n, maxIntrinsicString)
	}
	return s, nil
}

func arrayArg(args []any, i int) ([]any, error) {
	arr, ok := args[i].([]any)
	if !ok {
		return nil, fmt.Errorf("argument %d must be an array, got %s", i+1, typeName(args[i]))
	}
	return arr, nil
}

// fnMathRandom is States.MathRandom(start, end[, seed]): a random integer
// from start (inclusive) to end (exclusive). With a seed the number
// depends only on the seed; without, it comes from the machine's random
// source (Options.Rand).
func fnMathRandom(_ *intrinsicCall, args []any, env *evalEnv) (any, error) {
	lo, okLo := asInteger(args[0])
	hi, okHi := asInteger(args[1])
	if !okLo || !okHi {
		return nil, fmt.Errorf("the start and end must be integers, got %s and %s", mustEncode(args[0]), mustEncode(args[1]))
	}
	if hi <= lo {
		return nil, fmt.Errorf("the end (%d) must be greater than the start (%d)", hi, lo)
	}
	if len(args) == 3 {
		seed, ok := asInteger(args[2])
		if !ok {
			return nil, fmt.Errorf("the seed must be an integer, got %s", mustEncode(args[2]))
		}
		r := mrand.New(mrand.NewPCG(uint64(seed), uint64(seed)))
		return intNumber(lo + r.Int64N(hi-lo)), nil
	}
	return intNumber(lo + env.m.randInt64N(hi-lo)), nil
}
