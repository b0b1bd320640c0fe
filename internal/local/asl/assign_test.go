package asl

import (
	"strings"
	"testing"
)

// Variables follow the developer guide's "Passing data between states with
// variables" (https://docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html):
// the states that take Assign (Pass, Task, Map, Parallel, Choice, Wait),
// its example Assign {"productName": "product1", "count": 42,
// "available": true} read back as $productName, assignments that read the
// values of the state's entry, Map and Parallel scopes that read outer
// variables but may not assign them, the catcher's Assign and the size
// limits.

func TestAssign(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo, "boom": fails(named("Boom"))})
	tests := []struct {
		name  string
		def   string
		input string
		want  string
	}{
		{"the guide's example, read by a later state", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"productName":"product1","count":42,"available":true},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"name.$":"$productName","count.$":"$count","available.$":"$available"},"End":true}}}`,
			`{}`, `{"name":"product1","count":42,"available":true}`},
		{"Pass: $ is the result of Parameters, before ResultPath", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Parameters":{"a.$":"$.x"},"ResultPath":"$.r","Assign":{"v.$":"$.a"},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"v.$":"$v","in.$":"$"},"End":true}}}`,
			`{"x":5}`, `{"v":5,"in":{"x":5,"r":{"a":5}}}`},
		{"Pass: $ is the Result", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Result":{"r":"fixed"},"ResultPath":null,"Assign":{"v.$":"$.r"},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"v.$":"$v"},"End":true}}}`,
			`{}`, `{"v":"fixed"}`},
		{"Task: $ is the result after ResultSelector", `{"StartAt":"T","States":{
			"T":{"Type":"Task","Resource":"r","Parameters":{"p.$":"$.x"},"ResultSelector":{"sel.$":"$.p"},"ResultPath":"$.res",
			     "Assign":{"v.$":"$.sel","ctx.$":"$$.State.Name"},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"v.$":"$v","ctx.$":"$ctx"},"End":true}}}`,
			`{"x":"seven"}`, `{"v":"seven","ctx":"T"}`},
		{"an Assign reads the values of the state's entry: a swap", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"a":1,"b":2},"Next":"B"},
			"B":{"Type":"Pass","Assign":{"a.$":"$b","b.$":"$a"},"Next":"C"},
			"C":{"Type":"Pass","Parameters":{"a.$":"$a","b.$":"$b"},"End":true}}}`,
			`{}`, `{"a":2,"b":1}`},
		{"the assigning state's own fields read the old value", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"x":1},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"x.$":"$x"},"Assign":{"x":2},"Next":"C"},
			"C":{"Type":"Pass","Parameters":{"seen.$":"$.x","now.$":"$x"},"End":true}}}`,
			`{}`, `{"seen":1,"now":2}`},
		{"nested objects and intrinsics", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"who":"World","obj":{"n.$":"$.n","lit":[1,2]}},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"greeting.$":"States.Format('Hello, {}', $who)","n.$":"$obj.n","lit.$":"$obj.lit[1]"},"End":true}}}`,
			`{"n":3}`, `{"greeting":"Hello, World","n":3,"lit":2}`},
		{"Choice: the matching rule's Assign", choiceAssignDef, `{"amount":50}`, `{"route":"big"}`},
		{"Choice: the state's Assign with the Default", choiceAssignDef, `{"amount":5}`, `{"route":"small"}`},
		{"Wait: $ is the effective input", `{"StartAt":"W","States":{
			"W":{"Type":"Wait","Seconds":0,"InputPath":"$.w","Assign":{"s.$":"$.s"},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"s.$":"$s"},"End":true}}}`,
			`{"w":{"s":"x"}}`, `{"s":"x"}`},
		{"Catch: the catcher's Assign reads the error output, the state's does not apply", `{"StartAt":"T","States":{
			"T":{"Type":"Task","Resource":"boom","Assign":{"err":"none","ok":true},
			     "Catch":[{"ErrorEquals":["Boom"],"Assign":{"err.$":"$.Error","cause.$":"$.Cause"},"ResultPath":null,"Next":"B"}],"End":true},
			"B":{"Type":"Choice","Choices":[{"Variable":"$ok","IsPresent":true,"Next":"Bad"}],"Default":"C"},
			"Bad":{"Type":"Fail","Error":"StateAssignApplied"},
			"C":{"Type":"Pass","Parameters":{"err.$":"$err","cause.$":"$cause","in.$":"$"},"End":true}}}`,
			`{"t":1}`, `{"err":"Boom","cause":"Boom happened","in":{"t":1}}`},
		{"Map: iterations read outer variables and keep their own", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"factor":3},"Next":"M"},
			"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"P1","States":{
			     "P1":{"Type":"Pass","Assign":{"mine.$":"$"},"Next":"P2"},
			     "P2":{"Type":"Pass","Parameters":{"mine.$":"$mine","factor.$":"$factor","index.$":"$$.State.Name"},"End":true}}},
			     "Assign":{"count.$":"States.ArrayLength($)"},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"results.$":"$","count.$":"$count"},"End":true}}}`,
			`{"items":[1,2,3]}`, `{"results":[{"mine":1,"factor":3,"index":"P2"},{"mine":2,"factor":3,"index":"P2"},{"mine":3,"factor":3,"index":"P2"}],"count":3}`},
		{"Parallel: branches may assign the same name, each in its own scope", `{"StartAt":"Par","States":{
			"Par":{"Type":"Parallel","Branches":[
			  {"StartAt":"A1","States":{"A1":{"Type":"Pass","Assign":{"x":"a"},"Next":"A2"},"A2":{"Type":"Pass","Parameters":{"x.$":"$x"},"End":true}}},
			  {"StartAt":"B1","States":{"B1":{"Type":"Pass","Assign":{"x":"b"},"Next":"B2"},"B2":{"Type":"Pass","Parameters":{"x.$":"$x"},"End":true}}}],
			  "ResultSelector":{"all.$":"$[*].x"},"Assign":{"first.$":"$.all[0]"},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"all.$":"$.all","first.$":"$first"},"End":true}}}`,
			`{}`, `{"all":["a","b"],"first":"a"}`},
		{"InputPath and OutputPath may start at a variable", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"cfg":{"a":{"b":1}}},"Next":"B"},
			"B":{"Type":"Pass","InputPath":"$cfg","OutputPath":"$.a","End":true}}}`,
			`{}`, `{"b":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantSucceeded(t, runDef(t, tc.def, inv, tc.input), tc.want)
		})
	}
}

const choiceAssignDef = `{"StartAt":"A","States":{
	"A":{"Type":"Pass","Assign":{"limit":10},"Next":"C"},
	"C":{"Type":"Choice","Choices":[{"Variable":"$.amount","NumericGreaterThanPath":"$limit","Assign":{"route":"big"},"Next":"Out"}],
	     "Default":"Out","Assign":{"route":"small"}},
	"Out":{"Type":"Pass","Parameters":{"route.$":"$route"},"End":true}}}`

func TestAssignFails(t *testing.T) {
	big := strings.Repeat("x", 150*1024)
	inv := newInvoker(map[string]invokeFunc{"r": echo})
	tests := []struct {
		name      string
		def       string
		input     string
		wantError string
		wantCause string
	}{
		{"a branch's variables end with it", `{"StartAt":"M","States":{
			"M":{"Type":"Map","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Assign":{"tmp.$":"$"},"End":true}}},"Next":"B"},
			"B":{"Type":"Pass","Parameters":{"tmp.$":"$tmp"},"End":true}}}`,
			`[1]`, ErrRuntime, "$tmp"},
		{"a path of the Assign that matches nothing", passDef(`"Assign":{"v.$":"$.missing"}`), `{}`, ErrRuntime, "$.missing"},
		{"one variable over 256 KiB", passDef(`"Assign":{"v.$":"States.Array($.s, $.s)"}`), `{"s":"` + big + `"}`,
			ErrDataLimitExceeded, "the value assigned to the variable 'v' has"},
		{"one Assign over 256 KiB", passDef(`"Assign":{"a.$":"$.s","b.$":"$.s"}`), `{"s":"` + big + `"}`,
			ErrDataLimitExceeded, "the Assign field gives"},
		{"a Task's Assign over the limit is catchable", `{"StartAt":"T","States":{
			"T":{"Type":"Task","Resource":"r","Assign":{"a.$":"$.s","b.$":"$.s"},
			     "Catch":[{"ErrorEquals":["States.DataLimitExceeded"],"ResultPath":null,"Next":"F"}],"End":true},
			"F":{"Type":"Fail","Error":"Caught"}}}`, `{"s":"` + big + `"}`, "Caught", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantFailed(t, runDef(t, tc.def, inv, tc.input), tc.wantError, tc.wantCause)
		})
	}
}

// TestAssignTotalLimit: the variables of an execution hold at most
// 10 MiB; a value that replaces another counts once.
func TestAssignTotalLimit(t *testing.T) {
	root := newVarScope(nil)
	inner := newVarScope(root)
	chunk := strings.Repeat("x", 250*1024)
	for i := 0; i < 40; i++ {
		if err := root.assign(map[string]any{"v" + strings.Repeat("x", i): chunk}); err != nil {
			t.Fatalf("assign %d: %v", i, err)
		}
	}
	if err := root.assign(map[string]any{"v": chunk}); err != nil {
		t.Fatalf("replacing a variable: %v", err)
	}
	err := inner.assign(map[string]any{"w": chunk, "w2": chunk})
	if err == nil || err.Name != ErrDataLimitExceeded {
		t.Fatalf("assign over 10 MiB: %v, want %s", err, ErrDataLimitExceeded)
	}
	if _, ok := inner.lookup("w"); ok {
		t.Fatal("a refused assignment was applied")
	}
}

func TestAssignLoadRejects(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo})
	tests := []struct {
		name string
		def  string
		want string
	}{
		{"a Map iteration assigns an outer variable", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"x":1},"Next":"M"},
			"M":{"Type":"Map","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Assign":{"x":2},"End":true}}},"End":true}}}`,
			`States.M.ItemProcessor.States.P.Assign.x: variable "x" is assigned in an outer scope; a Parallel branch or Map iteration may read it but not assign it`},
		{"a Parallel branch assigns a name a later outer state assigns", `{"StartAt":"Par","States":{
			"Par":{"Type":"Parallel","Branches":[{"StartAt":"P","States":{"P":{"Type":"Pass","Assign":{"y.$":"$"},"End":true}}}],"Next":"Z"},
			"Z":{"Type":"Pass","Assign":{"y":0},"End":true}}}`,
			`States.Par.Branches[0].States.P.Assign.y: variable "y" is assigned in an outer scope`},
		{"the Map state's own Assign is outer", `{"StartAt":"M","States":{
			"M":{"Type":"Map","Assign":{"z":1},"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Assign":{"z":2},"End":true}}},"End":true}}}`,
			`States.M.ItemProcessor.States.P.Assign.z`},
		{"a nested branch's catcher assigns a name of the outermost scope", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"e":1},"Next":"Par"},
			"Par":{"Type":"Parallel","Branches":[{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"T","States":{
			  "T":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["States.ALL"],"Assign":{"e.$":"$.Error"},"Next":"D"}],"End":true},
			  "D":{"Type":"Succeed"}}},"End":true}}}],"End":true}}}`,
			`States.Par.Branches[0].States.M.ItemProcessor.States.T.Catch[0].Assign.e`},
		{"a Choice rule in a branch assigns an outer name", `{"StartAt":"A","States":{
			"A":{"Type":"Pass","Assign":{"r":1},"Next":"Par"},
			"Par":{"Type":"Parallel","Branches":[{"StartAt":"C","States":{
			  "C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Assign":{"r":2},"Next":"D"}],"Default":"D"},
			  "D":{"Type":"Succeed"}}}],"End":true}}}`,
			`States.Par.Branches[0].States.C.Choices[0].Assign.r`},
		{"not a variable name", passDef(`"Assign":{"1x":1}`), `States.P.Assign.1x: "1x" is not a valid variable name`},
		{"a dash in the name", passDef(`"Assign":{"a-b.$":"$"}`), `States.P.Assign.a-b.$: "a-b" is not a valid variable name`},
		{"the reserved $states", passDef(`"Assign":{"states":1}`), `States.P.Assign.states: $states is a reserved variable name`},
		{"not an object", passDef(`"Assign":[1]`), `States.P.Assign`},
		{"a bad path", passDef(`"Assign":{"v.$":"$.a[?"}`), `States.P.Assign.v.$`},
		{"on a Succeed state", `{"StartAt":"S","States":{"S":{"Type":"Succeed","Assign":{"x":1}}}}`,
			`States.S.Assign: field "Assign" is not valid in a Succeed state`},
		{"on a Fail state", `{"StartAt":"F","States":{"F":{"Type":"Fail","Assign":{"x":1}}}}`,
			`States.F.Assign: field "Assign" is not valid in a Fail state`},
		{"in a nested choice rule", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.a","IsPresent":true,"Assign":{"x":1}},"Next":"D"}],"Default":"D"},"D":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].Not.Assign: Assign is only allowed in the top-level rules of Choices`},
		{"ResultPath into a variable", passDef(`"ResultPath":"$x"`), `States.P.ResultPath: must be a reference path into the state input, not a variable ($x)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(testFile, []byte(tc.def), Options{Tasks: inv})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
