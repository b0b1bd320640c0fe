package asl

import (
	"testing"
)

// choiceInput is the input of the Choice operator tests.
const choiceInput = `{
  "s": "transfer-42", "s2": "transfer-42", "low": "a", "star": "a*b", "slash": "a\\b",
  "n": 10, "n2": 10.0, "small": 2.5, "neg": -1,
  "yes": true, "no": false, "nil": null,
  "ts": "2026-01-02T03:04:05Z", "ts2": "2026-01-02T04:04:05+01:00", "later": "2026-06-01T00:00:00.123Z",
  "list": [1], "obj": {"a": 1}
}`

// choiceDef builds a machine whose Choice state goes to Yes when rule
// matches and to No otherwise.
func choiceDef(rule string) string {
	return `{"StartAt":"C","States":{
	  "C":{"Type":"Choice","Choices":[` + rule[:len(rule)-1] + `,"Next":"Yes"}],"Default":"No"},
	  "Yes":{"Type":"Pass","Result":"yes","End":true},
	  "No":{"Type":"Pass","Result":"no","End":true}}}`
}

func TestChoiceOperators(t *testing.T) {
	tests := []struct {
		name  string
		rule  string
		match bool
	}{
		{"StringEquals", `{"Variable":"$.s","StringEquals":"transfer-42"}`, true},
		{"StringEquals differs", `{"Variable":"$.s","StringEquals":"transfer-43"}`, false},
		{"StringEquals on number", `{"Variable":"$.n","StringEquals":"10"}`, false},
		{"StringLessThan", `{"Variable":"$.low","StringLessThan":"b"}`, true},
		{"StringGreaterThan", `{"Variable":"$.low","StringGreaterThan":"b"}`, false},
		{"StringLessThanEquals", `{"Variable":"$.low","StringLessThanEquals":"a"}`, true},
		{"StringGreaterThanEquals", `{"Variable":"$.low","StringGreaterThanEquals":"a"}`, true},
		{"StringEqualsPath", `{"Variable":"$.s","StringEqualsPath":"$.s2"}`, true},
		{"StringLessThanPath", `{"Variable":"$.low","StringLessThanPath":"$.s"}`, true},
		{"StringGreaterThanPath", `{"Variable":"$.low","StringGreaterThanPath":"$.s"}`, false},
		{"StringLessThanEqualsPath", `{"Variable":"$.s","StringLessThanEqualsPath":"$.s2"}`, true},
		{"StringGreaterThanEqualsPath", `{"Variable":"$.s","StringGreaterThanEqualsPath":"$.s2"}`, true},
		{"StringEqualsPath other type", `{"Variable":"$.s","StringEqualsPath":"$.n"}`, false},
		{"StringMatches prefix", `{"Variable":"$.s","StringMatches":"transfer-*"}`, true},
		{"StringMatches suffix", `{"Variable":"$.s","StringMatches":"*-42"}`, true},
		{"StringMatches middle", `{"Variable":"$.s","StringMatches":"t*n*-4*"}`, true},
		{"StringMatches no match", `{"Variable":"$.s","StringMatches":"*-43"}`, false},
		{"StringMatches exact", `{"Variable":"$.s","StringMatches":"transfer-42"}`, true},
		{"StringMatches overlap", `{"Variable":"$.low","StringMatches":"a*a"}`, false},
		{"StringMatches escaped star", `{"Variable":"$.star","StringMatches":"a\\*b"}`, true},
		{"StringMatches escaped star is literal", `{"Variable":"$.s","StringMatches":"transfer\\*"}`, false},
		{"StringMatches escaped backslash", `{"Variable":"$.slash","StringMatches":"a\\\\b"}`, true},
		{"NumericEquals", `{"Variable":"$.n","NumericEquals":10}`, true},
		{"NumericEquals decimal form", `{"Variable":"$.n2","NumericEquals":1e1}`, true},
		{"NumericEquals on string", `{"Variable":"$.s","NumericEquals":10}`, false},
		{"NumericLessThan", `{"Variable":"$.small","NumericLessThan":2.51}`, true},
		{"NumericGreaterThan", `{"Variable":"$.neg","NumericGreaterThan":-1}`, false},
		{"NumericLessThanEquals", `{"Variable":"$.small","NumericLessThanEquals":2.5}`, true},
		{"NumericGreaterThanEquals", `{"Variable":"$.n","NumericGreaterThanEquals":10.5}`, false},
		{"NumericEqualsPath", `{"Variable":"$.n","NumericEqualsPath":"$.n2"}`, true},
		{"NumericLessThanPath", `{"Variable":"$.small","NumericLessThanPath":"$.n"}`, true},
		{"NumericGreaterThanPath", `{"Variable":"$.small","NumericGreaterThanPath":"$.n"}`, false},
		{"NumericLessThanEqualsPath", `{"Variable":"$.n","NumericLessThanEqualsPath":"$.n2"}`, true},
		{"NumericGreaterThanEqualsPath", `{"Variable":"$.neg","NumericGreaterThanEqualsPath":"$.small"}`, false},
		{"BooleanEquals", `{"Variable":"$.yes","BooleanEquals":true}`, true},
		{"BooleanEquals false", `{"Variable":"$.no","BooleanEquals":true}`, false},
		{"BooleanEquals on string", `{"Variable":"$.s","BooleanEquals":true}`, false},
		{"BooleanEqualsPath", `{"Variable":"$.yes","BooleanEqualsPath":"$.no"}`, false},
		{"TimestampEquals with offsets", `{"Variable":"$.ts","TimestampEquals":"2026-01-02T04:04:05+01:00"}`, true},
		{"TimestampLessThan", `{"Variable":"$.ts","TimestampLessThan":"2026-01-02T03:04:06Z"}`, true},
		{"TimestampGreaterThan", `{"Variable":"$.later","TimestampGreaterThan":"2026-06-01T00:00:00.122Z"}`, true},
		{"TimestampLessThanEquals", `{"Variable":"$.ts","TimestampLessThanEquals":"2026-01-02T03:04:05Z"}`, true},
		{"TimestampGreaterThanEquals", `{"Variable":"$.ts","TimestampGreaterThanEquals":"2026-01-02T03:04:06Z"}`, false},
		{"TimestampEquals on non-timestamp", `{"Variable":"$.s","TimestampEquals":"2026-01-02T03:04:05Z"}`, false},
		{"TimestampEqualsPath", `{"Variable":"$.ts","TimestampEqualsPath":"$.ts2"}`, true},
		{"TimestampLessThanPath", `{"Variable":"$.ts","TimestampLessThanPath":"$.later"}`, true},
		{"TimestampGreaterThanPath", `{"Variable":"$.ts","TimestampGreaterThanPath":"$.later"}`, false},
		{"TimestampLessThanEqualsPath", `{"Variable":"$.later","TimestampLessThanEqualsPath":"$.ts"}`, false},
		{"TimestampGreaterThanEqualsPath", `{"Variable":"$.later","TimestampGreaterThanEqualsPath":"$.ts"}`, true},
		{"IsNull", `{"Variable":"$.nil","IsNull":true}`, true},
		{"IsNull false on value", `{"Variable":"$.n","IsNull":true}`, false},
		{"IsNull false expected", `{"Variable":"$.n","IsNull":false}`, true},
		{"IsPresent", `{"Variable":"$.nil","IsPresent":true}`, true},
		{"IsPresent missing", `{"Variable":"$.missing","IsPresent":true}`, false},
		{"IsPresent false on missing", `{"Variable":"$.missing","IsPresent":false}`, true},
		{"IsNumeric", `{"Variable":"$.small","IsNumeric":true}`, true},
		{"IsNumeric on string", `{"Variable":"$.s","IsNumeric":true}`, false},
		{"IsString", `{"Variable":"$.s","IsString":true}`, true},
		{"IsString on null", `{"Variable":"$.nil","IsString":true}`, false},
		{"IsBoolean", `{"Variable":"$.no","IsBoolean":true}`, true},
		{"IsBoolean on object", `{"Variable":"$.obj","IsBoolean":false}`, true},
		{"IsTimestamp", `{"Variable":"$.later","IsTimestamp":true}`, true},
		{"IsTimestamp on plain string", `{"Variable":"$.s","IsTimestamp":true}`, false},
		{"And", `{"And":[{"Variable":"$.n","NumericEquals":10},{"Variable":"$.yes","BooleanEquals":true}]}`, true},
		{"And one false", `{"And":[{"Variable":"$.n","NumericEquals":10},{"Variable":"$.no","BooleanEquals":true}]}`, false},
		{"Or", `{"Or":[{"Variable":"$.n","NumericEquals":11},{"Variable":"$.yes","BooleanEquals":true}]}`, true},
		{"Or none", `{"Or":[{"Variable":"$.n","NumericEquals":11},{"Variable":"$.no","BooleanEquals":true}]}`, false},
		{"Not", `{"Not":{"Variable":"$.n","NumericEquals":11}}`, true},
		{"nested", `{"And":[{"Not":{"Variable":"$.missing","IsPresent":true}},{"Or":[{"Variable":"$.s","StringMatches":"x*"},{"Variable":"$.list[0]","NumericEquals":1}]}]}`, true},
		{"Or short-circuits before a missing variable", `{"Or":[{"Variable":"$.yes","BooleanEquals":true},{"Variable":"$.missing","NumericEquals":1}]}`, true},
		{"context variable", `{"Variable":"$$.Execution.Name","StringEquals":"exec-1"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runDef(t, choiceDef(tc.rule), nil, choiceInput)
			want := `"no"`
			if tc.match {
				want = `"yes"`
			}
			wantSucceeded(t, r, want)
		})
	}
}

func TestChoiceRuntimeErrors(t *testing.T) {
	tests := []struct {
		name  string
		def   string
		error string
		cause string
	}{
		{"missing variable", choiceDef(`{"Variable":"$.missing","StringEquals":"x"}`), ErrRuntime,
			"Invalid path '$.missing': The choice state's condition path references an invalid value."},
		{"missing variable in type test", choiceDef(`{"Variable":"$.missing","IsNull":true}`), ErrRuntime, "Invalid path '$.missing'"},
		{"missing comparison path", choiceDef(`{"Variable":"$.n","NumericEqualsPath":"$.missing"}`), ErrRuntime, "Invalid path '$.missing'"},
		{"no match without default", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericEquals":1,"Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			ErrNoChoiceMatched, "An error occurred while executing the state 'C'. No Choice rule matched"},
		{"input path missing", `{"StartAt":"C","States":{"C":{"Type":"Choice","InputPath":"$.x","Choices":[{"Variable":"$.n","NumericEquals":1,"Next":"S"}],"Default":"S"},"S":{"Type":"Succeed"}}}`,
			ErrRuntime, "for InputPath"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantFailed(t, runDef(t, tc.def, nil, choiceInput), tc.error, tc.cause)
		})
	}
}

func TestChoicePathsAndOrder(t *testing.T) {
	def := `{"StartAt":"C","States":{
	  "C":{"Type":"Choice","InputPath":"$.t","OutputPath":"$.amount","Choices":[
	    {"Variable":"$.amount","NumericGreaterThan":100,"Next":"Big"},
	    {"Variable":"$.amount","NumericGreaterThan":10,"Next":"Medium"},
	    {"Variable":"$.amount","NumericGreaterThan":0,"Next":"Small"}],"Default":"Zero"},
	  "Big":{"Type":"Pass","Result":"big","ResultPath":"$","End":true},
	  "Medium":{"Type":"Pass","Parameters":{"size":"medium","amount.$":"$"},"End":true},
	  "Small":{"Type":"Pass","Result":"small","End":true},
	  "Zero":{"Type":"Pass","Result":"zero","End":true}}}`
	tests := []struct{ input, want string }{
		{`{"t":{"amount":500}}`, `"big"`},
		{`{"t":{"amount":50}}`, `{"size":"medium","amount":50}`},
		{`{"t":{"amount":5}}`, `"small"`},
		{`{"t":{"amount":0}}`, `"zero"`},
	}
	for _, tc := range tests {
		t.Run(tc.input, func(t *testing.T) {
			wantSucceeded(t, runDef(t, def, nil, tc.input), tc.want)
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"*a*", "bab", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "acb", false},
		{"ab*ba", "aba", false},
		{"**", "x", true},
		{"", "", true},
		{"", "x", false},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"|"+tc.s, func(t *testing.T) {
			if got := globMatch(compilePattern(tc.pattern), tc.s); got != tc.want {
				t.Fatalf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
			}
		})
	}
}
