package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/reservation"
)

const (
	completedResponse = `{"transferId":"transfer-1","status":"COMPLETED","sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR","createdAt":"2026-05-04T09:08:07.654Z","settledAt":"2026-05-04T09:08:07.912Z"}`
	failedResponse    = `{"transferId":"transfer-1","status":"FAILED","sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR","createdAt":"2026-05-04T09:08:07.654Z","settledAt":"2026-05-04T09:08:07.912Z","failure":{"code":"InsufficientFunds","detail":"balance too low"}}`
)

func preferring(req events.APIGatewayProxyRequest, prefer ...string) events.APIGatewayProxyRequest {
	req.MultiValueHeaders = map[string][]string{"Prefer": prefer}
	return req
}

// Prefer: wait=N waits for the transfer to settle (the test's workflow
// never settles the record; the test does, as MarkCompleted would) and
// answers its final state: 201 to the request that created it, the
// stored failure as a replay answers it, 200 to a replay; 202 when it is
// still running at the end of the wait. Preference-Applied names the wait
// honoured, capped at api.MaxWait; a request without a valid preference
// is answered as before.
func TestPreferWait(t *testing.T) {
	tests := []struct {
		name string
		// first is sent, and answered, before the record settles (nil:
		// none).
		first   *events.APIGatewayProxyRequest
		req     events.APIGatewayProxyRequest
		settle  reservation.Status
		respond string
		// settleAfter: when the record settles after the request is sent
		// (0: never).
		settleAfter  time.Duration
		wantStatus   int
		wantApplied  string
		wantReplayed bool
		wantCode     string
	}{
		{name: "completes within the wait", req: preferring(post(alice, "k", body), "wait=5"),
			settle: reservation.StatusCompleted, respond: completedResponse, settleAfter: 150 * time.Millisecond,
			wantStatus: http.StatusCreated, wantApplied: "wait=5"},
		{name: "fails within the wait", req: preferring(post(alice, "k", body), "respond-async, wait=5"),
			settle: reservation.StatusFailed, respond: failedResponse, settleAfter: 150 * time.Millisecond,
			wantStatus: http.StatusUnprocessableEntity, wantApplied: "wait=5", wantCode: "insufficient_funds"},
		{name: "still running when the wait ends", req: preferring(post(alice, "k", body), "wait=1"),
			wantStatus: http.StatusAccepted, wantApplied: "wait=1"},
		{name: "a replay of a pending key waits", first: ptr(post(alice, "k", body)), req: preferring(post(alice, "k", body), "wait=5"),
			settle: reservation.StatusCompleted, respond: completedResponse, settleAfter: 150 * time.Millisecond,
			wantStatus: http.StatusOK, wantApplied: "wait=5", wantReplayed: true},
		{name: "a replay of a failed key answers at once", first: ptr(post(alice, "k", body)), req: preferring(post(alice, "k", body), "wait=5"),
			settle: reservation.StatusFailed, respond: failedResponse,
			wantStatus: http.StatusUnprocessableEntity, wantApplied: "wait=5", wantReplayed: true, wantCode: "insufficient_funds"},
		{name: "the wait is capped", req: preferring(post(alice, "k", body), "wait=3600"),
			settle: reservation.StatusCompleted, respond: completedResponse, settleAfter: 150 * time.Millisecond,
			wantStatus: http.StatusCreated, wantApplied: "wait=10"},
		{name: "the first wait counts", req: preferring(post(alice, "k", body), "wait=1", "wait=9"),
			wantStatus: http.StatusAccepted, wantApplied: "wait=1"},
		{name: "an invalid wait is ignored", req: preferring(post(alice, "k", body), "wait=soon"),
			wantStatus: http.StatusAccepted},
		{name: "no preference", req: post(alice, "k", body),
			wantStatus: http.StatusAccepted},
		// The web ACL marks a caller's waits over CallerWaitLimit: they
		// are answered at once, as without the preference.
		{name: "a wait over the caller's wait limit is answered at once", req: waitLimited(preferring(post(alice, "k", body), "wait=5")),
			settle: reservation.StatusCompleted, respond: completedResponse, settleAfter: 150 * time.Millisecond,
			wantStatus: http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.first != nil {
				if r := e.do(*tt.first); r.StatusCode != http.StatusAccepted {
					t.Fatalf("first request: %d %s", r.StatusCode, r.Body)
				}
				if tt.settleAfter == 0 && tt.settle != "" {
					rec, _ := e.store.Get(context.Background(), aliceScope, "k")
					e.setRecord(rec.Key, tt.settle, tt.respond)
				}
			}
			if tt.settleAfter > 0 {
				done := make(chan struct{})
				defer func() { <-done }()
				go func() {
					defer close(done)
					time.Sleep(tt.settleAfter)
					rec, err := e.store.Get(context.Background(), aliceScope, "k")
					if err != nil {
						t.Errorf("read the record to settle: %v", err)
						return
					}
					e.setRecord(rec.Key, tt.settle, tt.respond)
				}()
			}
			resp := e.do(tt.req)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, resp.Body)
			}
			if got := resp.Headers[api.HeaderPreferenceApplied]; got != tt.wantApplied {
				t.Errorf("Preference-Applied %q, want %q", got, tt.wantApplied)
			}
			if got := resp.Headers[api.HeaderReplayed] == "true"; got != tt.wantReplayed {
				t.Errorf("Idempotent-Replayed %v, want %v", got, tt.wantReplayed)
			}
			if loc := resp.Headers["Location"]; loc != "/transfers/transfer-1" {
				t.Errorf("Location %q", loc)
			}
			tr := answeredTransfer(t, resp, tt.wantCode)
			if tr.TransferID != "transfer-1" {
				t.Errorf("transfer %+v", tr)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// waitLimited is req as the web ACL passes it on once the caller is over
// its wait limit.
func waitLimited(req events.APIGatewayProxyRequest) events.APIGatewayProxyRequest {
	req.MultiValueHeaders[api.HeaderWaitLimited] = []string{"true"}
	return req
}

// Waiting reads the record with backoff, not in a hot loop: a wait of 2 s
// on a transfer that never settles costs a few dozen reads at most, and a
// request without the preference keeps its two calls (once the container
// remembers the source account's owner, read by a first request).
func TestPreferWaitBacksOff(t *testing.T) {
	e := newEnv(t)
	h, calls := e.counted(true)
	if resp, err := h.Handle(context.Background(), post(alice, "k0", body)); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	calls.Store(0)
	req := post(alice, "k", body)
	resp, err := h.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls without the preference, want 2", n)
	}
	calls.Store(0)
	resp, err = h.Handle(context.Background(), preferring(post(alice, "k2", body), "wait=2"))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	// 2 calls, then reads at 15 ms growing 1.5x to 250 ms: about 14 in
	// 2 s. A loop without backoff would read hundreds of times.
	if n := calls.Load(); n < 5 || n > 30 {
		t.Errorf("%d calls for a 2 s wait, want 2 plus a backed-off handful", n)
	}
}

// The wait ends before the function's deadline, with time to answer 202.
func TestPreferWaitRespectsTheDeadline(t *testing.T) {
	e := newEnv(t)
	deadline := time.Now().Add(1500 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	req := preferring(post(alice, "k", body), "wait=10")
	resp, err := e.handler.Handle(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	conforms(t, req, resp)
	if time.Now().After(deadline) {
		t.Fatal("answered after the function's deadline")
	}
	if resp.StatusCode != http.StatusAccepted || resp.Headers[api.HeaderPreferenceApplied] != "wait=10" {
		t.Fatalf("status %d applied %q: %s", resp.StatusCode, resp.Headers[api.HeaderPreferenceApplied], resp.Body)
	}
}
