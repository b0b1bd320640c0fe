//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestRefusalsAreProblems: the answers API Gateway gives on its own, and
// the orchestrator's refusal of a body that is not JSON, are problem
// documents with a stable code (send checks each against the spec).
func TestRefusalsAreProblems(t *testing.T) {
	valid := func(t *testing.T) []byte {
		b := newBook(t)
		src, dst := b.open(t, "src", "EUR", 100), b.open(t, "dst", "EUR", 0)
		return transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 1, Currency: "EUR"}.body(t)
	}
	cases := []struct {
		name   string
		method string
		path   string
		header http.Header
		body   func(t *testing.T) []byte
		// status and codes: locally and deployed (API Gateway answers 403
		// missing_authentication_token for unknown routes).
		statuses []int
		codes    []string
	}{
		{name: "unknown path", method: http.MethodGet, path: "/nothing/here",
			statuses: []int{404, 403}, codes: []string{"not_found", "missing_authentication_token"}},
		{name: "unknown method", method: http.MethodDelete, path: "/transfers",
			statuses: []int{405, 403}, codes: []string{"request_refused", "missing_authentication_token"}},
		{name: "text/plain body", method: http.MethodPost, path: "/transfers",
			header: http.Header{"Idempotency-Key": {newKey()}, "Content-Type": {"text/plain"}}, body: valid,
			statuses: []int{415}, codes: []string{"unsupported_media_type"}},
		{name: "octet-stream body", method: http.MethodPost, path: "/transfers",
			header: http.Header{"Idempotency-Key": {newKey()}, "Content-Type": {"application/octet-stream"}}, body: valid,
			statuses: []int{415}, codes: []string{"unsupported_media_type"}},
		{name: "body not a JSON object", method: http.MethodPost, path: "/transfers",
			header: http.Header{"Idempotency-Key": {newKey()}}, body: func(*testing.T) []byte { return []byte(`"transfer"`) },
			statuses: []int{400}, codes: []string{"invalid_request"}},
		{name: "no Idempotency-Key", method: http.MethodPost, path: "/transfers", header: http.Header{}, body: valid,
			statuses: []int{400}, codes: []string{"idempotency_key_missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body []byte
			if tc.body != nil {
				body = tc.body(t)
			}
			r, err := tg.first.send(context.Background(), tc.method, tc.path, tc.header, body)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(tc.statuses, r.status) {
				t.Fatalf("%s: status %d, want one of %v", r, r.status, tc.statuses)
			}
			// API Gateway's DEFAULT_4XX answer has no status member.
			expectMediaType(t, r, "application/problem+json")
			var p problemView
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if want := tc.codes[slices.Index(tc.statuses, r.status)]; p.Code != want || p.Type != "/problems/"+want {
				t.Errorf("%s: code %q type %q, want %s", r, p.Code, p.Type, want)
			}
			if p.Status != 0 && p.Status != r.status {
				t.Errorf("%s: problem status %d", r, p.Status)
			}
			if key := tc.header.Get("Idempotency-Key"); key != "" {
				expectNoRecord(t, tg.first, key)
			}
		})
	}
}
