package transfer

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The request path reads and writes a few small JSON documents of fixed
// shape on every request: the stored answer of a settled transfer, the
// transfer it answers, the canonical request. encoding/json does it by
// reflection, a good part of the handler's own time. The functions here
// do it directly for the plain form those documents have, and hand
// anything else to encoding/json, so that what they produce is always
// exactly what encoding/json produces (FuzzTransferJSON and
// FuzzDecodeTransfer compare the two).

// JSON is the transfer's JSON, byte for byte as json.Marshal writes it.
func (t Transfer) JSON() []byte {
	if b, ok := t.appendJSON(make([]byte, 0, 320)); ok {
		return b
	}
	b, err := json.Marshal(t)
	if err != nil {
		// A struct of strings, an integer and a boolean always
		// marshals.
		panic("transfer: " + err.Error())
	}
	return b
}

// appendJSON appends t as json.Marshal writes it, and reports false when
// a string needs an escape, which it leaves to json.Marshal.
func (t Transfer) appendJSON(b []byte) ([]byte, bool) {
	ok := true
	str := func(b []byte, name, v string) []byte {
		b = append(b, name...)
		b, ok = appendPlainString(b, v, ok)
		return b
	}
	b = str(b, `{"transferId":`, t.TransferID)
	b = str(b, `,"status":`, t.Status)
	b = str(b, `,"sourceAccountId":`, t.SourceAccountID)
	b = str(b, `,"destinationAccountId":`, t.DestinationAccountID)
	b = strconv.AppendInt(append(b, `,"amount":`...), t.Amount, 10)
	b = str(b, `,"currency":`, t.Currency)
	if t.Reference != "" {
		b = str(b, `,"reference":`, t.Reference)
	}
	b = str(b, `,"createdAt":`, t.CreatedAt)
	if t.SettledAt != "" {
		b = str(b, `,"settledAt":`, t.SettledAt)
	}
	if f := t.Failure; f != nil {
		b = str(b, `,"failure":{"code":`, f.Code)
		if f.Detail != "" {
			b = str(b, `,"detail":`, f.Detail)
		}
		if f.Reversed {
			b = append(b, `,"reversed":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// appendJSON appends r as json.Marshal writes it, and reports false
// when a string needs an escape (see Transfer.appendJSON).
func (r Request) appendJSON(b []byte) ([]byte, bool) {
	ok := true
	b = append(b, `{"sourceAccountId":`...)
	b, ok = appendPlainString(b, r.SourceAccountID, ok)
	b = append(b, `,"destinationAccountId":`...)
	b, ok = appendPlainString(b, r.DestinationAccountID, ok)
	b = strconv.AppendInt(append(b, `,"amount":`...), r.Amount, 10)
	b = append(b, `,"currency":`...)
	b, ok = appendPlainString(b, r.Currency, ok)
	b = append(b, `,"reference":`...)
	b, ok = appendPlainString(b, r.Reference, ok)
	return append(b, '}'), ok
}

// appendPlainString appends s quoted, and reports ok as false if s holds
// anything json.Marshal would escape or replace: a quote, a backslash, a
// control character, <, > or &, U+2028, U+2029, or bytes that are not
// UTF-8. Every other character json.Marshal writes as it is.
func appendPlainString(b []byte, s string, ok bool) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				ok = false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			ok = false
		}
		i += size
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), ok
}

// decodeTransfer reads data into a Transfer as json.Unmarshal does, when
// data is in the plain form the services store: one JSON object whose
// names are the Transfer's (and its failure's) own, spelled exactly, each
// once, with strings without escapes, an integer amount, and no null. It
// reports false for anything else, which json.Unmarshal then reads (or
// refuses).
func decodeTransfer(data string) (t Transfer, ok bool) {
	if !utf8.ValidString(data) {
		return Transfer{}, false
	}
	d := plainDecoder{s: data}
	seen := 0
	ok = d.object(func(name string) bool {
		f := transferField(name)
		if f == 0 || seen&f != 0 {
			return false
		}
		seen |= f
		switch f {
		case fieldTransferID:
			t.TransferID, ok = d.str()
		case fieldStatus:
			t.Status, ok = d.str()
		case fieldSource:
			t.SourceAccountID, ok = d.str()
		case fieldDestination:
			t.DestinationAccountID, ok = d.str()
		case fieldAmountValue:
			t.Amount, ok = d.integer()
		case fieldCurrency:
			t.Currency, ok = d.str()
		case fieldReference:
			t.Reference, ok = d.str()
		case fieldCreatedAt:
			t.CreatedAt, ok = d.str()
		case fieldSettledAt:
			t.SettledAt, ok = d.str()
		case fieldFailure:
			t.Failure, ok = d.failure()
		}
		return ok
	})
	if !ok || !d.end() {
		return Transfer{}, false
	}
	return t, true
}

// decodeRequest reads data into a Request as json.Unmarshal does, when it
// is in the plain form (see decodeTransfer): the canonical form, as
// stored.
func decodeRequest(data string) (r Request, ok bool) {
	if !utf8.ValidString(data) {
		return Request{}, false
	}
	d := plainDecoder{s: data}
	var seen [len(wireFields)]bool
	ok = d.object(func(name string) bool {
		f := -1
		for i, n := range wireFields {
			if n == name {
				f = i
			}
		}
		if f < 0 || seen[f] {
			return false
		}
		seen[f] = true
		switch f {
		case 0:
			r.SourceAccountID, ok = d.str()
		case 1:
			r.DestinationAccountID, ok = d.str()
		case fieldAmount:
			r.Amount, ok = d.integer()
		case 3:
			r.Currency, ok = d.str()
		case 4:
			r.Reference, ok = d.str()
		}
		return ok
	})
	if !ok || !d.end() {
		return Request{}, false
	}
	return r, true
}

// Fields of a stored transfer, as bits.
const (
	fieldTransferID = 1 << iota
	fieldStatus
	fieldSource
	fieldDestination
	fieldAmountValue
	fieldCurrency
	fieldReference
	fieldCreatedAt
	fieldSettledAt
	fieldFailure
)

// transferField is the bit of the field a stored transfer names name,
// or 0.
func transferField(name string) int {
	switch name {
	case "transferId":
		return fieldTransferID
	case "status":
		return fieldStatus
	case "sourceAccountId":
		return fieldSource
	case "destinationAccountId":
		return fieldDestination
	case "amount":
		return fieldAmountValue
	case "currency":
		return fieldCurrency
	case "reference":
		return fieldReference
	case "createdAt":
		return fieldCreatedAt
	case "settledAt":
		return fieldSettledAt
	case "failure":
		return fieldFailure
	}
	return 0
}

// plainDecoder reads the plain form of JSON that decodeTransfer accepts,
// from s at i. Each method reports false on anything outside that form.
type plainDecoder struct {
	s string
	i int
}

func (d *plainDecoder) space() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

// end reports whether only white space is left.
func (d *plainDecoder) end() bool {
	d.space()
	return d.i == len(d.s)
}

// object reads an object, calling member with each name, positioned at
// its value, which member must read.
func (d *plainDecoder) object(member func(name string) bool) bool {
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return false
	}
	d.i++
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return true
	}
	for {
		d.space()
		name, ok := d.str()
		if !ok {
			return false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return false
		}
		d.i++
		d.space()
		if !member(name) {
			return false
		}
		d.space()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string without escapes or control characters.
func (d *plainDecoder) str() (string, bool) {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return d.s[start:j], true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// integer reads a number without fraction or exponent that fits an
// int64.
func (d *plainDecoder) integer() (int64, bool) {
	start := d.i
	if d.i < len(d.s) && d.s[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.s) && '0' <= d.s[d.i] && d.s[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || d.s[digits] == '0' && d.i-digits > 1 {
		return 0, false
	}
	if d.i < len(d.s) {
		if c := d.s[d.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(d.s[start:d.i], 10, 64)
	return n, err == nil
}

// failure reads a failure object.
func (d *plainDecoder) failure() (*Failure, bool) {
	var f Failure
	var code, detail, reversed bool
	ok := d.object(func(name string) bool {
		var ok bool
		switch {
		case name == "code" && !code:
			code = true
			f.Code, ok = d.str()
		case name == "detail" && !detail:
			detail = true
			f.Detail, ok = d.str()
		case name == "reversed" && !reversed:
			reversed = true
			f.Reversed, ok = d.boolean()
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return &f, true
}

func (d *plainDecoder) boolean() (bool, bool) {
	switch {
	case len(d.s)-d.i >= 4 && d.s[d.i:d.i+4] == "true":
		d.i += 4
		return true, true
	case len(d.s)-d.i >= 5 && d.s[d.i:d.i+5] == "false":
		d.i += 5
		return false, true
	}
	return false, false
}
