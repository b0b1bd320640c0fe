package asl

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadRejects(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo})
	tests := []struct {
		name string
		def  string
		want string // the whole message must contain it
	}{
		// Unsupported features.
		{"map without processor", `{"StartAt":"Foo","States":{"Foo":{"Type":"Map","End":true}}}`,
			`test.asl.json: States.Foo.ItemProcessor: is required`},
		{"parallel without branches", `{"StartAt":"Foo","States":{"Foo":{"Type":"Parallel","Branches":[],"End":true}}}`,
			`test.asl.json: States.Foo.Branches: must contain at least one branch`},
		{"wait without duration", `{"StartAt":"Foo","States":{"Foo":{"Type":"Wait","End":true}}}`,
			`test.asl.json: States.Foo: a Wait state needs one of Seconds, SecondsPath, Timestamp and TimestampPath`},
		{"wait with two durations", `{"StartAt":"Foo","States":{"Foo":{"Type":"Wait","Seconds":1,"SecondsPath":"$.s","End":true}}}`,
			`test.asl.json: States.Foo.SecondsPath: Seconds and SecondsPath are mutually exclusive`},
		{"wait bad timestamp", `{"StartAt":"Foo","States":{"Foo":{"Type":"Wait","Timestamp":"tomorrow","End":true}}}`,
			`States.Foo.Timestamp: "tomorrow" is not an ISO 8601 timestamp`},
		{"distributed map: item reader", `{"StartAt":"Foo","States":{"Foo":{"Type":"Map","ItemReader":{},"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			`States.Foo.ItemReader: Map state "Foo": Distributed Map (ItemReader) is not supported by the local runtime`},
		{"distributed map: result writer", `{"StartAt":"Foo","States":{"Foo":{"Type":"Map","ResultWriter":{},"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			`States.Foo.ResultWriter: Map state "Foo": Distributed Map (ResultWriter) is not supported by the local runtime`},
		{"distributed map: processor mode", `{"StartAt":"Foo","States":{"Foo":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			`States.Foo.ItemProcessor.ProcessorConfig.Mode: Map state "Foo": Distributed Map (ProcessorConfig.Mode DISTRIBUTED) is not supported by the local runtime`},
		{"branch next outside the branch", `{"StartAt":"Foo","States":{"Foo":{"Type":"Parallel","Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Foo"}}}],"End":true}}}`,
			`States.Foo.Branches[0].States.A.Next: no state named "Foo"`},
		{"unreachable branch state", `{"StartAt":"Foo","States":{"Foo":{"Type":"Parallel","Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Type":"Pass","End":true}}}],"End":true}}}`,
			`States.Foo.Branches[0].States.B: state is not reachable from StartAt "A"`},
		{"unknown state type", `{"StartAt":"Foo","States":{"Foo":{"Type":"Sleep","End":true}}}`,
			`test.asl.json: States.Foo.Type: unknown state type "Sleep"`},
		{"credentials", taskDef(`"Credentials":{"RoleArn":"x"}`),
			`States.T.Credentials: field "Credentials" is not supported`},
		{"arguments", taskDef(`"Arguments":{}`), `States.T.Arguments: field "Arguments" is not supported`},
		{"unknown field", taskDef(`"Retries":[]`), `test.asl.json: States.T.Retries: unknown field "Retries"`},
		{"field of another state type", passDef(`"Resource":"r"`), `States.P.Resource: field "Resource" is not valid in a Pass state`},
		{"unknown top-level field", `{"StartAt":"P","Foo":1,"States":{"P":{"Type":"Succeed"}}}`, `test.asl.json: Foo: unknown top-level field "Foo"`},
		{"jsonata machine", `{"QueryLanguage":"JSONata","StartAt":"P","States":{"P":{"Type":"Succeed"}}}`,
			`test.asl.json: QueryLanguage: "JSONata" is not supported by the local runtime`},
		{"jsonata state", `{"StartAt":"P","States":{"P":{"Type":"Succeed","QueryLanguage":"JSONata"}}}`,
			`test.asl.json: States.P.QueryLanguage: "JSONata" is not supported by the local runtime`},
		{"unknown query language", `{"QueryLanguage":"XPath","StartAt":"P","States":{"P":{"Type":"Succeed"}}}`,
			`QueryLanguage: unknown query language "XPath"`},
		{"unknown intrinsic", passDef(`"Parameters":{"x.$":"States.Frobnicate($.a)"}`),
			`test.asl.json: States.P.Parameters.x.$: invalid intrinsic function "States.Frobnicate($.a)": unknown intrinsic function "States.Frobnicate"`},
		{"condition in choice rule", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Condition":"{% true %}","Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].Condition: field "Condition" is not supported`},

		// References and transitions.
		{"bad next", `{"StartAt":"P","States":{"P":{"Type":"Pass","Next":"Nope"}}}`, `test.asl.json: States.P.Next: no state named "Nope"`},
		{"bad start", `{"StartAt":"Nope","States":{"P":{"Type":"Succeed"}}}`, `test.asl.json: StartAt: no state named "Nope"`},
		{"missing start", `{"States":{"P":{"Type":"Succeed"}}}`, `test.asl.json: StartAt: is required`},
		{"missing states", `{"StartAt":"P"}`, `States: is required`},
		{"empty states", `{"StartAt":"P","States":{}}`, `States: must contain at least one state`},
		{"bad default", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Next":"S"}],"Default":"Nope"},"S":{"Type":"Succeed"}}}`,
			`States.C.Default: no state named "Nope"`},
		{"bad choice next", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Next":"Nope"}]}}}`,
			`States.C.Choices[0].Next: no state named "Nope"`},
		{"bad catch next", taskDef(`"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Nope"}]`), `States.T.Catch[0].Next: no state named "Nope"`},
		{"catch without next", taskDef(`"Catch":[{"ErrorEquals":["States.ALL"]}]`), `States.T.Catch[0].Next: is required`},
		{"neither next nor end", `{"StartAt":"P","States":{"P":{"Type":"Pass"}}}`, `States.P: a Pass state needs Next or "End": true`},
		{"end false", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":false}}}`, `States.P: a Pass state needs Next or "End": true`},
		{"next and end", `{"StartAt":"P","States":{"P":{"Type":"Pass","Next":"S","End":true},"S":{"Type":"Succeed"}}}`,
			`States.P.End: a state cannot have both Next and "End": true`},
		{"next on succeed", `{"StartAt":"P","States":{"P":{"Type":"Succeed","Next":"P"}}}`, `States.P.Next: field "Next" is not valid in a Succeed state`},
		{"unreachable", `{"StartAt":"P","States":{"P":{"Type":"Succeed"},"Q":{"Type":"Succeed"}}}`, `States.Q: state is not reachable from StartAt "P"`},
		{"missing type", `{"StartAt":"P","States":{"P":{"End":true}}}`, `States.P.Type: is required`},
		{"duplicate field", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true,"End":true}}}`, `States.P.End: duplicate field`},
		{"state not an object", `{"StartAt":"P","States":{"P":[]}}`, `States.P: must be an object, got array`},
		{"definition not an object", `[1]`, `test.asl.json: the definition must be a JSON object, got array`},

		// Retry and Catch.
		{"empty error equals", taskDef(`"Retry":[{"ErrorEquals":[]}]`), `test.asl.json: States.T.Retry[0].ErrorEquals: must not be empty`},
		{"missing error equals", taskDef(`"Catch":[{"Next":"T"}]`), `States.T.Catch[0].ErrorEquals: is required`},
		{"all not alone", taskDef(`"Retry":[{"ErrorEquals":["States.ALL","X"]}]`), `States.T.Retry[0].ErrorEquals[0]: States.ALL must appear alone in ErrorEquals`},
		{"all not last retrier", taskDef(`"Retry":[{"ErrorEquals":["States.ALL"]},{"ErrorEquals":["X"]}]`),
			`States.T.Retry[0].ErrorEquals[0]: States.ALL must be in the last retrier or catcher`},
		{"all not last catcher", taskDef(`"Catch":[{"ErrorEquals":["States.ALL"],"Next":"T"},{"ErrorEquals":["X"],"Next":"T"}]`),
			`States.T.Catch[0].ErrorEquals[0]: States.ALL must be in the last retrier or catcher`},
		{"unknown States error", taskDef(`"Retry":[{"ErrorEquals":["States.Timout"]}]`), `States.T.Retry[0].ErrorEquals[0]: unknown error name "States.Timout"`},
		{"backoff below 1", taskDef(`"Retry":[{"ErrorEquals":["X"],"BackoffRate":0.5}]`), `test.asl.json: States.T.Retry[0].BackoffRate: must be >= 1.0, got 0.5`},
		{"backoff not a number", taskDef(`"Retry":[{"ErrorEquals":["X"],"BackoffRate":"2"}]`), `States.T.Retry[0].BackoffRate: must be a number, got string`},
		{"interval zero", taskDef(`"Retry":[{"ErrorEquals":["X"],"IntervalSeconds":0}]`), `States.T.Retry[0].IntervalSeconds: must be >= 1, got 0`},
		{"interval fractional", taskDef(`"Retry":[{"ErrorEquals":["X"],"IntervalSeconds":1.5}]`), `States.T.Retry[0].IntervalSeconds: must be an integer, got 1.5`},
		{"max attempts negative", taskDef(`"Retry":[{"ErrorEquals":["X"],"MaxAttempts":-1}]`), `States.T.Retry[0].MaxAttempts: must be >= 0, got -1`},
		{"max delay zero", taskDef(`"Retry":[{"ErrorEquals":["X"],"MaxDelaySeconds":0}]`), `States.T.Retry[0].MaxDelaySeconds: must be >= 1, got 0`},
		{"jitter unknown", taskDef(`"Retry":[{"ErrorEquals":["X"],"JitterStrategy":"SOME"}]`), `States.T.Retry[0].JitterStrategy: must be "FULL" or "NONE", got "SOME"`},
		{"retrier unknown field", taskDef(`"Retry":[{"ErrorEquals":["X"],"Interval":1}]`), `States.T.Retry[0].Interval: unknown field "Interval" in a retrier`},
		{"task timeout zero", taskDef(`"TimeoutSeconds":0`), `States.T.TimeoutSeconds: must be >= 1, got 0`},
		{"machine timeout text", `{"StartAt":"P","TimeoutSeconds":"5","States":{"P":{"Type":"Succeed"}}}`, `test.asl.json: TimeoutSeconds: must be a number, got string`},

		// Resources.
		{"missing resource", `{"StartAt":"T","States":{"T":{"Type":"Task","End":true}}}`, `States.T.Resource: is required`},
		{"unknown resource", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:nope","End":true}}}`,
			`test.asl.json: States.T.Resource: unknown resource "arn:nope"`},

		// Paths and templates.
		{"input path without $", taskDef(`"InputPath":"a.b"`), `States.T.InputPath: invalid path "a.b": must start with "$"`},
		// ResultPath is a reference path: AWS accepts no JSONPath operators
		// there ("Paths", https://docs.aws.amazon.com/step-functions/latest/dg/amazon-states-language-paths.html).
		{"wildcard in ResultPath", taskDef(`"ResultPath":"$.a[*]"`), `States.T.ResultPath: invalid path "$.a[*]": [*] is not supported`},
		{"recursive descent in ResultPath", taskDef(`"ResultPath":"$..a"`), `invalid path "$..a": recursive descent (..) is not supported`},
		{"filter in ResultPath", taskDef(`"ResultPath":"$.a[?(@.b)]"`), `invalid path "$.a[?(@.b)]"`},
		{"wildcard in ItemsPath", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.a[*]","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			`States.M.ItemsPath: invalid path "$.a[*]": [*] is not supported`},
		{"slice in a Choice comparison path", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","StringEqualsPath":"$.b[1:]","Next":"E"}]},"E":{"Type":"Succeed"}}}`,
			`invalid path "$.b[1:]"`},
		{"unsupported JSONPath function", taskDef(`"InputPath":"$.a.length()"`), `invalid path "$.a.length()"`},
		{"unterminated bracket", taskDef(`"InputPath":"$['a"`), `invalid path "$['a": unterminated quoted field name`},
		{"context result path", taskDef(`"ResultPath":"$$.Execution.Id"`), `States.T.ResultPath: must be a reference path into the state input, not the context object ($$)`},
		{"catch result path", taskDef(`"Catch":[{"ErrorEquals":["X"],"Next":"T","ResultPath":"x"}]`), `States.T.Catch[0].ResultPath: invalid path "x"`},
		{"path value not string", taskDef(`"Parameters":{"a.$":1}`), `States.T.Parameters.a.$: must be a string holding a path or an intrinsic function, got number`},
		{"path value not a path", taskDef(`"Parameters":{"a.$":"hello"}`), `States.T.Parameters.a.$: "hello" is neither a path nor an intrinsic function`},
		{"nested bad path", taskDef(`"Parameters":{"outer":{"list":[{"a.$":"$.x["}]}}`), `States.T.Parameters.outer.list[0].a.$: invalid path "$.x["`},
		{"duplicate output key", taskDef(`"Parameters":{"a":1,"a.$":"$.a"}`), `States.T.Parameters.a.$: field "a" is also given as "a"`},
		{"result selector bad path", taskDef(`"ResultSelector":{"a.$":"$.x y"}`), `States.T.ResultSelector.a.$: invalid path "$.x y"`},

		// Choice and Fail.
		{"choice two operators", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"IsNull":true,"Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0]: a choice rule must have exactly one of And, Or, Not or a comparison operator, found IsPresent, IsNull`},
		{"choice nested next", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.a","IsPresent":true,"Next":"S"},"Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].Not.Next: Next is only allowed in the top-level rules of Choices`},
		{"choice without next", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true}]}}}`,
			`States.C.Choices[0].Next: is required`},
		{"choice unknown operator", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","StringContains":"x","Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].StringContains: unknown field "StringContains" in a choice rule`},
		{"choice wrong value type", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","NumericEquals":"1","Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].NumericEquals: must be a number, got string`},
		{"choice bad timestamp", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","TimestampEquals":"yesterday","Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].TimestampEquals: "yesterday" is not an RFC 3339 timestamp`},
		{"choice empty and", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"And":[],"Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			`States.C.Choices[0].And: must not be empty`},
		{"choice without choices", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[]}}}`, `States.C.Choices: must not be empty`},
		{"fail error path not a path", `{"StartAt":"F","States":{"F":{"Type":"Fail","ErrorPath":"error"}}}`,
			`States.F.ErrorPath: "error" is neither a path nor an intrinsic function`},
		{"jsonata state with jsonata fields", `{"StartAt":"T","States":{"T":{"Type":"Task","QueryLanguage":"JSONata","Resource":"r","Arguments":{},"End":true}}}`,
			`States.T.QueryLanguage: "JSONata" is not supported by the local runtime`},
		{"fail error and error path", `{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"E","ErrorPath":"$.e"}}}`,
			`States.F.ErrorPath: Error and ErrorPath are mutually exclusive`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(testFile, []byte(tc.def), Options{Tasks: inv})
			if err == nil {
				t.Fatalf("Load succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %q\nwant it to contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), testFile+":") {
				t.Fatalf("error %q does not start with the file name", err)
			}
		})
	}
}

func TestLoadMalformedJSON(t *testing.T) {
	tests := []struct {
		name string
		def  string
		want string
	}{
		{"bad value", "{\n  \"StartAt\": x\n}", "test.asl.json:2:14: invalid JSON: invalid character 'x'"},
		{"trailing comma", "{\n  \"StartAt\": \"A\",\n}", "test.asl.json:3:1: invalid JSON: invalid character '}'"},
		{"truncated", "{\n  \"StartAt\": \"A\"", "test.asl.json:2:17: invalid JSON: unexpected end of JSON input"},
		{"after value", "{}\n\n  ]", "test.asl.json:3:3: invalid JSON: invalid character ']' after top-level value"},
		{"empty", "", "test.asl.json:1:1: invalid JSON: unexpected end of JSON input"},
		{"multibyte column", "{\"Comment\": \"é\" x}", "test.asl.json:1:17: invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(testFile, []byte(tc.def), Options{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestLoadWrapsCheckResourceError(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo})
	_, err := Load(testFile, []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"other","End":true}}}`), Options{Tasks: inv})
	if !errors.Is(err, errUnknownResource) {
		t.Fatalf("error = %v, want it to wrap the invoker's error", err)
	}
}

func TestLoadRequiresInvokerForTasks(t *testing.T) {
	_, err := Load(testFile, []byte(taskDef("")), Options{})
	if err == nil || !strings.Contains(err.Error(), "States.T.Resource: no task invoker is configured") {
		t.Fatalf("error = %v", err)
	}
}

func TestLoadRejectsBadTimeScale(t *testing.T) {
	_, err := Load(testFile, []byte(`{"StartAt":"S","States":{"S":{"Type":"Succeed"}}}`), Options{TimeScale: -1})
	if err == nil || !strings.Contains(err.Error(), "TimeScale") {
		t.Fatalf("error = %v", err)
	}
}

func TestLoadAcceptsFullDefinition(t *testing.T) {
	def := `{
	  "Comment": "transfer",
	  "Version": "1.0",
	  "QueryLanguage": "JSONPath",
	  "TimeoutSeconds": 300,
	  "StartAt": "Validate",
	  "States": {
	    "Validate": {
	      "Type": "Choice",
	      "Comment": "amount must be positive",
	      "InputPath": "$",
	      "OutputPath": "$",
	      "Choices": [
	        {"And": [
	          {"Variable": "$.amount", "IsNumeric": true},
	          {"Variable": "$.amount", "NumericGreaterThan": 0},
	          {"Not": {"Variable": "$.from", "StringEqualsPath": "$.to"}}
	        ], "Next": "Prepare"}
	      ],
	      "Default": "Rejected"
	    },
	    "Prepare": {
	      "Type": "Pass",
	      "Parameters": {"id.$": "States.UUID()", "amount.$": "$.amount", "meta": {"source": "api"}},
	      "ResultPath": "$.prepared",
	      "Next": "Debit"
	    },
	    "Debit": {
	      "Type": "Task",
	      "Resource": "r",
	      "QueryLanguage": "JSONPath",
	      "InputPath": "$.prepared",
	      "Parameters": {"Payload.$": "$", "Execution.$": "$$.Execution.Id"},
	      "ResultSelector": {"debit.$": "$.Payload"},
	      "ResultPath": "$.debit",
	      "OutputPath": "$",
	      "TimeoutSeconds": 30,
	      "Retry": [
	        {"ErrorEquals": ["Lambda.ServiceException", "States.Timeout"], "IntervalSeconds": 2, "MaxAttempts": 6, "BackoffRate": 2, "MaxDelaySeconds": 60, "JitterStrategy": "NONE", "Comment": "transient"},
	        {"ErrorEquals": ["States.ALL"], "MaxAttempts": 0}
	      ],
	      "Catch": [
	        {"ErrorEquals": ["InsufficientFunds"], "ResultPath": "$.error", "Next": "Rejected"},
	        {"ErrorEquals": ["States.ALL"], "ResultPath": null, "Next": "Failed"}
	      ],
	      "Next": "Done"
	    },
	    "Rejected": {"Type": "Fail", "Error": "TransferRejected", "Cause": "invalid transfer"},
	    "Failed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "States.Format('transfer {} failed', $.id)"},
	    "Done": {"Type": "Succeed", "OutputPath": "$.debit"}
	  }
	}`
	m := mustLoad(t, def, newInvoker(map[string]invokeFunc{"r": echo}), 1)
	if got := len(m.def.states); got != 6 {
		t.Fatalf("loaded %d states, want 6", got)
	}
	if got := m.def.states["Debit"].retry[0]; got.intervalSeconds != 2 || got.maxAttempts != 6 || got.backoffRate != 2 || got.maxDelaySeconds != 60 {
		t.Fatalf("retrier = %+v", got)
	}
	if got := m.def.states["Debit"].retry[1]; got.intervalSeconds != defaultIntervalSeconds || got.maxAttempts != 0 || got.backoffRate != defaultBackoffRate {
		t.Fatalf("retrier with defaults = %+v", got)
	}
}
