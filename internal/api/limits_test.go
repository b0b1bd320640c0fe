package api_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/exactlyonce/transfers/internal/api"
)

// Limits apply to new keys only: after an operator lowers the cap (or
// drops a currency), the replay of a transfer accepted before still gets
// its stored answer, while a new key with the same body is refused.
func TestReplayAfterLimitsChanged(t *testing.T) {
	e := newEnv(t)
	const big = `{"sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":900000,"currency":"EUR"}`
	first := e.do(post(alice, "k-big", big))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first = %d %s, want 202", first.StatusCode, first.Body)
	}
	accepted := transferOf(t, first)

	// The operator lowers MaxTransferAmount below the accepted amount.
	e.handler = api.New(api.Config{StateMachineArn: e.arn, MaxAmount: 1000, Cursors: testCursors}, e.store, e.sfn, e.ledger,
		func() string { e.ids++; return fmt.Sprintf("transfer-%d", e.ids) }, slog.New(slog.DiscardHandler))

	cases := []struct {
		name       string
		key        string
		wantStatus int
		wantID     string
	}{
		{"replay of the accepted transfer", "k-big", http.StatusAccepted, accepted.TransferID},
		{"new key over the new cap", "k-new", http.StatusBadRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(post(alice, tc.key, big))
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, resp.Body, tc.wantStatus)
			}
			if tc.wantID != "" {
				if got := transferOf(t, resp); got.TransferID != tc.wantID || resp.Headers[api.HeaderReplayed] != "true" {
					t.Errorf("answer %s (replayed %q), want the replay of %s", resp.Body, resp.Headers[api.HeaderReplayed], tc.wantID)
				}
				return
			}
			if p := problemOf(t, resp); p.Code != "invalid_request" {
				t.Errorf("problem %+v, want invalid_request", p)
			}
		})
	}
	// Another caller's key of the same name is a new key for them.
	if resp := e.do(post(bob, "k-big", big)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bob's k-big = %d %s, want 400", resp.StatusCode, resp.Body)
	}
}

// A body that is not valid UTF-8 is refused before anything is stored:
// decoding would replace the bad bytes with U+FFFD, and two different
// bodies would share one fingerprint.
func TestPostInvalidUTF8(t *testing.T) {
	e := newEnv(t)
	for i, b := range []string{
		"{\"sourceAccountId\":\"acct-a\",\"destinationAccountId\":\"acct-b\",\"amount\":5,\"currency\":\"EUR\",\"reference\":\"caf\xe9\"}",
		"{\"sourceAccountId\":\"acct-a\",\"destinationAccountId\":\"acct-b\",\"amount\":5,\"currency\":\"EUR\",\"reference\":\"caf\xff\"}",
	} {
		resp := e.do(post(alice, fmt.Sprintf("k-utf8-%d", i), b))
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("body %d: status %d %s, want 400", i, resp.StatusCode, resp.Body)
			continue
		}
		if p := problemOf(t, resp); p.Code != "invalid_request" {
			t.Errorf("body %d: problem %+v, want invalid_request", i, p)
		}
	}
	if n := len(e.executions()); n != 0 {
		t.Errorf("%d executions started, want none", n)
	}
}
