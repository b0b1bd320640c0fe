// Package transfer holds the domain rules of a money transfer: what a valid
// request is, its canonical form, the transfer resource, and the domain
// errors the API maps to HTTP at its edge.
package transfer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a request.
const (
	MaxBodyBytes       = 16 << 10
	MaxReferenceLength = 140
	MaxAccountIDLength = 64
	// MaxNameErrors caps the unknown or repeated names a refusal lists:
	// a body of thousands of them gets the first ones, each once, and a
	// count of the rest, not an answer many times its size.
	MaxNameErrors = 20
)

// Request is a validated transfer request. Its JSON encoding (field order
// fixed by the struct) is the canonical form that is fingerprinted and
// stored.
type Request struct {
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	Amount               int64  `json:"amount"`
	Currency             string `json:"currency"`
	// Reference is always present in the canonical form ("" when absent),
	// so the workflow can address it by path.
	Reference string `json:"reference"`
}

// Canonical is the request's canonical JSON.
func (r Request) Canonical() []byte {
	if b, ok := r.appendJSON(make([]byte, 0, 160)); ok {
		return b
	}
	b, err := json.Marshal(r)
	if err != nil {
		// A struct of strings and an integer always marshals.
		panic(fmt.Sprintf("canonical request: %v", err))
	}
	return b
}

// FieldError is one problem with one field of a request.
type FieldError struct {
	Field  string `json:"field"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// ValidationError lists everything wrong with a request.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return "invalid request"
	}
	return fmt.Sprintf("invalid request: %s: %s", e.Fields[0].Field, e.Fields[0].Detail)
}

func (e *ValidationError) add(field, code, detail string) {
	e.Fields = append(e.Fields, FieldError{Field: field, Code: code, Detail: detail})
}

// ErrBodyTooLarge reports a body over MaxBodyBytes.
var ErrBodyTooLarge = errors.New("request body is larger than 16 KiB")

// accountIDShape reports whether s matches ^[A-Za-z0-9][A-Za-z0-9_.:-]*$:
// a letter or digit, then letters, digits, '_', '.', ':' or '-'. (A loop
// rather than a regular expression: it runs twice per request, and the
// expression was compiled at every cold start.)
func accountIDShape(s string) bool {
	if s == "" || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// wholeNumberShape reports whether s matches ^[1-9][0-9]*$: a positive
// whole number without leading zeros, sign, fraction or exponent.
func wholeNumberShape(s string) bool {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// wire is the request as sent; Amount stays a number literal so that 1.0,
// 1e3 and "1" are told apart from 1.
type wire struct {
	SourceAccountID      *string         `json:"sourceAccountId"`
	DestinationAccountID *string         `json:"destinationAccountId"`
	Amount               json.RawMessage `json:"amount"`
	Currency             *string         `json:"currency"`
	Reference            *string         `json:"reference"`
}

// ParseRequest decodes and validates a request body, limits included.
// maxAmount caps the amount in minor units. The error is ErrBodyTooLarge
// or a *ValidationError listing every invalid field.
func ParseRequest(body []byte, maxAmount int64) (Request, error) {
	r, limits, err := Parse(body, maxAmount)
	switch {
	case err != nil:
		return Request{}, err
	case limits != nil:
		return Request{}, limits
	}
	return r, nil
}

// Parse decodes and validates a request body. It tells apart what an
// operator may change after a transfer was accepted, the limits (the
// amount cap maxAmount and the list of accepted currencies, the active
// ISO 4217 codes), from everything else, so that a request that breaks
// only a limit can still be recognised as the replay of one accepted
// under the earlier limits:
//
//   - err is ErrBodyTooLarge, or a *ValidationError listing every invalid
//     field, limits included, when anything but a limit is wrong;
//   - otherwise limits is a *ValidationError when the request breaks a
//     limit, and r is the request all the same;
//   - otherwise both are nil and r is valid.
func Parse(body []byte, maxAmount int64) (r Request, limits, err error) {
	if len(body) > MaxBodyBytes {
		return Request{}, nil, ErrBodyTooLarge
	}
	r, verr, readable := parse(body)
	if !readable {
		// No field could be read: nothing to check against the limits.
		return Request{}, nil, verr
	}
	lerr := &ValidationError{}
	if r.Amount > maxAmount {
		lerr.add("amount", "amount_too_large", fmt.Sprintf("amount must not exceed %d minor units", maxAmount))
	}
	if r.Currency != "" && !ValidCurrency(r.Currency) {
		lerr.add("currency", "invalid_currency", "currency must be an ISO 4217 code in upper case, such as EUR")
	}
	switch {
	case verr != nil:
		verr.Fields = append(verr.Fields, lerr.Fields...)
		return Request{}, nil, verr
	case len(lerr.Fields) > 0:
		return r, lerr, nil
	}
	return r, nil, nil
}

// parse checks everything but the limits. It returns the fields it could
// read along with the problems (nil when there are none); readable is
// false when the body could not be read into fields at all.
func parse(body []byte) (r Request, verr *ValidationError, readable bool) {
	verr = &ValidationError{}
	if !utf8.Valid(body) {
		// Decoding would replace the bad bytes with U+FFFD, and two
		// different bodies would share one canonical form.
		verr.add("", "malformed_json", "the body is not valid UTF-8")
		return Request{}, verr, false
	}
	w, ok := readWire(body)
	if !ok {
		// Something is wrong with the body: the decoder says what.
		if !checkFieldNames(verr, body) {
			return Request{}, verr, false
		}
		if err := json.Unmarshal(body, &w); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) && typ.Field != "" {
				verr.add(typ.Field, "invalid_type", fmt.Sprintf("%s must be a %s", typ.Field, expectedType(typ.Field)))
			} else {
				verr.add("", "malformed_json", jsonProblem(err, ""))
			}
			return Request{}, verr, false
		}
	}

	r.SourceAccountID = accountID(verr, "sourceAccountId", w.SourceAccountID)
	r.DestinationAccountID = accountID(verr, "destinationAccountId", w.DestinationAccountID)
	if r.SourceAccountID != "" && r.SourceAccountID == r.DestinationAccountID {
		verr.add("destinationAccountId", "same_account", "destination must differ from the source account")
	}
	sent := ""
	if w.Currency != nil {
		sent = *w.Currency
	}
	r.Amount = amount(verr, w.Amount, sent)
	switch {
	case w.Currency == nil:
		verr.add("currency", "required", "currency is required")
	case !currencyShape(*w.Currency):
		verr.add("currency", "invalid_currency", "currency must be an ISO 4217 code in upper case, such as EUR")
	default:
		r.Currency = *w.Currency
	}
	if w.Reference != nil {
		r.Reference = *w.Reference
		if !validReference(r.Reference) {
			verr.add("reference", "invalid_reference", fmt.Sprintf("reference must be at most %d characters of printable text", MaxReferenceLength))
		}
	}
	if len(verr.Fields) > 0 {
		return r, verr, true
	}
	return r, nil, true
}

// readWire reads a well-formed request in one pass over body: valid
// UTF-8 holding one valid JSON object whose names are known, spelled
// exactly and unescaped, each once, and whose string fields hold strings
// or null. It reads them as json.Unmarshal would, and reports false for
// anything else, which checkFieldNames and json.Unmarshal then diagnose.
func readWire(body []byte) (w wire, ok bool) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return wire{}, false
	}
	// body is one valid JSON value: from here on, only its shape is read.
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return wire{}, false
	}
	var seen [len(wireFields)]bool
	for i = skipSpace(body, i+1); body[i] != '}'; {
		end := stringEnd(body, i)
		name := body[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return wire{}, false
		}
		f := slices.Index(wireFields[:], string(name))
		if f < 0 || seen[f] {
			return wire{}, false
		}
		seen[f] = true
		start := skipSpace(body, skipSpace(body, end)+1) // past the colon
		i = valueEnd(body, start)
		value := body[start:i]
		if f == fieldAmount {
			w.Amount = value
		} else if !readString(value, w.strings(f)) {
			return wire{}, false
		}
		if i = skipSpace(body, i); body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return w, true
}

// wireFields are the names a request may carry, in the order of wire's
// fields.
var wireFields = [...]string{"sourceAccountId", "destinationAccountId", "amount", "currency", "reference"}

const fieldAmount = 2

// strings is the field of w named wireFields[f], for a string field.
func (w *wire) strings(f int) **string {
	return [...]**string{&w.SourceAccountID, &w.DestinationAccountID, nil, &w.Currency, &w.Reference}[f]
}

// readString reads value, a valid JSON value, into *dst if it is a string
// (null leaves *dst nil); it reports false for any other type.
func readString(value []byte, dst **string) bool {
	switch {
	case string(value) == "null":
		return true
	case value[0] != '"':
		return false
	case bytes.IndexByte(value, '\\') < 0:
		s := string(value[1 : len(value)-1])
		*dst = &s
		return true
	}
	var s string
	if json.Unmarshal(value, &s) != nil {
		return false
	}
	*dst = &s
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd is the index just past the valid JSON value that starts at
// b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !strings.ContainsRune(" \t\n\r,}]", rune(b[i])) {
		i++
	}
	return i
}

// checkFieldNames reads the body's top-level names and refuses anything
// but one JSON object whose names are known, spelled exactly, each once.
// (encoding/json alone matches names case-insensitively and lets a
// repeated name's last value win, so two readers of one body could see
// two different transfers.)
func checkFieldNames(verr *ValidationError, body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		verr.add("", "malformed_json", jsonProblem(err, "the body must be a JSON object"))
		return false
	}
	// seen counts each name's members; each wrong name is listed once,
	// and at most MaxNameErrors of them.
	seen := map[string]int{}
	listed, unlisted := 0, 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			verr.add("", "malformed_json", jsonProblem(err, ""))
			return false
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			verr.add("", "malformed_json", jsonProblem(err, ""))
			return false
		}
		seen[name]++
		known := slices.Contains(wireFields[:], name)
		switch {
		case known && seen[name] != 2, !known && seen[name] != 1:
			// Right, or already listed.
		case listed == MaxNameErrors:
			unlisted++
		case !known:
			listed++
			verr.add(name, "unknown_field", fmt.Sprintf("%q is not a field of a transfer request (names are case-sensitive)", name))
		default:
			listed++
			verr.add(name, "duplicate_field", fmt.Sprintf("%q appears more than once", name))
		}
	}
	if unlisted > 0 {
		verr.add("", "too_many_errors", fmt.Sprintf("%d more unknown or repeated names are not listed", unlisted))
	}
	if _, err := dec.Token(); err != nil {
		verr.add("", "malformed_json", jsonProblem(err, ""))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		verr.add("", "malformed_json", "the body must hold exactly one JSON object")
		return false
	}
	return listed == 0
}

func jsonProblem(err error, fallback string) string {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("the body is not valid JSON (at byte %d)", syn.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		if fallback != "" && errors.Is(err, io.EOF) {
			return "the body is empty; a JSON object is required"
		}
		return "the body ends before its JSON object does"
	case err == nil && fallback != "":
		return fallback
	}
	return "the body is not valid JSON"
}

func expectedType(field string) string {
	if field == "amount" {
		return "whole number"
	}
	return "string"
}

func accountID(verr *ValidationError, field string, v *string) string {
	switch {
	case v == nil:
		verr.add(field, "required", field+" is required")
	case len(*v) == 0 || len(*v) > MaxAccountIDLength || !accountIDShape(*v):
		verr.add(field, "invalid_account_id", fmt.Sprintf("%s must be 1-%d characters of letters, digits, '_', '.', ':' or '-'", field, MaxAccountIDLength))
	default:
		return *v
	}
	return ""
}

// currencyShape reports whether s looks like an ISO 4217 code: three
// upper-case ASCII letters. Whether it is an accepted one is a limit
// (CheckLimits).
func currencyShape(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range len(s) {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// amount reads the amount; currency is the code sent, for the example of
// the error's detail.
func amount(verr *ValidationError, raw json.RawMessage, currency string) int64 {
	if len(raw) == 0 || string(raw) == "null" {
		verr.add("amount", "required", "amount is required")
		return 0
	}
	s := string(raw)
	if !wholeNumberShape(s) {
		verr.add("amount", "invalid_amount", "amount must be a positive whole number of the currency's minor units: "+AmountExample(currency))
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		verr.add("amount", "amount_too_large", fmt.Sprintf("amount must not exceed %d minor units", int64(math.MaxInt64)))
		return 0
	}
	return n
}

// validReference: at most MaxReferenceLength printable characters, none of
// them U+FFFD. U+FFFD is what text damaged on the way turns into: API
// Gateway hands the function a non-binary body with each invalid UTF-8
// byte replaced by it, and decoding JSON turns a lone UTF-16 surrogate
// escape into it. Refusing it keeps two bodies that differ only in damaged
// bytes from sharing one canonical form, and one key's transfer.
func validReference(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxReferenceLength {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}
