package apigw

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// Gateway response types (x-amazon-apigateway-gateway-responses) the
// server gives.
const (
	respDefault4XX           = "DEFAULT_4XX"
	respDefault5XX           = "DEFAULT_5XX"
	respResourceNotFound     = "RESOURCE_NOT_FOUND"
	respMissingAuthToken     = "MISSING_AUTHENTICATION_TOKEN"
	respInvalidSignature     = "INVALID_SIGNATURE"
	respExpiredToken         = "EXPIRED_TOKEN"
	respAccessDenied         = "ACCESS_DENIED"
	respRequestTooLarge      = "REQUEST_TOO_LARGE"
	respIntegrationTimeout   = "INTEGRATION_TIMEOUT"
	respIntegrationFailure   = "INTEGRATION_FAILURE"
	respBadRequestParameters = "BAD_REQUEST_PARAMETERS"
	respBadRequestBody       = "BAD_REQUEST_BODY"
	respWAFFiltered          = "WAF_FILTERED"
)

// gatewayResponse is one entry of x-amazon-apigateway-gateway-responses.
type gatewayResponse struct {
	StatusCode         json.RawMessage   `json:"statusCode"`
	ResponseParameters map[string]string `json:"responseParameters"`
	ResponseTemplates  map[string]string `json:"responseTemplates"`
}

// status is the response's statusCode, 0 when it keeps the error's own.
func (g *gatewayResponse) status() int {
	s := strings.Trim(string(g.StatusCode), `"`)
	n, _ := strconv.Atoi(s)
	return n
}

// refusal is one of the gateway's own answers.
type refusal struct {
	// typ is the gateway response type; status the status API Gateway
	// gives it without a gateway response that sets one.
	typ    string
	status int
	// errorType is x-amzn-ErrorType; message $context.error.message;
	// validation $context.error.validationErrorString.
	errorType  string
	message    string
	validation string
}

// gatewayResponseFor returns the gateway response of a type: the type's
// own, else DEFAULT_4XX or DEFAULT_5XX by status.
func (s *Server) gatewayResponseFor(typ string, status int) *gatewayResponse {
	if g := s.responses[typ]; g != nil {
		return g
	}
	if status >= 500 {
		return s.responses[respDefault5XX]
	}
	return s.responses[respDefault4XX]
}

// refuse writes the gateway's answer for a request it does not integrate:
// the API definition's gateway response for the type when there is one,
// else API Gateway's default body, {"message": "..."}.
func (s *Server) refuse(w http.ResponseWriter, requestID string, rf refusal) {
	status, header, body := s.render(requestID, rf)
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// render returns the status, headers and body of a refusal.
func (s *Server) render(requestID string, rf refusal) (int, http.Header, []byte) {
	header := make(http.Header)
	header.Set("x-amzn-ErrorType", rf.errorType)
	g := s.gatewayResponseFor(rf.typ, rf.status)
	if g == nil {
		msg, _ := json.Marshal(rf.message)
		body := []byte(`{"message": ` + string(msg) + `}`)
		header.Set("Content-Type", "application/json")
		header.Set("Content-Length", strconv.Itoa(len(body)))
		return rf.status, header, body
	}
	status := rf.status
	if n := g.status(); n != 0 {
		status = n
	}
	header.Set("Content-Type", "application/json")
	for k, v := range g.ResponseParameters {
		name, ok := strings.CutPrefix(k, "gatewayresponse.header.")
		if !ok || len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
			continue // only static values have a meaning here
		}
		header.Set(name, v[1:len(v)-1])
	}
	tpl, ok := g.ResponseTemplates["application/json"]
	if !ok {
		for _, t := range g.ResponseTemplates {
			tpl = t
			break
		}
	}
	body := []byte(substitute(tpl, map[string]string{
		"requestId":                   requestID,
		"error.responseType":          rf.typ,
		"error.message":               rf.message,
		"error.messageString":         quoteJSON(rf.message),
		"error.validationErrorString": strings.Trim(quoteJSON(rf.validation), `"`),
	}))
	header.Set("Content-Length", strconv.Itoa(len(body)))
	return status, header, body
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

var contextVarRE = regexp.MustCompile(`\$context\.[A-Za-z0-9_.]*[A-Za-z0-9_]`)

// substitute replaces the $context variables of a gateway response
// template; a variable without a value becomes empty, as in API Gateway.
func substitute(tpl string, vars map[string]string) string {
	return contextVarRE.ReplaceAllStringFunc(tpl, func(m string) string {
		return vars[strings.TrimPrefix(m, "$context.")]
	})
}

// Listener wraps a listener so that the requests the HTTP server itself
// refuses before the server sees them (a header value with control
// characters, headers too large, a malformed request line) get the
// gateway's answer for their status (DEFAULT_4XX or DEFAULT_5XX) instead
// of net/http's plain-text one. Serve the Server on it.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return &refusingListener{Listener: ln, s: s}
}

type refusingListener struct {
	net.Listener
	s *Server
}

func (l *refusingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusingConn{Conn: c, s: l.s}, nil
}

type refusingConn struct {
	net.Conn
	s *Server
}

// serverErrorRE matches the whole of a response net/http writes on its
// own when it cannot read a request: a status line, these two headers,
// and a plain-text body. Every response of the Server has other headers.
var serverErrorRE = regexp.MustCompile(`^HTTP/1\.1 ([1-5][0-9][0-9]) [^\r\n]*\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n([^\r\n]*)$`)

func (c *refusingConn) Write(b []byte) (int, error) {
	m := serverErrorRE.FindSubmatch(b)
	if m == nil {
		return c.Conn.Write(b)
	}
	status, _ := strconv.Atoi(string(m[1]))
	text := string(m[2])
	// "400 Bad Request: invalid header value" -> "invalid header value"
	if _, reason, ok := strings.Cut(text, ": "); ok {
		text = reason
	}
	typ, errorType := respDefault4XX, "BadRequestException"
	if status >= 500 {
		typ, errorType = respDefault5XX, "InternalServerErrorException"
	}
	requestID := lambdarun.NewRequestID()
	st, header, body := c.s.render(requestID, refusal{typ: typ, status: status, errorType: errorType, message: text})
	header.Set("Connection", "close")
	header.Set("x-amzn-RequestId", requestID)
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\n", st, http.StatusText(st))
	_ = header.Write(w)
	_, _ = io.WriteString(w, "\r\n")
	_, _ = w.Write(body)
	_ = w.Flush()
	c.s.log.Info("request refused by the HTTP server", "status", st, "reason", text, "requestId", requestID)
	if _, err := c.Conn.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
