package asl

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestParsePathAndGet(t *testing.T) {
	doc := `{"a":{"b":[{"c":1},{"c":"two"}]},"a b":true,"it's":"q","Test\\\"Name":"literal","x":null}`
	root, err := decodeValue([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path      string
		want      string // JSON; "" when the path matches nothing
		canonical string
	}{
		{"$", doc, "$"},
		{"$.a.b", `[{"c":1},{"c":"two"}]`, "$['a']['b']"},
		{"$.a.b[1].c", `"two"`, "$['a']['b'][1]['c']"},
		{"$.a.b[0]", `{"c":1}`, "$['a']['b'][0]"},
		{"$['a b']", `true`, "$['a b']"},
		{`$["a b"]`, `true`, "$['a b']"},
		{`$['Test\"Name']`, `"literal"`, `$['Test\"Name']`},
		{"$['a']['b'][1]['c']", `"two"`, "$['a']['b'][1]['c']"},
		{"$.x", `null`, "$['x']"},
		{"$.missing", "", "$['missing']"},
		{"$.a.b[2]", "", "$['a']['b'][2]"},
		{"$.a.b.c", "", "$['a']['b']['c']"},
		{"$.a[0]", "", "$['a'][0]"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			p, err := parsePath(tc.path)
			if err != nil {
				t.Fatalf("parsePath: %v", err)
			}
			if got := p.canonical(); got != tc.canonical {
				t.Errorf("canonical = %s, want %s", got, tc.canonical)
			}
			v, ok := p.get(root)
			if tc.want == "" {
				if ok {
					t.Fatalf("get = %s, want no match", mustEncode(v))
				}
				return
			}
			if !ok {
				t.Fatal("get: no match")
			}
			assertJSON(t, []byte(mustEncode(v)), tc.want)
		})
	}
}

func TestParsePathRejects(t *testing.T) {
	tests := []struct{ path, want string }{
		{"", `must start with "$"`},
		{"a.b", `must start with "$"`},
		{"$.", "empty field name"},
		{"$..a", "recursive descent"},
		{"$.*", "wildcards are not supported"},
		{"$.a[*]", "[*] is not supported"},
		{"$.a[-1]", "[-1] is not supported"},
		{"$.a[0:2]", "[0:2] is not supported"},
		{"$.a[", "unterminated ["},
		{"$.a[]", "empty []"},
		{"$['a'", "expected ] after quoted field name"},
		{"$.a b", `field name "a b" needs bracket notation`},
		{"$%a", `unexpected "%"`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			_, err := parsePath(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPathSetDoesNotModifyInput(t *testing.T) {
	root, _ := decodeValue([]byte(`{"a":{"b":1},"list":[1,2]}`))
	before := mustEncode(root)
	for _, path := range []string{"$.a.c", "$.a.b", "$.list[1]", "$.new.deep.field"} {
		p, err := parsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.set(root, "x"); err != nil {
			t.Fatalf("set %s: %v", path, err)
		}
	}
	if after := mustEncode(root); after != before {
		t.Fatalf("input changed from %s to %s", before, after)
	}
}

func TestInputPathParametersResultSelectorResultPathOutputPath(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{
		"r":    echo,
		"acct": returns(`{"Payload":{"balance":90,"currency":"EUR"},"StatusCode":200}`),
	})
	tests := []struct {
		name   string
		def    string
		input  string
		output string
	}{
		{"defaults pass input through", taskDef(""), `{"a":1}`, `{"a":1}`},
		{"input path selects", taskDef(`"InputPath":"$.transfer"`), `{"transfer":{"id":"t1"},"other":1}`, `{"id":"t1"}`},
		{"input path null gives empty object", taskDef(`"InputPath":null`), `{"a":1}`, `{}`},
		{"input path context", taskDef(`"InputPath":"$$.Execution.Name"`), `{}`, `"exec-1"`},
		{"parameters literal and paths", taskDef(`"Parameters":{"literal":"x","n":1.50,"id.$":"$.t.id","whole.$":"$"}`),
			`{"t":{"id":"t1"}}`, `{"literal":"x","n":1.50,"id":"t1","whole":{"t":{"id":"t1"}}}`},
		{"parameters nested objects and arrays", taskDef(`"Parameters":{"outer":{"inner.$":"$.a","list":[{"x.$":"$.b"},"lit",["nested"]]}}`),
			`{"a":1,"b":2}`, `{"outer":{"inner":1,"list":[{"x":2},"lit",["nested"]]}}`},
		{"parameters after input path", taskDef(`"InputPath":"$.t","Parameters":{"id.$":"$.id"}`), `{"t":{"id":"t1"}}`, `{"id":"t1"}`},
		{"parameters context", taskDef(`"Parameters":{"exec.$":"$$.Execution.Id","state.$":"$$.State.Name","sm.$":"$$.StateMachine.Name","input.$":"$$.Execution.Input.a"}`),
			`{"a":7}`, `{"exec":"arn:aws:states:us-east-1:123456789012:execution:transfer:exec-1","state":"T","sm":"transfer","input":7}`},
		{"parameters key with dots", taskDef(`"Parameters":{"a.b.$":"$.v"}`), `{"v":1}`, `{"a.b":1}`},
		{"result path nested creation", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":"$.result.account","End":true}}}`,
			`{"id":"t1"}`, `{"id":"t1","result":{"account":{"Payload":{"balance":90,"currency":"EUR"},"StatusCode":200}}}`},
		{"result path into existing object", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":"$.a.status","ResultSelector":{"s.$":"$.StatusCode"},"End":true}}}`,
			`{"a":{"keep":true}}`, `{"a":{"keep":true,"status":{"s":200}}}`},
		{"result path replaces field", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":"$.a","ResultSelector":{"s.$":"$.StatusCode"},"End":true}}}`,
			`{"a":"old"}`, `{"a":{"s":200}}`},
		{"result path array element", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":"$.a[1]","ResultSelector":{"s.$":"$.StatusCode"},"End":true}}}`,
			`{"a":[0,1]}`, `{"a":[0,{"s":200}]}`},
		{"result path null keeps input", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":null,"End":true}}}`,
			`{"id":"t1"}`, `{"id":"t1"}`},
		{"result path root replaces input", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":"$","End":true}}}`,
			`{"id":"t1"}`, `{"Payload":{"balance":90,"currency":"EUR"},"StatusCode":200}`},
		{"result selector", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultSelector":{"balance.$":"$.Payload.balance","fixed":"x","code.$":"States.Format('HTTP {}', $.StatusCode)"},"ResultPath":"$.acct","End":true}}}`,
			`{"id":"t1"}`, `{"id":"t1","acct":{"balance":90,"fixed":"x","code":"HTTP 200"}}`},
		{"result selector context", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultSelector":{"n.$":"$$.State.RetryCount"},"End":true}}}`,
			`{}`, `{"n":0}`},
		{"output path", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"acct","ResultPath":"$.acct","OutputPath":"$.acct.Payload","End":true}}}`,
			`{}`, `{"balance":90,"currency":"EUR"}`},
		{"output path null gives empty object", taskDef(`"OutputPath":null`), `{"a":1}`, `{}`},
		{"pass result", passDef(`"Result":{"fixed":{"x.$":"not processed"}},"ResultPath":"$.r"`), `{"a":1}`, `{"a":1,"r":{"fixed":{"x.$":"not processed"}}}`},
		{"pass parameters", passDef(`"Parameters":{"b.$":"$.a"}`), `{"a":1}`, `{"b":1}`},
		{"pass input path and result path", passDef(`"InputPath":"$.a","ResultPath":"$.copy"`), `{"a":{"x":1}}`, `{"a":{"x":1},"copy":{"x":1}}`},
		{"succeed paths", `{"StartAt":"S","States":{"S":{"Type":"Succeed","InputPath":"$.a","OutputPath":"$.b"}}}`, `{"a":{"b":2}}`, `2`},
		{"large numbers keep their text", passDef(`"ResultPath":"$.copy","InputPath":"$.n"`), `{"n":12345678901234567890.10}`, `{"n":12345678901234567890.10,"copy":12345678901234567890.10}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runDef(t, tc.def, inv, tc.input)
			wantSucceeded(t, r, tc.output)
		})
	}
}

func TestLargeNumbersAreExact(t *testing.T) {
	r := runDef(t, passDef(`"InputPath":"$.n"`), nil, `{"n":12345678901234567890.10}`)
	if got := string(r.Output); got != "12345678901234567890.10" {
		t.Fatalf("output = %s, want the number unchanged", got)
	}
}

func TestPathFailures(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo, "str": returns(`"text"`)})
	catchAll := `"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Caught"}],"Next":"Done"`
	withCatch := func(fields string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r",` + fields + `,` + catchAll + `},` +
			`"Caught":{"Type":"Pass","End":true},"Done":{"Type":"Succeed"}}}`
	}
	tests := []struct {
		name      string
		def       string
		input     string
		wantError string
		cause     string
	}{
		{"input path no match", withCatch(`"InputPath":"$.missing"`), `{}`, ErrRuntime, "Invalid path '$.missing' for InputPath: No results for path: $['missing']"},
		{"parameters path no match", withCatch(`"Parameters":{"x.$":"$.missing"}`), `{"a":1}`, ErrRuntime, "The JSONPath '$.missing' specified for the field 'x.$' could not be found in the input '{\"a\":1}'"},
		{"result selector path no match", withCatch(`"ResultSelector":{"x.$":"$.missing"}`), `{}`, ErrRuntime, "could not be found"},
		{"output path no match", withCatch(`"OutputPath":"$.missing"`), `{}`, ErrRuntime, "Invalid path '$.missing' for OutputPath"},
		{"pass parameters no match", passDef(`"Parameters":{"x.$":"$.missing"}`), `{}`, ErrRuntime, "An error occurred while executing the state 'P'."},
		{"succeed output path no match", `{"StartAt":"S","States":{"S":{"Type":"Succeed","OutputPath":"$.x"}}}`, `{}`, ErrRuntime, "for OutputPath"},
		{"result path through a string", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","ResultPath":"$.a.b","End":true}}}`,
			`{"a":"text"}`, ErrResultPathMatchFailure, "$.a is string, not an object"},
		{"result path on a non-object input", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","ResultPath":"$.x","End":true}}}`,
			`"text"`, ErrResultPathMatchFailure, "Unable to apply ResultPath '$.x' to the input '\"text\"': $ is string, not an object"},
		{"result path index out of range", passDef(`"ResultPath":"$.a[3]"`), `{"a":[1]}`, ErrResultPathMatchFailure, "index 3 is out of range"},
		{"invalid execution input", passDef(`"ResultPath":"$.x"`), `{"a":`, ErrRuntime, "the execution input is not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runDef(t, tc.def, inv, tc.input)
			wantFailed(t, r, tc.wantError, tc.cause)
		})
	}
}

func TestResultPathMatchFailureIsCatchable(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": returns(`1`)})
	def := `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"r","ResultPath":"$.a.b","Catch":[{"ErrorEquals":["States.ResultPathMatchFailure"],"ResultPath":"$.err","Next":"C"}],"End":true},
	  "C":{"Type":"Pass","End":true}}}`
	r := runDef(t, def, inv, `{"a":"text"}`)
	wantSucceeded(t, r, `{"a":"text","err":{"Error":"States.ResultPathMatchFailure","Cause":"An error occurred while executing the state 'T'. Unable to apply ResultPath '$.a.b' to the input '{\"a\":\"text\"}': $.a is string, not an object"}}`)
}

func TestContextObject(t *testing.T) {
	def := passDef(`"Parameters":{
	  "id.$":"$$.Execution.Id","name.$":"$$.Execution.Name","start.$":"$$.Execution.StartTime",
	  "input.$":"$$.Execution.Input","role.$":"$$.Execution.RoleArn",
	  "state.$":"$$.State.Name","entered.$":"$$.State.EnteredTime","stateKeys.$":"States.JsonToString($$.State)",
	  "executionKeys.$":"States.JsonToString($$.Execution)",
	  "smId.$":"$$.StateMachine.Id","smName.$":"$$.StateMachine.Name"}`)
	r := runDef(t, def, nil, `{"amount":5}`)
	if r.Status != StatusSucceeded {
		t.Fatalf("status %s: %s %s", r.Status, r.Error, r.Cause)
	}
	out, _ := decodeValue(r.Output)
	obj := out.(map[string]any)
	entered, _ := obj["entered"].(string)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(entered) {
		t.Fatalf("EnteredTime = %q, want ISO 8601 UTC with milliseconds", entered)
	}
	delete(obj, "entered")
	// A Pass state's $$.State is only {Name, EnteredTime} on AWS.
	stateKeys, _ := obj["stateKeys"].(string)
	if st, err := decodeValue([]byte(stateKeys)); err != nil || len(st.(map[string]any)) != 2 {
		t.Fatalf("$$.State of a Pass state = %s, want only Name and EnteredTime", stateKeys)
	}
	delete(obj, "stateKeys")
	// A first run's $$.Execution, as AWS records it: Id, Input, Name,
	// RoleArn, StartTime and RedriveCount 0.
	execKeys, _ := obj["executionKeys"].(string)
	if ex, err := decodeValue([]byte(execKeys)); err != nil || len(ex.(map[string]any)) != 6 || fmt.Sprint(ex.(map[string]any)["RedriveCount"]) != "0" {
		t.Fatalf("$$.Execution of a first run = %s, want Id, Input, Name, RoleArn, StartTime and RedriveCount 0", execKeys)
	}
	delete(obj, "executionKeys")
	assertJSON(t, []byte(mustEncode(obj)), `{
	  "id":"arn:aws:states:us-east-1:123456789012:execution:transfer:exec-1","name":"exec-1",
	  "start":"2026-01-02T03:04:05.678Z","input":{"amount":5},"role":"arn:aws:iam::123456789012:role/transfer",
	  "state":"P",
	  "smId":"arn:aws:states:us-east-1:123456789012:stateMachine:transfer","smName":"transfer"}`)
}
