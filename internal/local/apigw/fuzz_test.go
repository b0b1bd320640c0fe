package apigw_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/exactlyonce/transfers/internal/local/apigw"
)

var callerNameRE = regexp.MustCompile(`^[A-Za-z0-9+=,.@_-]{1,64}$`)

// FuzzEvent: for any method, path, query, headers and body the server
// never panics, and the event a function receives carries the request's
// method and body (byte for byte: as text when it is valid UTF-8, base64
// for a binary media type; a text body that is not valid UTF-8 has its bad
// bytes replaced, as API Gateway does) and the identity of the caller the
// Authorization header names by the bearer rule, and of no one else.
// headers is one "Name: value" per line.
func FuzzEvent(f *testing.F) {
	transfer := `{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR"}`
	f.Add("POST", "/transfers", "", "Content-Type: application/json\nIdempotency-Key: k1", []byte(transfer), false)
	f.Add("POST", "/Prod/transfers", "", "Authorization: Bearer alice\nContent-Type: application/json", []byte(transfer), false)
	f.Add("GET", "/transfers/abc", "a=1&a=2&b", "Authorization: bearer   bob.smith@example.com  ", []byte(nil), false)
	f.Add("GET", "/files/a/b/c", "", "Authorization: Bearer alice\nAuthorization: Bearer bob", []byte(nil), false)
	f.Add("PUT", "/anything/else", "x=%zz", "Authorization: AWS4-HMAC-SHA256 Credential=AKIA/20260101/us-east-1/execute-api/aws4_request", []byte("x"), false)
	f.Add("POST", "/upload", "", "Content-Type: application/octet-stream", []byte{0xff, 0x00, 0xfe}, false)
	f.Add("POST", "/upload", "", "Content-Type: text/plain; charset=latin1", []byte("caf\xe9"), false)
	f.Add("POST", "/upload", "", "Content-Type: IMAGE/PNG", []byte("\x89PNG\r\n"), true)
	f.Add("DELETE", "/", "", "Host: api.example.com:8443\nX-Forwarded-For: 10.0.0.1", []byte("{}"), true)
	f.Add("GET", "/transfers/%2F..%2F", "", "Authorization: Bearer ", []byte(nil), false)
	f.Add("GET", "/a b/\x00", "", "Authorization:Bearer\talice", []byte(nil), false)
	f.Fuzz(func(t *testing.T, method, path, query, headers string, body []byte, binaryAll bool) {
		h := http.Header{}
		for line := range strings.SplitSeq(headers, "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok {
				h.Add(name, strings.TrimSpace(value))
			}
		}
		req := &http.Request{
			Method:        method,
			URL:           &url.URL{Path: path, RawQuery: query},
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        h,
			Body:          io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)),
			Host:          "127.0.0.1:3000",
			RemoteAddr:    "127.0.0.1:40000",
		}
		if host := h.Get("Host"); host != "" {
			req.Host = host
			h.Del("Host")
		}
		cfg := apigw.Config{BinaryMediaTypes: []string{"application~1octet-stream", "image/*"}}
		if binaryAll {
			cfg.BinaryMediaTypes = []string{"*/*"}
		}
		inv := &fakeInvoker{}
		rec := httptest.NewRecorder()
		newServer(t, inv, cfg).ServeHTTP(rec, req)

		// The caller by the bearer rule: no Authorization header is the
		// default caller; one "Bearer <IAM user name>" is that user;
		// anything else is refused.
		caller, authorized := "", false
		switch auth := h.Values("Authorization"); len(auth) {
		case 0:
			caller, authorized = apigw.DefaultCaller, true
		case 1:
			scheme, name, ok := strings.Cut(strings.TrimSpace(auth[0]), " ")
			name = strings.TrimSpace(name)
			if ok && strings.EqualFold(scheme, "Bearer") && callerNameRE.MatchString(name) {
				caller, authorized = name, true
			}
		}
		if inv.calls() == 0 {
			if !authorized && rec.Code != http.StatusForbidden && rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
				t.Fatalf("refused caller: status %d, want 403 (or 404/405 before authorization)", rec.Code)
			}
			return
		}
		if !authorized {
			t.Fatalf("Authorization %q: the function was invoked", h.Values("Authorization"))
		}
		if inv.calls() != 1 {
			t.Fatalf("%d invocations, want 1", inv.calls())
		}
		ev, raw := inv.last(t)
		// (Methods are tokens on the wire; JSON carries other bytes as U+FFFD.)
		if utf8.ValidString(method) && (ev.HTTPMethod != method || ev.RequestContext.HTTPMethod != method) {
			t.Fatalf("httpMethod %q / %q, want %q", ev.HTTPMethod, ev.RequestContext.HTTPMethod, method)
		}

		want := apigw.NewCaller("123456789012", caller)
		id := ev.RequestContext.Identity
		if id.UserArn != want.ARN || id.User != want.UserID || id.Caller != want.UserID || id.AccessKey != want.AccessKeyID ||
			id.AccountID != "123456789012" || id.CognitoIdentityID != "" || id.CognitoAuthenticationProvider != "" {
			t.Fatalf("identity %+v, want that of %q (%+v)", id, caller, want)
		}

		if len(body) == 0 {
			if raw["body"] != nil || ev.IsBase64Encoded {
				t.Fatalf("empty body: event body %v, isBase64Encoded %v, want null, false", raw["body"], ev.IsBase64Encoded)
			}
			return
		}
		mediaType, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
		binary := binaryAll || mediaType == "application/octet-stream" || strings.HasPrefix(mediaType, "image/")
		switch {
		case ev.IsBase64Encoded:
			got, err := base64.StdEncoding.DecodeString(ev.Body)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("base64 body %q (%v) decodes to %q, want %q", ev.Body, err, got, body)
			}
		case binary:
			t.Fatalf("Content-Type %q is binary: body sent as text %q", h.Get("Content-Type"), ev.Body)
		case utf8.Valid(body):
			if ev.Body != string(body) {
				t.Fatalf("text body %q, want %q", ev.Body, body)
			}
		default:
			if want := strings.ToValidUTF8(string(body), "\uFFFD"); ev.Body != want {
				t.Fatalf("text body %q, want %q", ev.Body, want)
			}
		}
	})
}
