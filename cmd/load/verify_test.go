package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConserved(t *testing.T) {
	if err := conserved(map[string]int64{"EUR": 200000, "USD": 5}, map[string]int64{"EUR": 200000, "USD": 5}); err != nil {
		t.Errorf("equal sums: %v", err)
	}
	err := conserved(map[string]int64{"EUR": 200000}, map[string]int64{"EUR": 199990})
	if err == nil || !strings.Contains(err.Error(), "EUR 200000 before, 199990 after (-10)") {
		t.Errorf("lost money: %v", err)
	}
	if conserved(map[string]int64{"EUR": 1}, map[string]int64{"EUR": 1, "USD": 3}) == nil {
		t.Error("a currency appearing after: no error")
	}
	if conserved(map[string]int64{"EUR": 1, "USD": 3}, map[string]int64{"EUR": 1}) == nil {
		t.Error("a currency vanishing: no error")
	}
}

func transferAnswer(status int, code, id, state string) answer {
	return answer{Status: status, Code: code, Transfer: transferView{ID: id, Status: state}}
}

func TestTrackerOutcomes(t *testing.T) {
	tr := &tracker{}
	k := &keyState{key: "k1"}
	tr.add(k)
	// No answer yet, then a 503: the key stays unsettled and unstored.
	if bad := tr.outcome(k, answer{}, http.ErrHandlerTimeout); bad != "" {
		t.Errorf("transport error: %q", bad)
	}
	if bad := tr.outcome(k, answer{Status: 503, Code: "service_unavailable"}, nil); bad != "" || k.stored {
		t.Errorf("503: %q stored %v", bad, k.stored)
	}
	if err := allTerminal(tr.unsettled()); err == nil || !strings.Contains(err.Error(), "1 keys never answered") {
		t.Errorf("unanswered key: %v", err)
	}
	if bad := tr.outcome(k, transferAnswer(202, "", "t1", "PENDING"), nil); bad != "" || !k.stored {
		t.Fatalf("202: %q stored %v", bad, k.stored)
	}
	if err := allTerminal(tr.unsettled()); err == nil || !strings.Contains(err.Error(), "1 accepted transfers not terminal") {
		t.Errorf("pending transfer: %v", err)
	}
	if bad := tr.outcome(k, transferAnswer(422, "insufficient_funds", "t1", "FAILED"), nil); bad != "" || k.outcome != "FAILED insufficient_funds" {
		t.Errorf("refused: %q outcome %q", bad, k.outcome)
	}
	// A PENDING answer that arrives late changes nothing.
	if bad := tr.outcome(k, transferAnswer(202, "", "t1", "PENDING"), nil); bad != "" || k.status != "FAILED" {
		t.Errorf("late PENDING: %q status %s", bad, k.status)
	}
	if err := allTerminal(tr.unsettled()); err != nil {
		t.Errorf("all terminal: %v", err)
	}
	// What breaks the contract.
	for name, a := range map[string]answer{
		"another transfer":       transferAnswer(200, "", "t2", "COMPLETED"),
		"another final state":    transferAnswer(200, "", "t1", "COMPLETED"),
		"key reused on a replay": {Status: 422, Code: "idempotency_key_reused"},
		"500":                    {Status: 500},
	} {
		if bad := tr.outcome(k, a, nil); bad == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestVerifyNamesEveryFailure(t *testing.T) {
	st := newStats()
	st.add(opNew, label(502, ""), time.Millisecond)
	st.addUnexpected("key k9: 400 invalid_request")
	tr := &tracker{}
	pending := &keyState{key: "k2", stored: true, transferID: "t2", status: "PENDING"}
	tr.add(pending)
	r := &result{stats: st, outcomes: map[string]int{}, before: map[string]int64{"EUR": 10}, after: map[string]int64{"EUR": 9}}
	r.verify(tr, tr.unsettled())
	all := strings.Join(r.failures, "\n")
	for _, want := range []string{"money not conserved", "1 accepted transfers not terminal", "k2 (t2 PENDING)", "broke the contract", "k9", "server errors other than 503"} {
		if !strings.Contains(all, want) {
			t.Errorf("failures lack %q:\n%s", want, all)
		}
	}
	if r.ok() || r.accepted != 1 {
		t.Errorf("ok %v accepted %d", r.ok(), r.accepted)
	}

	good := &result{stats: newStats(), outcomes: map[string]int{}, before: map[string]int64{"EUR": 10}, after: map[string]int64{"EUR": 10}}
	done := &tracker{}
	done.add(&keyState{key: "k3", stored: true, transferID: "t3", status: "COMPLETED", outcome: "COMPLETED"})
	good.verify(done, done.unsettled())
	if !good.ok() || good.outcomes["COMPLETED"] != 1 {
		t.Errorf("a clean run: failures %q outcomes %v", good.failures, good.outcomes)
	}
}

func TestOutcomeNames(t *testing.T) {
	failed := func(code string, reversed bool) transferView {
		v := transferView{Status: "FAILED"}
		v.Failure = &struct {
			Code     string `json:"code"`
			Reversed bool   `json:"reversed"`
		}{code, reversed}
		return v
	}
	for _, c := range []struct {
		v    transferView
		code string
		want string
	}{
		{transferView{Status: "COMPLETED"}, "", "COMPLETED"},
		{failed("InsufficientFunds", false), "insufficient_funds", "FAILED insufficient_funds"},
		{failed("AccountNotFound", true), "account_not_found", "FAILED account_not_found reversed"},
		{failed("States.Timeout", true), "transfer_failed", "FAILED transfer_failed (States.Timeout) reversed"},
	} {
		if got := c.v.outcome(c.code); got != c.want {
			t.Errorf("outcome %q, want %q", got, c.want)
		}
	}
}
