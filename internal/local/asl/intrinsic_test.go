package asl

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// intrinsicInput is the state input of the intrinsic function tests.
const intrinsicInput = `{
  "name": "Ada", "abc": "abc", "amount": 12.5, "count": 3, "neg": -2, "flag": true, "nothing": null,
  "list": [1, 2, 2, "a", {"k": 1}, {"k": 1}], "obj": {"b": 2, "a": "x"}, "other": {"c": 3, "a": "y"},
  "json": "{\"x\":[1,2]}", "tmpl": "{} and {}", "b64": "aGVsbG8gd29ybGQ=", "csv": "a,b;;c",
  "big": "` + "%BIG%" + `"
}`

func intrinsicTestInput() string {
	return strings.Replace(intrinsicInput, "%BIG%", strings.Repeat("x", maxIntrinsicString+1), 1)
}

// evalIntrinsic runs expr as the only Parameters field of a Pass state.
func evalIntrinsic(t *testing.T, expr string) runResult {
	t.Helper()
	field, _ := json.Marshal(expr)
	return runDef(t, passDef(`"Parameters":{"v.$":`+string(field)+`}`), nil, intrinsicTestInput())
}

func TestIntrinsicFunctions(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // JSON of the result
	}{
		{"format", `States.Format('Hello, {}!', $.name)`, `"Hello, Ada!"`},
		{"format types", `States.Format('{} {} {} {} {}', $.amount, $.flag, $.nothing, 'lit', 42)`, `"12.5 true null lit 42"`},
		{"format containers", `States.Format('{} {}', $.list, $.obj)`, `"[1, 2, 2, a, {k=1}, {k=1}] {a=x, b=2}"`},
		{"format escapes", `States.Format('\{\} {} \'q\' \\', $.count)`, `"{} 3 'q' \\"`},
		{"format template from path", `States.Format($.tmpl, 1, 'two')`, `"1 and two"`},
		{"format no placeholders", `States.Format('plain')`, `"plain"`},
		{"format nested", `States.Format('id-{}', States.MathAdd($.count, 1))`, `"id-4"`},
		{"format path with brackets", `States.Format('{}', $['obj']['a'])`, `"x"`},
		{"string to json", `States.StringToJson($.json)`, `{"x":[1,2]}`},
		// Recorded on AWS: an empty or blank string gives null, not an error.
		{"string to json empty", `States.StringToJson('')`, `null`},
		{"string to json blank", `States.StringToJson(' ')`, `null`},
		{"json to string", `States.JsonToString($.obj)`, `"{\"a\":\"x\",\"b\":2}"`},
		{"json round trip", `States.StringToJson(States.JsonToString($.list))`, `[1,2,2,"a",{"k":1},{"k":1}]`},
		{"array", `States.Array($.name, 1, true, null, 'x')`, `["Ada",1,true,null,"x"]`},
		{"array empty", `States.Array()`, `[]`},
		{"array partition", `States.ArrayPartition($.list, 4)`, `[[1,2,2,"a"],[{"k":1},{"k":1}]]`},
		{"array contains", `States.ArrayContains($.list, 'a')`, `true`},
		{"array contains object", `States.ArrayContains($.list, States.StringToJson('{"k":1.0}'))`, `true`},
		{"array contains missing", `States.ArrayContains($.list, 9)`, `false`},
		{"array range", `States.ArrayRange(1, 9, 2)`, `[1,3,5,7,9]`},
		{"array range down", `States.ArrayRange(3, 1, -1)`, `[3,2,1]`},
		{"array range empty", `States.ArrayRange(3, 1, 1)`, `[]`},
		{"array get item", `States.ArrayGetItem($.list, 3)`, `"a"`},
		{"array length", `States.ArrayLength($.list)`, `6`},
		{"array unique", `States.ArrayUnique($.list)`, `[1,2,"a",{"k":1}]`},
		{"base64 encode", `States.Base64Encode('hello world')`, `"aGVsbG8gd29ybGQ="`},
		{"base64 decode", `States.Base64Decode($.b64)`, `"hello world"`},
		{"hash sha-256", `States.Hash('abc', 'SHA-256')`, `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`},
		{"hash md5", `States.Hash('abc', 'MD5')`, `"900150983cd24fb0d6963f7d28e17f72"`},
		{"hash sha-1", `States.Hash('abc', 'SHA-1')`, `"a9993e364706816aba3e25717850c26c9cd0d89d"`},
		{"hash sha-384 from path", `States.Hash($.abc, 'SHA-384')`, `"cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"`},
		{"hash sha-512", `States.Hash('abc', 'SHA-512')`, `"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"`},
		{"json merge", `States.JsonMerge($.obj, $.other, false)`, `{"a":"y","b":2,"c":3}`},
		{"math add", `States.MathAdd($.count, $.neg)`, `1`},
		{"math add rounds", `States.MathAdd(1.5, -0.5)`, `2`},
		{"math add literal", `States.MathAdd(111, -1)`, `110`},
		{"string split", `States.StringSplit($.csv, ',;')`, `["a","b","c"]`},
		{"string split single", `States.StringSplit('1,2,3', ',')`, `["1","2","3"]`},
		{"nested get item of split", `States.ArrayGetItem(States.StringSplit('a/b/c', '/'), 2)`, `"c"`},
		{"spaces between arguments", `States.Array( 1 ,  'a' )`, `[1,"a"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := evalIntrinsic(t, tc.expr)
			wantSucceeded(t, r, `{"v":`+tc.want+`}`)
		})
	}
}

func TestIntrinsicUUID(t *testing.T) {
	r := runDef(t, passDef(`"Parameters":{"a.$":"States.UUID()","b.$":"States.UUID()"}`), nil, `{}`)
	if r.Status != StatusSucceeded {
		t.Fatalf("status %s: %s", r.Status, r.Cause)
	}
	var out struct{ A, B string }
	if err := json.Unmarshal(r.Output, &out); err != nil {
		t.Fatal(err)
	}
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !v4.MatchString(out.A) || !v4.MatchString(out.B) {
		t.Fatalf("UUIDs %q, %q are not version 4", out.A, out.B)
	}
	if out.A == out.B {
		t.Fatalf("two UUIDs are equal: %q", out.A)
	}
}

func TestIntrinsicRuntimeErrors(t *testing.T) {
	tests := []struct {
		name  string
		expr  string
		error string
		cause string
	}{
		{"format template not string", `States.Format($.count, 1)`, ErrIntrinsicFailure, "the template must be a string"},
		{"format placeholder count from path", `States.Format($.tmpl, 1)`, ErrIntrinsicFailure, "2 placeholder(s) but 1 value argument(s)"},
		{"string to json invalid", `States.StringToJson($.name)`, ErrIntrinsicFailure, "not valid JSON"},
		{"string to json not string", `States.StringToJson($.count)`, ErrIntrinsicFailure, "argument 1 must be a string, got number"},
		{"array partition not array", `States.ArrayPartition($.obj, 2)`, ErrIntrinsicFailure, "argument 1 must be an array, got object"},
		{"array partition size zero", `States.ArrayPartition($.list, 0)`, ErrIntrinsicFailure, "chunk size must be a positive integer"},
		{"array contains not array", `States.ArrayContains($.name, 'A')`, ErrIntrinsicFailure, "must be an array"},
		{"array range step zero", `States.ArrayRange(1, 5, 0)`, ErrIntrinsicFailure, "step must not be 0"},
		{"array range not integer", `States.ArrayRange(1, 5.5, 1)`, ErrIntrinsicFailure, "argument 2 must be an integer"},
		{"array range too long", `States.ArrayRange(1, 5000, 1)`, ErrIntrinsicFailure, "more than 1000 items"},
		{"array get item out of range", `States.ArrayGetItem($.list, 6)`, ErrIntrinsicFailure, "index 6 is out of range"},
		{"array get item negative", `States.ArrayGetItem($.list, -1)`, ErrIntrinsicFailure, "non-negative integer"},
		{"array length not array", `States.ArrayLength($.nothing)`, ErrIntrinsicFailure, "got null"},
		{"array unique not array", `States.ArrayUnique('x')`, ErrIntrinsicFailure, "must be an array"},
		{"base64 encode too long", `States.Base64Encode($.big)`, ErrIntrinsicFailure, "more than the limit of 10000"},
		{"base64 decode invalid", `States.Base64Decode('***')`, ErrIntrinsicFailure, "not valid base64"},
		{"base64 decode not string", `States.Base64Decode($.flag)`, ErrIntrinsicFailure, "must be a string"},
		{"hash unknown algorithm from path", `States.Hash('abc', $.name)`, ErrIntrinsicFailure, `unknown hash algorithm "Ada"`},
		{"hash data not string", `States.Hash($.obj, 'MD5')`, ErrIntrinsicFailure, "must be a string"},
		{"json merge not objects", `States.JsonMerge($.obj, $.list, false)`, ErrIntrinsicFailure, "must be objects"},
		{"json merge deep from path", `States.JsonMerge($.obj, $.other, $.flag)`, ErrIntrinsicFailure, "only a shallow merge"},
		{"math add not number", `States.MathAdd($.name, 1)`, ErrIntrinsicFailure, "argument 1 must be a number, got string"},
		{"string split not string", `States.StringSplit($.list, ',')`, ErrIntrinsicFailure, "must be a string"},
		{"missing path argument", `States.Format('{}', $.missing)`, ErrRuntime, "The JSONPath '$.missing' specified in the intrinsic function States.Format could not be found"},
		{"nested failure", `States.Format('{}', States.ArrayGetItem($.list, 10))`, ErrIntrinsicFailure, "States.ArrayGetItem: index 10 is out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := evalIntrinsic(t, tc.expr)
			wantFailed(t, r, tc.error, tc.cause)
		})
	}
}

func TestIntrinsicIsCatchableInTask(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo})
	def := `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"r","Parameters":{"x.$":"States.ArrayGetItem($.list, 5)"},
	       "Catch":[{"ErrorEquals":["States.IntrinsicFailure"],"ResultPath":"$.err","Next":"C"}],"End":true},
	  "C":{"Type":"Pass","End":true}}}`
	r := runDef(t, def, inv, `{"list":[]}`)
	if r.Status != StatusSucceeded || !strings.Contains(string(r.Output), `"Error":"States.IntrinsicFailure"`) {
		t.Fatalf("result = %+v, want the failure caught", r.Result)
	}
	if n := len(inv.invocations()); n != 0 {
		t.Fatalf("the task was invoked %d times, want 0", n)
	}
}

func TestIntrinsicLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string
	}{
		{"unknown function", `States.Nope(1)`, `unknown intrinsic function "States.Nope"`},
		{"unknown nested function", `States.Format('{}', States.Nope())`, `unknown intrinsic function "States.Nope"`},
		{"missing parenthesis", `States.UUID`, "missing ("},
		{"unclosed call", `States.Array(1, 2`, "missing ) in States.Array"},
		{"trailing text", `States.UUID() x`, `unexpected "x" after the call`},
		{"too many arguments", `States.UUID(1)`, "States.UUID takes 0 argument(s), got 1"},
		{"too few arguments", `States.MathAdd(1)`, "States.MathAdd takes 2 argument(s), got 1"},
		{"format without arguments", `States.Format()`, "States.Format takes at least 1 argument(s), got 0"},
		{"format placeholder count", `States.Format('{} {}', 1)`, "the template has 2 placeholder(s) but 1 value argument(s) follow"},
		{"format escaped placeholder counts", `States.Format('\{} {}', 1, 2)`, "the template has 1 placeholder(s) but 2 value argument(s) follow"},
		{"format number template", `States.Format(1)`, "the first argument must be a string template"},
		{"double quoted string", `States.Format("x")`, `invalid argument "\"x\"" (strings need single quotes)`},
		{"bare word", `States.Array(abc)`, `invalid argument "abc"`},
		{"bad number", `States.Array(01)`, `invalid argument "01"`},
		{"unterminated string", `States.Array('abc)`, "unterminated string"},
		{"invalid escape", `States.Array('a\nb')`, `invalid escape \n`},
		{"bad path argument", `States.Array($.a[)`, `invalid path "$.a[)"`},
		{"missing argument", `States.Array(1,)`, `invalid argument ""`},
		{"unknown hash algorithm", `States.Hash('a', 'SHA-3')`, `unknown hash algorithm "SHA-3"`},
		{"deep json merge", `States.JsonMerge($.a, $.b, true)`, "only a shallow merge is supported"},
		{"nesting limit", strings.Repeat("States.Array(", 11) + strings.Repeat(")", 11), "more than 10 nested intrinsic functions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			field, _ := json.Marshal(tc.expr)
			_, err := Load(testFile, []byte(passDef(`"Parameters":{"v.$":`+string(field)+`}`)), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "States.P.Parameters.v.$: invalid intrinsic function") {
				t.Fatalf("error %q does not name the place", err)
			}
		})
	}
}

func TestIntrinsicNestingLimitAllowsTen(t *testing.T) {
	expr := strings.Repeat("States.Array(", 10) + "1" + strings.Repeat(")", 10)
	r := evalIntrinsic(t, expr)
	wantSucceeded(t, r, `{"v":`+strings.Repeat("[", 10)+"1"+strings.Repeat("]", 10)+`}`)
}
