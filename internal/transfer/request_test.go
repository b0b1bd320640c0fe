package transfer

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const maxAmount = 100000000

func TestParseRequestValid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Request
	}{
		{"minimal", `{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR"}`,
			Request{SourceAccountID: "a", DestinationAccountID: "b", Amount: 1, Currency: "EUR"}},
		{"with reference", `{"sourceAccountId":"demo-alice","destinationAccountId":"demo-bob","amount":1050,"currency":"USD","reference":"rent – März"}`,
			Request{SourceAccountID: "demo-alice", DestinationAccountID: "demo-bob", Amount: 1050, Currency: "USD", Reference: "rent – März"}},
		{"amount at the cap", `{"sourceAccountId":"a","destinationAccountId":"b","amount":100000000,"currency":"JPY"}`,
			Request{SourceAccountID: "a", DestinationAccountID: "b", Amount: maxAmount, Currency: "JPY"}},
		{"fields in any order and whitespace", " {\"currency\":\"GBP\",\n\"amount\": 7, \"destinationAccountId\":\"x:1\",\"sourceAccountId\":\"y.2\"}\n",
			Request{SourceAccountID: "y.2", DestinationAccountID: "x:1", Amount: 7, Currency: "GBP"}},
		{"escaped reference", `{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","reference":"\ud83d\ude00 \u00e9\\ud800"}`,
			Request{SourceAccountID: "a", DestinationAccountID: "b", Amount: 1, Currency: "EUR", Reference: "\U0001F600 \u00e9\\ud800"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRequest([]byte(tt.body), maxAmount)
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseRequestInvalid(t *testing.T) {
	valid := `"sourceAccountId":"a","destinationAccountId":"b","currency":"EUR"`
	tests := []struct {
		name      string
		body      string
		wantField string
		wantCode  string
	}{
		{"empty body", ``, "", "malformed_json"},
		{"not json", `amount=5`, "", "malformed_json"},
		{"array", `[1,2]`, "", "malformed_json"},
		{"trailing data", `{` + valid + `,"amount":5} {}`, "", "malformed_json"},
		{"unknown field", `{` + valid + `,"amount":5,"fee":1}`, "fee", "unknown_field"},
		{"missing amount", `{` + valid + `}`, "amount", "required"},
		{"null amount", `{` + valid + `,"amount":null}`, "amount", "required"},
		{"zero amount", `{` + valid + `,"amount":0}`, "amount", "invalid_amount"},
		{"negative amount", `{` + valid + `,"amount":-5}`, "amount", "invalid_amount"},
		{"fractional amount", `{` + valid + `,"amount":10.5}`, "amount", "invalid_amount"},
		{"integral float amount", `{` + valid + `,"amount":10.0}`, "amount", "invalid_amount"},
		{"exponent amount", `{` + valid + `,"amount":1e3}`, "amount", "invalid_amount"},
		{"string amount", `{` + valid + `,"amount":"10"}`, "amount", "invalid_amount"},
		{"amount over cap", `{` + valid + `,"amount":100000001}`, "amount", "amount_too_large"},
		{"amount over int64", `{` + valid + `,"amount":99999999999999999999}`, "amount", "amount_too_large"},
		{"lower-case currency", `{"sourceAccountId":"a","destinationAccountId":"b","currency":"eur","amount":5}`, "currency", "invalid_currency"},
		{"unknown currency", `{"sourceAccountId":"a","destinationAccountId":"b","currency":"ABC","amount":5}`, "currency", "invalid_currency"},
		{"missing currency", `{"sourceAccountId":"a","destinationAccountId":"b","amount":5}`, "currency", "required"},
		{"same account", `{"sourceAccountId":"a","destinationAccountId":"a","currency":"EUR","amount":5}`, "destinationAccountId", "same_account"},
		{"missing source", `{"destinationAccountId":"a","currency":"EUR","amount":5}`, "sourceAccountId", "required"},
		{"empty destination", `{"sourceAccountId":"a","destinationAccountId":"","currency":"EUR","amount":5}`, "destinationAccountId", "invalid_account_id"},
		{"account with space", `{"sourceAccountId":"a b","destinationAccountId":"c","currency":"EUR","amount":5}`, "sourceAccountId", "invalid_account_id"},
		{"account too long", `{"sourceAccountId":"` + strings.Repeat("a", 65) + `","destinationAccountId":"c","currency":"EUR","amount":5}`, "sourceAccountId", "invalid_account_id"},
		{"account of wrong type", `{"sourceAccountId":5,"destinationAccountId":"c","currency":"EUR","amount":5}`, "sourceAccountId", "invalid_type"},
		{"name in another case", `{` + valid + `,"amount":5,"Amount":7}`, "Amount", "unknown_field"},
		{"repeated name", `{` + valid + `,"amount":5,"currency":"USD"}`, "currency", "duplicate_field"},
		{"truncated", `{` + valid + `,"amount":5`, "", "malformed_json"},
		{"syntax error", `{` + valid + `,"amount":5,}`, "", "malformed_json"},
		{"reference too long", `{` + valid + `,"amount":5,"reference":"` + strings.Repeat("é", 141) + `"}`, "reference", "invalid_reference"},
		{"reference with control character", `{` + valid + `,"amount":5,"reference":"a\u0007b"}`, "reference", "invalid_reference"},
		{"reference with a lone high surrogate", `{` + valid + `,"amount":5,"reference":"a\ud800b"}`, "reference", "invalid_reference"},
		{"reference with a lone low surrogate", `{` + valid + `,"amount":5,"reference":"\ufffd\udc00"}`, "reference", "invalid_reference"},
		{"reference with swapped surrogates", `{` + valid + `,"amount":5,"reference":"\ude00\ud83d"}`, "reference", "invalid_reference"},
		{"reference with U+FFFD", `{` + valid + `,"amount":5,"reference":"rent �"}`, "reference", "invalid_reference"},
		{"reference with an escaped U+FFFD", `{` + valid + `,"amount":5,"reference":"rent \ufffd"}`, "reference", "invalid_reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verr := refusal(t, tt.body)
			for _, f := range verr.Fields {
				if f.Field == tt.wantField && f.Code == tt.wantCode {
					if f.Detail == "" {
						t.Errorf("field error %s/%s has no detail", f.Field, f.Code)
					}
					return
				}
			}
			t.Fatalf("fields = %+v, want %s/%s among them", verr.Fields, tt.wantField, tt.wantCode)
		})
	}
}

func TestParseRequestReportsEveryField(t *testing.T) {
	_, err := ParseRequest([]byte(`{"sourceAccountId":"","destinationAccountId":"b","amount":0,"currency":"XYZ"}`), maxAmount)
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Fields) != 3 {
		t.Fatalf("err = %v, want 3 field errors", err)
	}
}

func TestParseRequestTooLarge(t *testing.T) {
	body := `{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"EUR","reference":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	if _, err := ParseRequest([]byte(body), maxAmount); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("err = %v, want ErrBodyTooLarge", err)
	}
}

func TestCanonicalIsStable(t *testing.T) {
	a, err := ParseRequest([]byte(`{"amount":5,"currency":"EUR","sourceAccountId":"a","destinationAccountId":"b"}`), maxAmount)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseRequest([]byte(`{"destinationAccountId":"b",  "sourceAccountId":"a","currency":"EUR","amount":5,"reference":""}`), maxAmount)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"EUR","reference":""}`
	if string(a.Canonical()) != want || string(b.Canonical()) != want {
		t.Fatalf("canonical forms %s and %s, want both %s", a.Canonical(), b.Canonical(), want)
	}
}

// Parse tells the limits (which an operator may lower after a transfer
// was accepted) apart from everything else.
func TestParseSeparatesLimits(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantErr    []string // field/code of err
		wantLimits []string // field/code of limits
	}{
		{"valid", `{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"EUR"}`, nil, nil},
		{"over the cap", `{"sourceAccountId":"a","destinationAccountId":"b","amount":100000001,"currency":"EUR"}`, nil, []string{"amount/amount_too_large"}},
		{"unknown currency", `{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"XYZ"}`, nil, []string{"currency/invalid_currency"}},
		{"limit and shape together", `{"sourceAccountId":"","destinationAccountId":"b","amount":100000001,"currency":"XYZ"}`,
			[]string{"sourceAccountId/invalid_account_id", "amount/amount_too_large", "currency/invalid_currency"}, nil},
		{"lower-case currency is not a limit", `{"sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"eur"}`, []string{"currency/invalid_currency"}, nil},
		{"beyond int64 is not a limit", `{"sourceAccountId":"a","destinationAccountId":"b","amount":99999999999999999999,"currency":"EUR"}`, []string{"amount/amount_too_large"}, nil},
		{"invalid UTF-8", "{\"sourceAccountId\":\"a\xff\",\"destinationAccountId\":\"b\",\"amount\":5,\"currency\":\"EUR\"}", []string{"/malformed_json"}, nil},
	}
	codes := func(err error) []string {
		var verr *ValidationError
		if !errors.As(err, &verr) {
			return nil
		}
		var out []string
		for _, f := range verr.Fields {
			out = append(out, f.Field+"/"+f.Code)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, limits, err := Parse([]byte(tt.body), maxAmount)
			if got := codes(err); !slices.Equal(got, tt.wantErr) {
				t.Errorf("err = %v (%v), want %v", got, err, tt.wantErr)
			}
			if got := codes(limits); !slices.Equal(got, tt.wantLimits) {
				t.Errorf("limits = %v, want %v", got, tt.wantLimits)
			}
			if err == nil && r.SourceAccountID != "a" {
				t.Errorf("request = %+v, want it read", r)
			}
		})
	}
}

// A refusal lists each unknown or repeated name once, and at most
// MaxNameErrors of them with a count of the rest: a body of thousands of
// wrong names gets an answer of bounded size.
func TestParseListsEachWrongNameOnce(t *testing.T) {
	members := func(n int, name func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("%q:1", name(i))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tooMany := fmt.Sprintf("%d more unknown or repeated names are not listed", 1500-MaxNameErrors)
	tests := []struct {
		name string
		body string
		want []FieldError
	}{
		{"an unknown name given three times", `{"x":1,"amount":1,"x":2,"x":3}`,
			[]FieldError{{"x", "unknown_field", `"x" is not a field of a transfer request (names are case-sensitive)`}}},
		{"a field given three times", `{"amount":1,"amount":2,"amount":3}`,
			[]FieldError{{"amount", "duplicate_field", `"amount" appears more than once`}}},
		{"one unknown name 1,500 times", members(1500, func(int) string { return "x" }),
			[]FieldError{{"x", "unknown_field", `"x" is not a field of a transfer request (names are case-sensitive)`}}},
		{"1,500 unknown names", members(1500, func(i int) string { return fmt.Sprintf("n%d", i) }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verr := refusal(t, tt.body)
			if tt.want != nil {
				if !reflect.DeepEqual(verr.Fields, tt.want) {
					t.Errorf("fields %+v, want %+v", verr.Fields, tt.want)
				}
				return
			}
			if len(verr.Fields) != MaxNameErrors+1 {
				t.Fatalf("%d fields, want %d and a count", len(verr.Fields), MaxNameErrors+1)
			}
			for i, f := range verr.Fields[:MaxNameErrors] {
				if f.Field != fmt.Sprintf("n%d", i) || f.Code != "unknown_field" {
					t.Errorf("field %d: %+v, want n%d unknown_field", i, f, i)
				}
			}
			if last := verr.Fields[MaxNameErrors]; last.Code != "too_many_errors" || last.Detail != tooMany {
				t.Errorf("last field %+v, want too_many_errors %q", last, tooMany)
			}
		})
	}
}

// refusal is the *ValidationError ParseRequest answers body with.
func refusal(t *testing.T, body string) *ValidationError {
	t.Helper()
	_, err := ParseRequest([]byte(body), maxAmount)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	return verr
}

// TestShapesMatchTheirPatterns checks the hand-written shape checks
// against the regular expressions they stand for.
func TestShapesMatchTheirPatterns(t *testing.T) {
	account := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)
	number := regexp.MustCompile(`^[1-9][0-9]*$`)
	inputs := []string{"", "a", "0", "9", "_", "-a", "a-", "a_b.c:d-e", "A9", "a b", "a\n", "\na", "é", "aé", "a/b", "01", "10", "1e3", "1.0", "-1", "+1", " 1", "1 ", "12345678901234567890", "a\x00"}
	for c := range 256 {
		inputs = append(inputs, string(rune(c)), "a"+string([]byte{byte(c)}), "1"+string([]byte{byte(c)}), string([]byte{byte(c)}))
	}
	for _, in := range inputs {
		if got, want := accountIDShape(in), account.MatchString(in); got != want {
			t.Errorf("accountIDShape(%q) = %t, the pattern says %t", in, got, want)
		}
		if got, want := wholeNumberShape(in), number.MatchString(in); got != want {
			t.Errorf("wholeNumberShape(%q) = %t, the pattern says %t", in, got, want)
		}
	}
}
