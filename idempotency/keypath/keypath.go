// Package keypath derives idempotency keys and payloads from JSON with
// JMESPath expressions, as Powertools' event_key_jmespath and
// payload_validation_jmespath do, for idempotency.Operation's KeyFunc and
// Payload.
//
// An expression is compiled once (Compile): one that does not parse, or
// that calls a function that does not exist or with the wrong number of
// arguments, is a *CompileError then, never at the first event. Besides
// JMESPath's functions (those of jmespath-community/go-jmespath, the
// JMESPath Community edition) an expression may call Powertools' own:
//
//   - powertools_json(s): the JSON text s, decoded (Decode);
//   - powertools_base64(s): s decoded from standard base64, as text;
//   - powertools_base64_gzip(s): s decoded from standard base64 and then
//     gunzipped, as text (at most MaxDecoded bytes).
//
// So "powertools_json(body).order.id" selects the order id of an SQS
// message whose body is JSON, and
// "powertools_json(powertools_base64(kinesis.data)).id" that of a Kinesis
// record.
//
// A selection becomes a key by Key's rule: a string that is already a
// valid key is the key, anything else the "sha256:" digest of its
// canonical JSON (Canonical); a selection of nothing is
// idempotency.ErrKeyMissing.
//
// A package of its own, so that a program that uses idempotency.Do
// without JMESPath builds none of it.
package keypath

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jmespath-community/go-jmespath"
	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"

	"github.com/exactlyonce/transfers/idempotency"
)

// DigestPrefix begins every key that Key makes from a digest. A string
// selection that begins with it is digested too, so a key taken as
// selected never equals a digest of something else.
const DigestPrefix = "sha256:"

// MaxDecoded is the most bytes powertools_base64_gzip inflates to: more
// is an error, so a small compressed input cannot take all the memory.
const MaxDecoded = 32 << 20

// maxDecoded is MaxDecoded, but for the tests of the limit.
var maxDecoded = MaxDecoded

// maxExactInteger is 2^53: every integer of at most that magnitude is
// exact as a float64.
const maxExactInteger = 1 << 53

// CompileError reports an expression that Compile refused.
type CompileError struct {
	// Expr is the expression as given.
	Expr string
	// Offset is where in Expr the syntax error is (bytes), or -1 when
	// the error is not one of syntax (an unknown function, say).
	Offset int
	// Err is the reason.
	Err error
}

func (e *CompileError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("keypath: compile %q: %v (at offset %d)", e.Expr, e.Err, e.Offset)
	}
	return fmt.Sprintf("keypath: compile %q: %v", e.Expr, e.Err)
}

// Unwrap returns the reason.
func (e *CompileError) Unwrap() error { return e.Err }

// Path is a compiled JMESPath expression. It is safe for concurrent use.
type Path struct {
	expr string
	jp   jmespath.JMESPath
}

// powertoolsFunctions are Powertools' functions, on top of JMESPath's.
var powertoolsFunctions = []functions.FunctionEntry{
	{
		Name:      "powertools_json",
		Arguments: []functions.ArgSpec{{Types: []functions.JpType{functions.JpString}}},
		Handler: func(args []any) (any, error) {
			v, err := Decode([]byte(args[0].(string)))
			if err != nil {
				return nil, fmt.Errorf("powertools_json: %w", err)
			}
			return v, nil
		},
	},
	{
		Name:      "powertools_base64",
		Arguments: []functions.ArgSpec{{Types: []functions.JpType{functions.JpString}}},
		Handler: func(args []any) (any, error) {
			b, err := base64.StdEncoding.DecodeString(args[0].(string))
			if err != nil {
				return nil, fmt.Errorf("powertools_base64: %w", err)
			}
			return text("powertools_base64", b)
		},
	},
	{
		Name:      "powertools_base64_gzip",
		Arguments: []functions.ArgSpec{{Types: []functions.JpType{functions.JpString}}},
		Handler: func(args []any) (any, error) {
			b, err := base64.StdEncoding.DecodeString(args[0].(string))
			if err != nil {
				return nil, fmt.Errorf("powertools_base64_gzip: %w", err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("powertools_base64_gzip: %w", err)
			}
			limit := maxDecoded
			out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
			if err != nil {
				return nil, fmt.Errorf("powertools_base64_gzip: %w", err)
			}
			if len(out) > limit {
				return nil, fmt.Errorf("powertools_base64_gzip: inflates to more than %d bytes", limit)
			}
			return text("powertools_base64_gzip", out)
		},
	},
}

// text is b as a string, when it is UTF-8.
func text(fn string, b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s: the decoded bytes are not UTF-8 text", fn)
	}
	return string(b), nil
}

// signatures are the functions an expression may call, by name.
var signatures = func() map[string][]functions.ArgSpec {
	m := map[string][]functions.ArgSpec{}
	for _, f := range functions.GetDefaultFunctions() {
		m[f.Name] = f.Arguments
	}
	for _, f := range powertoolsFunctions {
		m[f.Name] = f.Arguments
	}
	return m
}()

// Compile compiles a JMESPath expression, with Powertools' functions. An
// expression that does not parse, or that calls an unknown function or a
// function with too few or too many arguments, is a *CompileError.
func Compile(expr string) (*Path, error) {
	ast, err := parsing.NewParser().Parse(expr)
	if err != nil {
		var se parsing.SyntaxError
		if errors.As(err, &se) {
			return nil, &CompileError{Expr: expr, Offset: se.Offset, Err: err}
		}
		return nil, &CompileError{Expr: expr, Offset: -1, Err: err}
	}
	if err := checkCalls(ast); err != nil {
		return nil, &CompileError{Expr: expr, Offset: -1, Err: err}
	}
	jp, err := jmespath.Compile(expr, powertoolsFunctions...)
	if err != nil {
		return nil, &CompileError{Expr: expr, Offset: -1, Err: err}
	}
	return &Path{expr: expr, jp: jp}, nil
}

// MustCompile is Compile for expressions known to be good: it panics
// with the *CompileError.
func MustCompile(expr string) *Path {
	p, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return p
}

// checkCalls checks every function call of the tree: a known function,
// with as many arguments as it takes.
func checkCalls(n parsing.ASTNode) error {
	if n.NodeType == parsing.ASTFunctionExpression {
		name, _ := n.Value.(string)
		args, ok := signatures[name]
		if !ok {
			return fmt.Errorf("unknown function %s()", name)
		}
		least, most := 0, len(args)
		for _, a := range args {
			if !a.Optional {
				least++
			}
			if a.Variadic {
				most = -1
			}
		}
		switch got := len(n.Children); {
		case got < least:
			return fmt.Errorf("%s() takes at least %d arguments, got %d", name, least, got)
		case most >= 0 && got > most:
			return fmt.Errorf("%s() takes at most %d arguments, got %d", name, most, got)
		}
	}
	for _, c := range n.Children {
		if err := checkCalls(c); err != nil {
			return err
		}
	}
	return nil
}

// String is the expression as compiled.
func (p *Path) String() string { return p.expr }

// search evaluates the expression on doc.
func (p *Path) search(doc any) (any, error) {
	v, err := p.jp.Search(doc)
	if err != nil {
		return nil, fmt.Errorf("keypath: %q: %w", p.expr, err)
	}
	return v, nil
}

// Key is the key of what the expression selects from doc, a JSON
// document as Decode or encoding/json decodes one, by Key's rule: a
// selection of nothing is an error matching idempotency.ErrKeyMissing.
func (p *Path) Key(doc any) (string, error) {
	v, err := p.search(doc)
	if err != nil {
		return "", err
	}
	if missing(v) {
		return "", fmt.Errorf("keypath: %q selected nothing: %w", p.expr, idempotency.ErrKeyMissing)
	}
	return Key(v)
}

// KeyJSON is Key of the JSON document b (decoded by Decode).
func (p *Path) KeyJSON(b []byte) (string, error) {
	doc, err := Decode(b)
	if err != nil {
		return "", err
	}
	return p.Key(doc)
}

// Payload is the canonical JSON (Canonical) of what the expression
// selects from doc, for idempotency.Operation.Payload: only that part is
// fingerprinted. A selection of nothing is "null", not an error.
func (p *Path) Payload(doc any) ([]byte, error) {
	v, err := p.search(doc)
	if err != nil {
		return nil, err
	}
	return Canonical(v)
}

// PayloadJSON is Payload of the JSON document b (decoded by Decode).
func (p *Path) PayloadJSON(b []byte) ([]byte, error) {
	doc, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return p.Payload(doc)
}

// document is the JSON of in, decoded.
func document(in any) (any, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("keypath: encode the input: %w", err)
	}
	return Decode(b)
}

// KeyFunc returns an idempotency.Operation KeyFunc that takes the key
// from the JSON of the input (encoding/json's, so an events.SQSMessage
// is the record as Lambda sends it) with p.
func KeyFunc[In any](p *Path) func(In) (string, error) {
	return func(in In) (string, error) {
		doc, err := document(in)
		if err != nil {
			return "", err
		}
		return p.Key(doc)
	}
}

// PayloadFunc returns an idempotency.Operation Payload that fingerprints
// only what p selects from the JSON of the input.
func PayloadFunc[In any](p *Path) func(In) ([]byte, error) {
	return func(in In) ([]byte, error) {
		doc, err := document(in)
		if err != nil {
			return nil, err
		}
		return p.Payload(doc)
	}
}

// missing reports a selection of nothing: null, "", or an array or object
// that is empty or holds only nulls. (Powertools counts an object as
// missing only when it is empty; an object of nulls, what a multi-select
// hash of absent fields gives, is missing here too.)
func missing(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		for _, e := range v {
			if e != nil {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if e != nil {
				return false
			}
		}
		return true
	}
	return false
}

// Key is the idempotency key of a selected value v:
//
//   - a string that passes idempotency.ValidateKey (1 to 255 printable
//     ASCII characters) and does not begin with DigestPrefix is the key as
//     it is;
//   - anything else (a longer string or one with other characters, a
//     number, a boolean, an array, an object) is DigestPrefix followed by
//     the lowercase hex SHA-256 of v's canonical JSON (Canonical): 71
//     characters.
//
// A selection of nothing (nil, "", an array or object empty or of nulls
// only) is an error matching idempotency.ErrKeyMissing.
func Key(v any) (string, error) {
	if missing(v) {
		return "", fmt.Errorf("keypath: the selection is empty: %w", idempotency.ErrKeyMissing)
	}
	if s, ok := v.(string); ok && idempotency.ValidateKey(s) == nil && !strings.HasPrefix(s, DigestPrefix) {
		return s, nil
	}
	b, err := Canonical(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:]), nil
}

// Canonical is the canonical JSON of v, a value as Decode returns them
// (or encoding/json decodes into any): encoding/json's encoding, which
// writes object members sorted by name (bytewise), no insignificant
// space, strings escaped as encoding/json does but without its HTML
// escapes, a float64 in its shortest form (1, 0.5, 1e+21) and a
// json.Number as it is written. So two documents that differ only in
// member order, spacing or the spelling of a float (1.0 and 1) have the
// same canonical JSON. A value JSON cannot hold (NaN, say) is an error.
func Canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("keypath: canonical JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Decode decodes one JSON document (UTF-8, as JSON must be) into nil,
// bool, string, float64, []any and map[string]any, as encoding/json does,
// except that an integer written without fraction or exponent whose
// magnitude is above 2^53, which a float64 cannot hold exactly, is kept
// as its text, a json.Number: two large ids never become one key.
// JMESPath's comparisons, arithmetic and number functions do not count
// such a json.Number as a number.
func Decode(b []byte) (any, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("keypath: the JSON is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("keypath: decode JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("keypath: decode JSON: data after the document")
	}
	return numbers(v)
}

// numbers turns the json.Numbers of v into float64 where that is exact
// or the number is not an integer (Decode).
func numbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n > maxExactInteger || n < -maxExactInteger {
				return v, nil
			}
			return float64(n), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("keypath: decode JSON: number %s: %w", s, err)
		}
		return f, nil
	case []any:
		for i, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	case map[string]any:
		for k, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	}
	return v, nil
}
