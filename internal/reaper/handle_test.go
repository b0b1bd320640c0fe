package reaper_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestHandleStatusChange settles transfers from the status change events
// the local Step Functions endpoint publishes, each delivered twice.
func TestHandleStatusChange(t *testing.T) {
	tests := []struct {
		name      string
		timeScale float64
		reference string
		// closeExecution closes the execution after the debit and
		// returns its ARN.
		closeExecution func(t *testing.T, e *env, f fixture) string
		// want is the settled transfer; nil: the transfer is resumed.
		want *settled
		// racy: the resumed run times out as fast as the first one (the
		// time scale is the machine's), so a duplicate event may find it
		// closed and resume again; the duplicate is not checked.
		racy bool
	}{
		{
			name:      "FAILED: resumed",
			reference: "LedgerUnavailable",
			closeExecution: func(t *testing.T, e *env, f fixture) string {
				return e.closeExecution(t, f)
			},
		},
		{
			name:      "TIMED_OUT: resumed",
			timeScale: 0.0002,
			reference: runRef,
			closeExecution: func(t *testing.T, e *env, f fixture) string {
				return e.closeExecution(t, f)
			},
			racy: true,
		},
		{
			name:      "ABORTED without a cause: resumed",
			reference: runRef,
			closeExecution: func(t *testing.T, e *env, f fixture) string {
				arn := e.runExecution(t, f)
				e.stop(t, arn)
				return arn
			},
		},
		{
			name:      "ABORTED by an operator: reversed",
			reference: runRef,
			closeExecution: func(t *testing.T, e *env, f fixture) string {
				arn := e.runExecution(t, f)
				e.abort(t, arn)
				return arn
			},
			want: &settled{status: reservation.StatusFailed, code: reaper.CodeAborted, reversed: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{timeScale: tc.timeScale})
			f := e.newTransfer(t, tc.reference, 20*time.Minute)
			e.markInProgress(t, f)
			e.post(t, f, debit)
			arn := tc.closeExecution(t, e, f)
			event := e.events.closed(t, arn)

			r := e.newReaper(t, nil, nil)
			if err := r.Handle(testContext(t), event); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			switch {
			case tc.racy:
				if rec := e.record(t, f); rec.Attempt < 1 || rec.Status.Terminal() {
					t.Fatalf("record = attempt %d %s; want resumed", rec.Attempt, rec.Status)
				}
				return
			case tc.want == nil:
				e.checkResumed(t, f, 1, debit)
			default:
				e.checkSettled(t, f, *tc.want)
			}

			// EventBridge delivers at least once.
			before := e.state(t, f)
			if err := e.newReaper(t, nil, nil).Handle(testContext(t), event); err != nil {
				t.Fatalf("Handle of the duplicate: %v", err)
			}
			e.checkUnchanged(t, f, before)
		})
	}
}

func TestHandleRejectsEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	f := e.newTransfer(t, "LedgerUnavailable", 20*time.Minute)
	arn := e.closeExecution(t, f)
	e.markInProgress(t, f)
	e.post(t, f, debit)
	event := string(e.events.closed(t, arn))
	before := e.state(t, f)
	r := e.newReaper(t, nil, nil)

	// edit rewrites the real event's detail.
	edit := func(t *testing.T, change func(detail map[string]any)) string {
		t.Helper()
		var ev map[string]any
		if err := json.Unmarshal([]byte(event), &ev); err != nil {
			t.Fatal(err)
		}
		change(ev["detail"].(map[string]any))
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	tests := []struct {
		name    string
		event   string
		wantErr bool
		is      error // when set, the error matches it
	}{
		{"not JSON", `{"detail-type":`, true, nil},
		{"unknown detail-type", `{"detail-type":"Object Created","source":"aws.s3","detail":{}}`, true, reaper.ErrUnsupportedEvent},
		{"scheduled event of another source", `{"detail-type":"Scheduled Event","source":"custom.app","detail":{}}`, true, reaper.ErrUnsupportedEvent},
		{"input not JSON", edit(t, func(d map[string]any) { d["input"] = "{" }), true, reaper.ErrMalformedEvent},
		{"input without record key", edit(t, func(d map[string]any) { d["input"] = `{"transferId":"` + f.rec.ResourceID + `"}` }), true, reaper.ErrMalformedEvent},
		{"name differs from the input's transfer", edit(t, func(d map[string]any) { d["name"] = "tr-other" }), true, reaper.ErrMalformedEvent},
		{"another state machine", edit(t, func(d map[string]any) {
			d["stateMachineArn"] = strings.Replace(d["stateMachineArn"].(string), ":Transfer", ":Other", 1)
		}), false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Handle(testContext(t), json.RawMessage(tc.event))
			if (err != nil) != tc.wantErr {
				t.Errorf("Handle = %v; want an error: %t", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Handle = %v; want %v", err, tc.is)
			}
			e.checkUnchanged(t, f, before)
		})
	}
}

func TestHandleScheduledEvent(t *testing.T) {
	e := newEnv(t, envOptions{})
	f := e.newTransfer(t, "LedgerUnavailable", 20*time.Minute)
	e.closeExecution(t, f)
	e.markInProgress(t, f)
	e.post(t, f, debit)

	event := `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event",` +
		`"source":"aws.events","account":"123456789012","time":"2026-01-01T00:00:00Z","region":"us-east-1",` +
		`"resources":["arn:aws:events:us-east-1:123456789012:rule/transfers-Sweep"],"detail":{}}`
	if err := e.newReaper(t, nil, nil).Handle(testContext(t), json.RawMessage(event)); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	e.checkResumed(t, f, 1, debit)
}
