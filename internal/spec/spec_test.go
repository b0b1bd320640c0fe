package spec_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/exactlyonce/transfers/internal/spec"
)

func TestSourceLoads(t *testing.T) {
	s, err := spec.Source()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.Routes() {
		got = append(got, r.Method+" "+r.Path)
	}
	want := []string{"GET /accounts/{accountId}", "GET /accounts/{accountId}/entries", "GET /transfers", "POST /transfers", "GET /transfers/{transferId}"}
	if len(got) != len(want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("routes %v, want %v", got, want)
		}
	}
}

func TestCheckResponse(t *testing.T) {
	s, err := spec.Source()
	if err != nil {
		t.Fatal(err)
	}
	transfer := `{"transferId":"t-1","status":"PENDING","sourceAccountId":"a","destinationAccountId":"b","amount":250,"currency":"EUR","createdAt":"2026-11-22T08:30:46.145Z"}`
	problem := func(code string, status int) string {
		return `{"type":"/problems/` + code + `","title":"T","status":` + strconv.Itoa(status) + `,"code":"` + code + `"}`
	}
	json := http.Header{"Content-Type": {"application/json"}}
	problemJSON := http.Header{"Content-Type": {"application/problem+json"}}
	cases := []struct {
		name         string
		method, path string
		status       int
		header       http.Header
		body         string
		ok           bool
	}{
		{name: "accepted", method: "POST", path: "/transfers", status: 202,
			header: http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/transfers/t-1"}}, body: transfer, ok: true},
		{name: "accepted without Location", method: "POST", path: "/transfers", status: 202, header: json, body: transfer},
		{name: "replayed header not true", method: "POST", path: "/transfers", status: 200,
			header: http.Header{"Content-Type": {"application/json"}, "Location": {"/transfers/t-1"}, "Idempotent-Replayed": {"yes"}}, body: transfer},
		{name: "transfer with an unknown field", method: "GET", path: "/transfers/t-1", status: 200, header: json,
			body: transfer[:len(transfer)-1] + `,"memo":"x"}`},
		{name: "transfer by template", method: "GET", path: "/transfers/{transferId}", status: 200, header: json, body: transfer, ok: true},
		{name: "undeclared code", method: "GET", path: "/transfers/t-1", status: 404, header: problemJSON, body: problem("gone", 404)},
		{name: "declared code", method: "GET", path: "/transfers/t-1", status: 404, header: problemJSON, body: problem("not_found", 404), ok: true},
		{name: "problem as application/json", method: "GET", path: "/transfers/t-1", status: 404, header: json, body: problem("not_found", 404)},
		{name: "503 without Retry-After", method: "GET", path: "/accounts/a", status: 503, header: problemJSON, body: problem("service_unavailable", 503)},
		{name: "503 with Retry-After", method: "GET", path: "/accounts/a", status: 503,
			header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"1"}}, body: problem("service_unavailable", 503), ok: true},
		{name: "unknown route, problem", method: "DELETE", path: "/transfers", status: 403, header: problemJSON, body: problem("missing_authentication_token", 403), ok: true},
		{name: "unknown route, plain message", method: "DELETE", path: "/transfers", status: 403, header: json, body: `{"message":"Missing Authentication Token"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CheckResponse(tc.method, tc.path, tc.status, tc.header, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("CheckResponse = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestValidateRequest(t *testing.T) {
	s, err := spec.LoadFile(spec.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	post, err := s.Find("POST", "/transfers")
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(ct string) http.Header {
		h := http.Header{"Idempotency-Key": {"k1"}}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		return h
	}
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   string // response type, "" when accepted
	}{
		{name: "object", header: withKey("application/json"), body: `{"amount":1}`},
		{name: "object with charset", header: withKey("application/json; charset=utf-8"), body: `{}`},
		{name: "no Content-Type is JSON", header: withKey(""), body: `[]`, want: spec.BadRequestBody},
		{name: "array", header: withKey("application/json"), body: `[]`, want: spec.BadRequestBody},
		{name: "not JSON", header: withKey("application/json"), body: `{"a":`, want: spec.BadRequestBody},
		{name: "two values", header: withKey("application/json"), body: `{}{}`, want: spec.BadRequestBody},
		{name: "empty", header: withKey("application/json"), body: ``, want: spec.BadRequestBody},
		{name: "other media type is not checked", header: withKey("text/plain"), body: `hello`},
		{name: "no key", header: http.Header{"Content-Type": {"application/json"}}, body: `{}`, want: spec.BadRequestParameters},
		{name: "empty key is present", header: http.Header{"Idempotency-Key": {""}}, body: `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if rerr := s.ValidateRequest(post, tc.header, nil, []byte(tc.body)); rerr != nil {
				got = rerr.ResponseType
				if rerr.Message == "" || rerr.Validation == "" {
					t.Errorf("error %+v without message", rerr)
				}
			}
			if got != tc.want {
				t.Fatalf("ValidateRequest = %q, want %q", got, tc.want)
			}
		})
	}
}
