package apigw_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/spec"
)

// specDefinition is the API as API Gateway serves it: the public contract
// merged with its overlay (make api).
func specDefinition(t *testing.T) []byte {
	t.Helper()
	def, err := os.ReadFile(spec.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// serveHTTP serves s on a loopback listener with the HTTP server the local
// stack uses (Server.HTTPServer, on Server.Listener) and returns its
// address.
func serveHTTP(t *testing.T, s *apigw.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer()
	go func() { _ = srv.Serve(s.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// A client that sends its headers and then stalls its body, or that keeps
// an idle connection, is cut off after the read or idle timeout instead of
// holding a connection for ever.
func TestStalledConnectionsTimeOut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name string
		// request is written, and then nothing more.
		request string
		cfg     apigw.Config
	}{
		{name: "stalled body", cfg: apigw.Config{ReadTimeout: timeout},
			request: "POST /transfers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"amount\":"},
		{name: "stalled headers", cfg: apigw.Config{ReadTimeout: timeout},
			request: "POST /transfers HTTP/1.1\r\nHost: x\r\nIdempotency-"},
		{name: "idle connection", cfg: apigw.Config{IdleTimeout: timeout},
			request: "GET /transfers/t HTTP/1.1\r\nHost: x\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{}
			tc.cfg.Routes = []apigw.Route{
				{Method: "POST", Path: "/transfers", FunctionName: "orchestrator"},
				{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "orchestrator"},
			}
			addr := serveHTTP(t, newServer(t, inv, tc.cfg))
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.request); err != nil {
				t.Fatal(err)
			}
			// Read until the server closes the connection; a server
			// without the timeout keeps it open past the deadline.
			if err := conn.SetReadDeadline(time.Now().Add(20 * timeout)); err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the connection is still open after %v", 20*timeout)
			}
			if strings.HasPrefix(tc.name, "stalled") && inv.calls() != 0 {
				t.Errorf("the function ran %d times for an unfinished request", inv.calls())
			}
		})
	}
}

// Request headers are capped near API Gateway's 10 KB: a request just under
// it is served, a larger one is refused with 431 problem+json.
func TestHeaderSizeCap(t *testing.T) {
	tests := []struct {
		name       string
		headerLen  int
		wantStatus int
	}{
		{"8 KB", 8 << 10, http.StatusOK},
		{"12 KB", 12 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"100 KB", 100 << 10, http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveHTTP(t, specServer(t, &fakeInvoker{}, 0))
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req := "GET /transfers/t HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", tc.headerLen) + "\r\n\r\n"
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != http.StatusOK {
				decodeProblem(t, resp.StatusCode, resp.Header, body)
			}
		})
	}
}

// With a per-caller limit, a caller that sends more than Limit requests
// within Window is refused with the definition's WAF_FILTERED gateway
// response (429 problem+json with Retry-After), without its function being
// invoked, while other callers are served; once the window has passed, the
// caller is served again.
func TestCallerRateLimit(t *testing.T) {
	const limit = 5
	const window = time.Minute
	var clock sync.Mutex
	now := fixedNow
	advance := func(d time.Duration) { clock.Lock(); now = now.Add(d); clock.Unlock() }
	inv := &fakeInvoker{}
	s := newServer(t, inv, apigw.Config{
		Routes: []apigw.Route{
			{Method: "POST", Path: "/transfers", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "orchestrator"},
		},
		Definition: specDefinition(t),
		CallerRate: apigw.RateLimit{Limit: limit, Window: window},
		Now:        func() time.Time { clock.Lock(); defer clock.Unlock(); return now },
	})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	get := func(caller string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/transfers/t", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+caller)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for i := range limit {
		if resp := get("flood"); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d of the limit: status %d", i+1, resp.StatusCode)
		}
		advance(window / (2 * limit))
	}
	before := inv.calls()
	resp := get("flood")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request over the limit: status %d, want 429: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After: %v", resp.Header)
	}
	if p := decodeProblem(t, resp.StatusCode, resp.Header, body); p.Code != "rate_limited" {
		t.Errorf("problem code %q, want rate_limited", p.Code)
	}
	if inv.calls() != before {
		t.Errorf("the function ran for a refused request")
	}
	// Another caller is served meanwhile.
	if resp := get("quiet"); resp.StatusCode != http.StatusOK {
		t.Fatalf("another caller: status %d, want 200", resp.StatusCode)
	}
	// The flooding caller is served again once its first request has
	// left the window, for one more request.
	advance(window / 2)
	if resp := get("flood"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the window: status %d, want 200", resp.StatusCode)
	}
	if resp := get("flood"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second request after the window: status %d, want 429", resp.StatusCode)
	}
}

// Without a limit (the zero RateLimit), nothing is refused for its rate.
func TestNoCallerRateLimit(t *testing.T) {
	inv := &fakeInvoker{}
	srv := httptest.NewServer(newServer(t, inv, apigw.Config{
		Routes:     []apigw.Route{{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "orchestrator"}},
		Definition: specDefinition(t),
	}))
	t.Cleanup(srv.Close)
	for i := range 200 {
		resp, err := srv.Client().Get(srv.URL + "/transfers/t")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i+1, resp.StatusCode)
		}
	}
}
