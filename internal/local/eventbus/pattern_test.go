package eventbus_test

import (
	"errors"
	"testing"

	"github.com/exactlyonce/transfers/internal/local/eventbus"
)

const machineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:TransferMachine"

// statusChangeRule is the stack's rule that sends failed executions to the
// reaper.
const statusChangeRule = `{
  "source": ["aws.states"],
  "detail-type": ["Step Functions Execution Status Change"],
  "detail": {
    "status": ["FAILED", "TIMED_OUT", "ABORTED"],
    "stateMachineArn": ["` + machineARN + `"]
  }
}`

func statusChange(source, detailType, status, arn string) string {
	return `{
  "version": "0",
  "id": "315c1398-40ff-a850-213b-158f73e60175",
  "detail-type": "` + detailType + `",
  "source": "` + source + `",
  "account": "123456789012",
  "time": "2019-02-26T19:42:21Z",
  "region": "us-east-1",
  "resources": ["arn:aws:states:us-east-1:123456789012:execution:TransferMachine:t-1"],
  "detail": {
    "executionArn": "arn:aws:states:us-east-1:123456789012:execution:TransferMachine:t-1",
    "stateMachineArn": "` + arn + `",
    "name": "t-1",
    "status": "` + status + `",
    "startDate": 1551225271984,
    "stopDate": 1551225272089,
    "input": "{}",
    "output": null
  }
}`
}

func TestPatternMatch(t *testing.T) {
	const sfn = "Step Functions Execution Status Change"
	tests := []struct {
		name    string
		pattern string
		event   string
		want    bool
	}{
		// The status-change rule.
		{"status change FAILED", statusChangeRule, statusChange("aws.states", sfn, "FAILED", machineARN), true},
		{"status change TIMED_OUT", statusChangeRule, statusChange("aws.states", sfn, "TIMED_OUT", machineARN), true},
		{"status change ABORTED", statusChangeRule, statusChange("aws.states", sfn, "ABORTED", machineARN), true},
		{"status change SUCCEEDED", statusChangeRule, statusChange("aws.states", sfn, "SUCCEEDED", machineARN), false},
		{"status change RUNNING", statusChangeRule, statusChange("aws.states", sfn, "RUNNING", machineARN), false},
		{"status change other machine", statusChangeRule, statusChange("aws.states", sfn, "FAILED", machineARN+"2"), false},
		{"status change other source", statusChangeRule, statusChange("transfers.api", sfn, "FAILED", machineARN), false},
		{"status change other detail-type", statusChangeRule, statusChange("aws.states", "Step Functions State Change", "FAILED", machineARN), false},
		{"status change case matters", statusChangeRule, statusChange("aws.states", sfn, "failed", machineARN), false},

		// Exact values.
		{"string", `{"a":["x"]}`, `{"a":"x"}`, true},
		{"string mismatch", `{"a":["x"]}`, `{"a":"y"}`, false},
		{"missing field", `{"a":["x"]}`, `{"b":"x"}`, false},
		{"number", `{"a":[5]}`, `{"a":5}`, true},
		{"number by value", `{"a":[5]}`, `{"a":5.0}`, true},
		{"number by value exponent", `{"a":[300]}`, `{"a":3e2}`, true},
		{"number beyond big.Float matches itself", `{"a":[1e99999999999]}`, `{"a":1e99999999999}`, true},
		{"number beyond big.Float by its text", `{"a":[1e99999999999]}`, `{"a":10e99999999998}`, false},
		{"anything-but a number beyond big.Float", `{"a":[{"anything-but":[1e-99999999999]}]}`, `{"a":1e-99999999999}`, false},
		{"string is not number", `{"a":["5"]}`, `{"a":5}`, false},
		{"number is not string", `{"a":[5]}`, `{"a":"5"}`, false},
		{"bool", `{"a":[true]}`, `{"a":true}`, true},
		{"bool mismatch", `{"a":[true]}`, `{"a":false}`, false},
		{"null", `{"a":[null]}`, `{"a":null}`, true},
		{"null is not missing", `{"a":[null]}`, `{}`, false},
		{"null is not empty string", `{"a":[null]}`, `{"a":""}`, false},
		{"any of values", `{"a":["x","y"]}`, `{"a":"y"}`, true},
		{"all fields must match", `{"a":["x"],"b":["y"]}`, `{"a":"x","b":"z"}`, false},
		{"all fields match", `{"a":["x"],"b":["y"]}`, `{"a":"x","b":"y","c":1}`, true},

		// Arrays in the event.
		{"event array any element", `{"a":["x"]}`, `{"a":["w","x"]}`, true},
		{"event array no element", `{"a":["x"]}`, `{"a":["w","v"]}`, false},
		{"event nested arrays", `{"a":["x"]}`, `{"a":[["w"],["x"]]}`, true},
		{"array of objects", `{"a":{"b":["x"]}}`, `{"a":[{"b":"y"},{"b":"x"}]}`, true},
		{"array of objects one element", `{"a":{"b":["x"],"c":["y"]}}`, `{"a":[{"b":"x","c":"n"},{"b":"n","c":"y"}]}`, false},
		{"array of objects same element", `{"a":{"b":["x"],"c":["y"]}}`, `{"a":[{"b":"x","c":"n"},{"b":"x","c":"y"}]}`, true},

		// Nesting.
		{"nested", `{"detail":{"state":{"name":["open"]}}}`, `{"detail":{"state":{"name":"open"}}}`, true},
		{"nested missing parent", `{"detail":{"state":{"name":["open"]}}}`, `{"detail":{}}`, false},
		{"leaf pattern on object", `{"detail":["x"]}`, `{"detail":{"x":1}}`, false},
		{"object pattern on scalar", `{"detail":{"x":["y"]}}`, `{"detail":"x"}`, false},

		// prefix, suffix, equals-ignore-case.
		{"prefix", `{"a":[{"prefix":"tr-"}]}`, `{"a":"tr-123"}`, true},
		{"prefix mismatch", `{"a":[{"prefix":"tr-"}]}`, `{"a":"TR-123"}`, false},
		{"prefix not on numbers", `{"a":[{"prefix":"1"}]}`, `{"a":123}`, false},
		{"prefix ignore case", `{"a":[{"prefix":{"equals-ignore-case":"tr-"}}]}`, `{"a":"TR-123"}`, true},
		{"suffix", `{"a":[{"suffix":".png"}]}`, `{"a":"x.png"}`, true},
		{"suffix mismatch", `{"a":[{"suffix":".png"}]}`, `{"a":"x.jpg"}`, false},
		{"suffix ignore case", `{"a":[{"suffix":{"equals-ignore-case":".PNG"}}]}`, `{"a":"x.png"}`, true},
		{"equals-ignore-case", `{"a":[{"equals-ignore-case":"FaIlEd"}]}`, `{"a":"failed"}`, true},
		{"equals-ignore-case mismatch", `{"a":[{"equals-ignore-case":"failed"}]}`, `{"a":"failure"}`, false},
		{"operator or value", `{"a":["x",{"prefix":"y"}]}`, `{"a":"yes"}`, true},

		// anything-but.
		{"anything-but string", `{"a":[{"anything-but":"x"}]}`, `{"a":"y"}`, true},
		{"anything-but string excluded", `{"a":[{"anything-but":"x"}]}`, `{"a":"x"}`, false},
		{"anything-but missing field", `{"a":[{"anything-but":"x"}]}`, `{}`, false},
		{"anything-but list", `{"a":[{"anything-but":["x","y"]}]}`, `{"a":"y"}`, false},
		{"anything-but list other", `{"a":[{"anything-but":["x","y"]}]}`, `{"a":"z"}`, true},
		{"anything-but number", `{"a":[{"anything-but":5}]}`, `{"a":5.0}`, false},
		{"anything-but number other", `{"a":[{"anything-but":5}]}`, `{"a":6}`, true},
		{"anything-but typed", `{"a":[{"anything-but":"5"}]}`, `{"a":5}`, true},
		{"anything-but event array", `{"a":[{"anything-but":"x"}]}`, `{"a":["x","y"]}`, true},
		{"anything-but event array all excluded", `{"a":[{"anything-but":"x"}]}`, `{"a":["x","x"]}`, false},
		{"anything-but prefix", `{"a":[{"anything-but":{"prefix":"int-"}}]}`, `{"a":"ext-1"}`, true},
		{"anything-but prefix excluded", `{"a":[{"anything-but":{"prefix":"int-"}}]}`, `{"a":"int-1"}`, false},
		{"anything-but suffix", `{"a":[{"anything-but":{"suffix":".tmp"}}]}`, `{"a":"x.tmp"}`, false},
		{"anything-but equals-ignore-case", `{"a":[{"anything-but":{"equals-ignore-case":["X","y"]}}]}`, `{"a":"x"}`, false},
		{"anything-but equals-ignore-case other", `{"a":[{"anything-but":{"equals-ignore-case":["X","y"]}}]}`, `{"a":"z"}`, true},

		// exists.
		{"exists true", `{"a":[{"exists":true}]}`, `{"a":"x"}`, true},
		{"exists true null", `{"a":[{"exists":true}]}`, `{"a":null}`, true},
		{"exists true missing", `{"a":[{"exists":true}]}`, `{"b":"x"}`, false},
		{"exists true on object", `{"a":[{"exists":true}]}`, `{"a":{"b":1}}`, false},
		{"exists false missing", `{"a":[{"exists":false}]}`, `{"b":"x"}`, true},
		{"exists false present", `{"a":[{"exists":false}]}`, `{"a":"x"}`, false},
		{"exists false missing parent", `{"detail":{"error":[{"exists":false}]}}`, `{"source":"x"}`, true},
		{"exists false present nested", `{"detail":{"error":[{"exists":false}]}}`, `{"detail":{"error":"States.Timeout"}}`, false},
		{"exists false empty array", `{"a":[{"exists":false}]}`, `{"a":[]}`, true},
		{"value or missing", `{"a":["x",{"exists":false}]}`, `{}`, true},

		// numeric.
		{"numeric range", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":5}`, true},
		{"numeric range low", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":0}`, false},
		{"numeric range high", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":5.01}`, false},
		{"numeric fraction", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":0.5}`, true},
		{"numeric equal", `{"n":[{"numeric":["=",100]}]}`, `{"n":1e2}`, true},
		{"numeric ge", `{"n":[{"numeric":[">=",10]}]}`, `{"n":10}`, true},
		{"numeric lt", `{"n":[{"numeric":["<",10]}]}`, `{"n":10}`, false},
		{"numeric not on strings", `{"n":[{"numeric":[">",0]}]}`, `{"n":"5"}`, false},
		{"numeric negative", `{"n":[{"numeric":["<",0]}]}`, `{"n":-0.25}`, true},
		{"numeric event array", `{"n":[{"numeric":[">",10]}]}`, `{"n":[1,20]}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := eventbus.Compile([]byte(tc.pattern))
			if err != nil {
				t.Fatalf("Compile(%s): %v", tc.pattern, err)
			}
			got, err := p.Match([]byte(tc.event))
			if err != nil {
				t.Fatalf("Match: %v", err)
			}
			if got != tc.want {
				t.Errorf("Match(%s) with %s = %v, want %v", tc.event, tc.pattern, got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		want    string
	}{
		{"not JSON", `{"a":`, "event pattern: not valid JSON: unexpected EOF"},
		{"trailing data", `{"a":["x"]} {}`, "event pattern: not valid JSON: data after the top-level value"},
		{"not an object", `["x"]`, "event pattern: must be a JSON object"},
		{"empty pattern", `{}`, "event pattern: empty objects are not allowed"},
		{"scalar value", `{"source":"aws.states"}`, "source: must be an array or an object"},
		{"empty array", `{"detail":{"status":[]}}`, "detail.status: empty arrays are not allowed"},
		{"empty nested object", `{"detail":{}}`, "detail: empty objects are not allowed"},
		{"nested array", `{"a":[["x"]]}`, "a: nested arrays are not allowed"},
		{"anything-but bool", `{"detail":{"status":[{"anything-but":true}]}}`, `detail.status: "anything-but" needs a string, number or array`},
		{"anything-but null", `{"detail":{"status":[{"anything-but":null}]}}`, `detail.status: "anything-but" needs a string, number or array`},
		{"anything-but empty list", `{"a":[{"anything-but":[]}]}`, `a: "anything-but" needs a non-empty array`},
		{"anything-but list of objects", `{"a":[{"anything-but":[{"x":1}]}]}`, `a: "anything-but" array needs strings or numbers`},
		{"anything-but unknown object", `{"a":[{"anything-but":{"wildcard":"x*"}}]}`, `a: "anything-but" does not support "wildcard"`},
		{"prefix number", `{"a":[{"prefix":5}]}`, `a: "prefix" needs a string or {"equals-ignore-case": string}`},
		{"suffix object", `{"a":[{"suffix":{"x":"y"}}]}`, `a: "suffix" needs a string or {"equals-ignore-case": string}`},
		{"exists string", `{"a":[{"exists":"true"}]}`, `a: "exists" needs true or false`},
		{"equals-ignore-case number", `{"a":[{"equals-ignore-case":1}]}`, `a: "equals-ignore-case" needs a string`},
		{"numeric odd", `{"a":[{"numeric":[">"]}]}`, `a: "numeric" needs an array of one or two [operator, number] pairs`},
		{"numeric bad operator", `{"a":[{"numeric":["!=",1]}]}`, `a: "numeric" operator "!=" is not one of =, >, >=, <, <=`},
		{"numeric string value", `{"a":[{"numeric":[">","1"]}]}`, `a: "numeric" ">" needs a number`},
		{"numeric two lower bounds", `{"a":[{"numeric":[">",1,">=",2]}]}`, `a: "numeric" has two lower bounds`},
		{"numeric empty range", `{"a":[{"numeric":[">",5,"<",1]}]}`, `a: "numeric" range is empty`},
		{"numeric equal combined", `{"a":[{"numeric":["=",5,"<",10]}]}`, `a: "numeric" "=" cannot be combined with other operators`},
		{"two operators", `{"a":[{"prefix":"x","suffix":"y"}]}`, "a: an operator object needs exactly one key, got 2"},
		{"unknown operator", `{"a":[{"wildcard":"x*"}]}`, `a: unsupported operator "wildcard"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := eventbus.Compile([]byte(tc.pattern))
			if err == nil {
				t.Fatalf("Compile(%s) = %v, want error", tc.pattern, p)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q, want %q", err, tc.want)
			}
			if !errors.Is(err, eventbus.ErrInvalidPattern) {
				t.Errorf("error %v does not match ErrInvalidPattern", err)
			}
		})
	}
}

func TestMatchInvalidEvent(t *testing.T) {
	p := eventbus.MustCompile(`{"a":["x"]}`)
	for _, event := range []string{`{"a":`, `"x"`, `[]`} {
		t.Run(event, func(t *testing.T) {
			if _, err := p.Match([]byte(event)); !errors.Is(err, eventbus.ErrInvalidEvent) {
				t.Errorf("Match(%s) err = %v, want ErrInvalidEvent", event, err)
			}
		})
	}
}
