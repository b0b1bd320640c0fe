package asl

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The heartbeat rules follow the developer guide: "Task workflow state"
// (https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html):
// HeartbeatSeconds is a positive integer smaller than TimeoutSeconds,
// HeartbeatSecondsPath and TimeoutSecondsPath are reference paths to
// positive integers, and a task that sends no heartbeat for longer than
// HeartbeatSeconds fails with States.HeartbeatTimeout; "Error names" in
// https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html:
// States.Timeout is raised for a task that "ran longer than the
// TimeoutSeconds value, or failed to send a heartbeat for a period longer
// than the HeartbeatSeconds value", so a States.Timeout retrier or catcher
// handles a heartbeat timeout too. A task of the local runtime (a Lambda
// invocation, a DynamoDB request) cannot send heartbeats: its heartbeat can
// only time out.

func TestHeartbeatLoad(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": echo})
	tests := []struct {
		name   string
		fields string
		want   string // "" when the definition is valid
	}{
		{"smaller than TimeoutSeconds", `"HeartbeatSeconds":10,"TimeoutSeconds":11`, ""},
		{"without TimeoutSeconds", `"HeartbeatSeconds":99999998`, ""},
		{"paths", `"HeartbeatSecondsPath":"$.hb","TimeoutSecondsPath":"$.t"`, ""},
		{"constant heartbeat with a TimeoutSecondsPath", `"HeartbeatSeconds":600,"TimeoutSecondsPath":"$.t"`, ""},
		{"equal to TimeoutSeconds", `"HeartbeatSeconds":10,"TimeoutSeconds":10`,
			`States.T.HeartbeatSeconds: must be smaller than TimeoutSeconds (10), got 10`},
		{"larger than TimeoutSeconds", `"HeartbeatSeconds":60,"TimeoutSeconds":30`,
			`States.T.HeartbeatSeconds: must be smaller than TimeoutSeconds (30), got 60`},
		{"not smaller than the default TimeoutSeconds", `"HeartbeatSeconds":99999999`,
			`States.T.HeartbeatSeconds: must be smaller than the default TimeoutSeconds (99999999), got 99999999`},
		{"zero", `"HeartbeatSeconds":0`, `States.T.HeartbeatSeconds`},
		{"not an integer", `"HeartbeatSeconds":1.5`, `States.T.HeartbeatSeconds`},
		{"both heartbeat fields", `"HeartbeatSeconds":1,"HeartbeatSecondsPath":"$.hb"`,
			`States.T.HeartbeatSecondsPath: HeartbeatSeconds and HeartbeatSecondsPath are mutually exclusive`},
		{"both timeout fields", `"TimeoutSeconds":1,"TimeoutSecondsPath":"$.t"`,
			`States.T.TimeoutSecondsPath: TimeoutSeconds and TimeoutSecondsPath are mutually exclusive`},
		{"TimeoutSecondsPath is a reference path", `"TimeoutSecondsPath":"$.t[*]"`, `States.T.TimeoutSecondsPath: invalid path`},
		{"HeartbeatSecondsPath null", `"HeartbeatSecondsPath":null`, `States.T.HeartbeatSecondsPath: must be a path, not null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(testFile, []byte(taskDef(tc.fields)), Options{Tasks: inv})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestHeartbeatTimeout(t *testing.T) {
	const hbCause = "The task sent no heartbeat within its HeartbeatSeconds (1); r cannot send heartbeats."
	// At the tests' time scale (1 s -> 0.1 ms) a heartbeat of 1 s elapses at
	// once, while a TimeoutSeconds of 99999 leaves about 10 s.
	blocks := waitsForCtx
	tests := []struct {
		name      string
		fields    string
		input     string
		invoke    invokeFunc
		wantOut   string // "" when the execution must fail
		wantError string
		wantCause string
	}{
		{"caught by name", `"HeartbeatSeconds":1,"TimeoutSeconds":99999,"Catch":[{"ErrorEquals":["States.HeartbeatTimeout"],"Next":"A"}]`,
			`{}`, blocks, `{"at":"A","in":{"Error":"States.HeartbeatTimeout","Cause":"` + hbCause + `"}}`, "", ""},
		{"States.Timeout catches a heartbeat timeout", `"HeartbeatSeconds":1,"TimeoutSeconds":99999,"Catch":[{"ErrorEquals":["States.Timeout"],"Next":"B"}]`,
			`{}`, blocks, `{"at":"B","in":{"Error":"States.HeartbeatTimeout","Cause":"` + hbCause + `"}}`, "", ""},
		{"States.ALL catches a heartbeat timeout", `"HeartbeatSeconds":1,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"C"}]`,
			`{}`, blocks, `{"at":"C","in":{"Error":"States.HeartbeatTimeout","Cause":"` + hbCause + `"}}`, "", ""},
		{"States.TaskFailed does not catch a heartbeat timeout", `"HeartbeatSeconds":1,"Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"A"},{"ErrorEquals":["States.HeartbeatTimeout"],"Next":"B"}]`,
			`{}`, blocks, `{"at":"B","in":{"Error":"States.HeartbeatTimeout","Cause":"` + hbCause + `"}}`, "", ""},
		{"States.HeartbeatTimeout does not catch a TimeoutSeconds timeout", `"TimeoutSeconds":1,"Catch":[{"ErrorEquals":["States.HeartbeatTimeout"],"Next":"A"}]`,
			`{}`, blocks, "", ErrTimeout, "TimeoutSeconds (1)"},
		{"uncaught", `"HeartbeatSeconds":1`, `{}`, blocks, "", ErrHeartbeatTimeout, hbCause},
		// 5000 s is half a second at the tests' scale: long enough for the
		// retry's answer to beat its own heartbeat on a loaded machine.
		{"retried, then the task answers", `"HeartbeatSeconds":5000,"TimeoutSeconds":99999,"Retry":[{"ErrorEquals":["States.HeartbeatTimeout"],"MaxAttempts":1}]`,
			`{}`, blocksOnce(`{"route":"none"}`), `{"route":"none"}`, "", ""},
		{"a task that answers in time", `"HeartbeatSeconds":99998,"TimeoutSeconds":99999`, `{"route":"none"}`, echo, `{"route":"none"}`, "", ""},
		{"HeartbeatSecondsPath", `"HeartbeatSecondsPath":"$.hb"`, `{"hb":1}`, blocks, "", ErrHeartbeatTimeout, hbCause},
		{"HeartbeatSecondsPath after InputPath", `"InputPath":"$.cfg","HeartbeatSecondsPath":"$.hb"`, `{"cfg":{"hb":1}}`, blocks, "", ErrHeartbeatTimeout, hbCause},
		{"TimeoutSecondsPath", `"TimeoutSecondsPath":"$.t"`, `{"t":2}`, blocks, "", ErrTimeout, "TimeoutSeconds (2)"},
		{"TimeoutSecondsPath from the context object", `"TimeoutSecondsPath":"$$.Execution.Input.t"`, `{"t":3}`, blocks, "", ErrTimeout, "TimeoutSeconds (3)"},
		{"TimeoutSecondsPath missing", `"TimeoutSecondsPath":"$.t"`, `{}`, echo, "", ErrRuntime, "TimeoutSecondsPath '$.t' must reference an integer"},
		{"TimeoutSecondsPath zero", `"TimeoutSecondsPath":"$.t"`, `{"t":0}`, echo, "", ErrRuntime, "got 0"},
		{"HeartbeatSecondsPath a string", `"HeartbeatSecondsPath":"$.hb"`, `{"hb":"1"}`, echo, "", ErrRuntime, `got "1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := newInvoker(map[string]invokeFunc{"r": tc.invoke})
			r := runDef(t, catchDef(tc.fields), inv, tc.input)
			if tc.wantOut != "" {
				wantSucceeded(t, r, tc.wantOut)
				return
			}
			wantFailed(t, r, tc.wantError, tc.wantCause)
		})
	}
}

// TestHeartbeatTimeoutEvent: the attempt ends with a TaskTimedOut event
// that names States.HeartbeatTimeout, as the execution history does.
func TestHeartbeatTimeoutEvent(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": waitsForCtx})
	r := runDef(t, taskDef(`"HeartbeatSeconds":1,"TimeoutSeconds":99999`), inv, `{}`)
	wantFailed(t, r, ErrHeartbeatTimeout, "")
	var timedOut *HistoryEvent
	for i := range r.events {
		if r.events[i].Type == "TaskTimedOut" {
			timedOut = &r.events[i]
		}
	}
	if timedOut == nil || timedOut.Error != ErrHeartbeatTimeout || timedOut.Resource != "r" {
		t.Fatalf("TaskTimedOut event = %+v; events %v", timedOut, r.types())
	}
}

// blocksOnce blocks the first call until its context ends and answers
// result afterwards.
func blocksOnce(result string) invokeFunc {
	return func(ctx context.Context, call int, _ json.RawMessage) (json.RawMessage, error) {
		if call == 1 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(result), nil
	}
}
