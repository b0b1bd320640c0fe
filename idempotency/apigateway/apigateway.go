// Package apigateway makes the Lambda handlers of an API Gateway REST
// API (REST, events.APIGatewayProxyRequest) or HTTP API (HTTP,
// events.APIGatewayV2HTTPRequest) idempotent behind an Idempotency-Key
// header, with idempotency.Do:
//
//   - the key is the header's value (DefaultHeader, or Config.Header;
//     the name is matched in any case) and must pass
//     idempotency.ValidateKey;
//   - the record is kept per caller (Config.Scope: RESTCaller and
//     HTTPCaller by default) and key, so the same key from two callers
//     never meets;
//   - the fingerprint is of the method, the path and the body
//     (CanonicalRequest): the same key with another of them is refused;
//   - the handler's response (status, headers, body) is what is stored
//     and replayed, with the ReplayedHeader. A 5xx response, or an error,
//     releases the key, and a retry runs the handler again; any other
//     status is settled and replayed;
//   - what the wrapper answers itself is an RFC 9457 problem (Problem).
//
// A package of its own, so that a program that uses idempotency.Do
// without API Gateway builds none of aws-lambda-go's events.
package apigateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
)

// DefaultHeader is the header the key is read from when Config.Header is
// empty.
const DefaultHeader = "Idempotency-Key"

// ReplayedHeader is set to "true" on a replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// ProblemContentType is the Content-Type of the wrapper's own answers.
const ProblemContentType = "application/problem+json"

// DefaultUnavailableRetryAfter is the Retry-After of a 503 (the store
// failed) when Config.UnavailableRetryAfter is 0.
const DefaultUnavailableRetryAfter = time.Second

// ErrNoCaller reports a request that carries no caller identity that the
// default scope functions know (RESTCaller, HTTPCaller).
var ErrNoCaller = errors.New("apigateway: the request carries no caller identity")

// Config configures the wrapper of a handler of requests Req.
type Config[Req any] struct {
	// Header is the header that carries the key, matched in any case:
	// DefaultHeader when "".
	Header string
	// OptionalKey lets a request without the header (or with it empty)
	// run the handler without idempotency, as Powertools does by default
	// (raise_on_no_idempotency_key=False). Without it such a request is
	// answered 400, CodeKeyMissing. A malformed key is answered 400
	// either way.
	OptionalKey bool
	// Scope names the caller that the key belongs to: RESTCaller or
	// HTTPCaller when nil. An error is answered 500, CodeNoCaller, and
	// the handler does not run. An API without authentication may
	// return a constant, at the price of one key space for all its
	// callers.
	Scope func(Req) (string, error)
	// UnavailableRetryAfter is the Retry-After of a 503, answered when
	// the store fails before the handler runs: 1s when 0.
	UnavailableRetryAfter time.Duration
}

// Codes of Problem.Code, one for each answer of the wrapper's own.
const (
	// CodeKeyMissing: 400, no key and Config.OptionalKey unset.
	CodeKeyMissing = "idempotency-key-missing"
	// CodeKeyMalformed: 400, a key that fails idempotency.ValidateKey, or
	// a header sent more than once with different values.
	CodeKeyMalformed = "idempotency-key-malformed"
	// CodeKeyInProgress: 409 with Retry-After, another request with the
	// key is still running (idempotency.ErrInProgress).
	CodeKeyInProgress = "idempotency-key-in-progress"
	// CodeKeyReused: 422, the key was used with another method, path or
	// body (idempotency.ErrKeyReused).
	CodeKeyReused = "idempotency-key-reused"
	// CodeNoCaller: 500, Config.Scope found no caller.
	CodeNoCaller = "idempotency-no-caller"
	// CodeStoredFailure: 500, the key holds a failure stored by another
	// user of the same scope (idempotency.ErrStoredFailure); this wrapper
	// never stores one.
	CodeStoredFailure = "idempotency-stored-failure"
	// CodeUnavailable: 503 with Retry-After, the store failed and the
	// handler did not run.
	CodeUnavailable = "idempotency-unavailable"
)

// Problem is the body of the wrapper's own answers (RFC 9457, with
// Content-Type ProblemContentType): Type is "about:blank", Title the
// status's text, and Code one of the Code constants.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// answer is one of the wrapper's own answers.
type answer struct {
	status     int
	code       string
	detail     string
	retryAfter time.Duration // > 0: a Retry-After header
}

func (a answer) headers() map[string]string {
	h := map[string]string{"Content-Type": ProblemContentType}
	if a.retryAfter > 0 {
		h["Retry-After"] = strconv.FormatInt(retrySeconds(a.retryAfter), 10)
	}
	return h
}

func (a answer) body() string {
	b, _ := json.Marshal(Problem{Type: "about:blank", Title: http.StatusText(a.status), Status: a.status, Detail: a.detail, Code: a.code})
	return string(b)
}

// retrySeconds is d in whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// CanonicalRequest is what a request's fingerprint is taken of
// (idempotency.Fingerprint): the method and the path, each preceded by
// its length in bytes and a colon, then the body, base64-decoded when
// API Gateway passed it encoded (IsBase64Encoded). So POST /transfers
// with body {"amount":5} is "4:POST10:/transfers{"amount":5}". Query
// string and headers are not part of it.
func CanonicalRequest(method, path string, body []byte) []byte {
	b := make([]byte, 0, len(method)+len(path)+len(body)+8)
	b = strconv.AppendInt(b, int64(len(method)), 10)
	b = append(b, ':')
	b = append(b, method...)
	b = strconv.AppendInt(b, int64(len(path)), 10)
	b = append(b, ':')
	b = append(b, path...)
	return append(b, body...)
}

// bodyBytes is a request's body, base64-decoded when encoded (as it is
// when it is not valid base64).
func bodyBytes(body string, encoded bool) []byte {
	if encoded {
		if b, err := base64.StdEncoding.DecodeString(body); err == nil {
			return b
		}
	}
	return []byte(body)
}

// keyState is what a request's key header holds.
type keyState int

const (
	keyPresent keyState = iota
	keyMissing
	keyRepeated
)

// lookup finds header name in single (or multi, when it holds it), in
// any case, and tells whether it is there once with one value.
func lookup(single map[string]string, multi map[string][]string, name string) (string, keyState) {
	var values []string
	for k, vs := range multi {
		if strings.EqualFold(k, name) {
			values = append(values, vs...)
		}
	}
	if values == nil {
		for k, v := range single {
			if strings.EqualFold(k, name) {
				values = append(values, v)
			}
		}
	}
	var key string
	for _, v := range values {
		switch {
		case v == "":
		case key == "":
			key = v
		case v != key:
			return "", keyRepeated
		}
	}
	if key == "" {
		return "", keyMissing
	}
	return key, keyPresent
}

// caller is a default scope: kind and the quoted parts.
func caller(kind string, parts ...string) string {
	s := kind
	for _, p := range parts {
		s += " " + strconv.Quote(p)
	}
	return s
}

// RESTCaller is the default scope of a REST API request: the caller its
// authorizer or IAM authentication named, the first of
//
//   - a Cognito user pool authorizer's token: `jwt "<iss>" "<sub>"`, from
//     requestContext.authorizer.claims;
//   - a Lambda authorizer's principal: `lambda "<principalId>"`;
//   - a Cognito identity pool's identity: `cognito-identity "<id>"`, from
//     requestContext.identity.cognitoIdentityId (before the user ARN,
//     which is the pool's role, the same for all its identities);
//   - an IAM caller: `iam "<userArn>"`, from
//     requestContext.identity.userArn;
//
// each part Go-quoted (strconv.Quote). A request of none of them is
// ErrNoCaller.
func RESTCaller(req events.APIGatewayProxyRequest) (string, error) {
	rc := req.RequestContext
	if claims, ok := rc.Authorizer["claims"].(map[string]any); ok {
		if sub, _ := claims["sub"].(string); sub != "" {
			iss, _ := claims["iss"].(string)
			return caller("jwt", iss, sub), nil
		}
	}
	if p, _ := rc.Authorizer["principalId"].(string); p != "" {
		return caller("lambda", p), nil
	}
	if id := rc.Identity.CognitoIdentityID; id != "" {
		return caller("cognito-identity", id), nil
	}
	if arn := rc.Identity.UserArn; arn != "" {
		return caller("iam", arn), nil
	}
	return "", ErrNoCaller
}

// HTTPCaller is the default scope of an HTTP API request: the first of
//
//   - a JWT authorizer's token: `jwt "<iss>" "<sub>"`, from
//     requestContext.authorizer.jwt.claims;
//   - a Cognito identity pool's identity under IAM authorization:
//     `cognito-identity "<identityId>"`;
//   - an IAM caller: `iam "<userArn>"`;
//
// each part Go-quoted. A request of none of them (a Lambda authorizer's
// included: its context has no standard principal; set Config.Scope) is
// ErrNoCaller.
func HTTPCaller(req events.APIGatewayV2HTTPRequest) (string, error) {
	if a := req.RequestContext.Authorizer; a != nil {
		if a.JWT != nil && a.JWT.Claims["sub"] != "" {
			return caller("jwt", a.JWT.Claims["iss"], a.JWT.Claims["sub"]), nil
		}
		if a.IAM != nil {
			if id := a.IAM.CognitoIdentity.IdentityID; id != "" {
				return caller("cognito-identity", id), nil
			}
			if a.IAM.UserARN != "" {
				return caller("iam", a.IAM.UserARN), nil
			}
		}
	}
	return "", ErrNoCaller
}

// REST returns fn, a REST API's handler, made idempotent by the
// Idempotency-Key header (see the package's documentation). Pass the
// result to lambda.Start.
func REST(i *idempotency.Idempotency, c Config[events.APIGatewayProxyRequest], fn func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	if c.Scope == nil {
		c.Scope = RESTCaller
	}
	return wrap(i, c, flavor[events.APIGatewayProxyRequest, events.APIGatewayProxyResponse]{
		key: func(req events.APIGatewayProxyRequest, name string) (string, keyState) {
			return lookup(req.Headers, req.MultiValueHeaders, name)
		},
		canonical: func(req events.APIGatewayProxyRequest) []byte {
			return CanonicalRequest(req.HTTPMethod, req.Path, bodyBytes(req.Body, req.IsBase64Encoded))
		},
		status: func(r events.APIGatewayProxyResponse) int { return r.StatusCode },
		replayed: func(r *events.APIGatewayProxyResponse) {
			if r.Headers == nil {
				r.Headers = map[string]string{}
			}
			r.Headers[ReplayedHeader] = "true"
		},
		answer: func(a answer) events.APIGatewayProxyResponse {
			return events.APIGatewayProxyResponse{StatusCode: a.status, Headers: a.headers(), Body: a.body()}
		},
	}, fn)
}

// HTTP returns fn, an HTTP API's handler (payload format 2.0), made
// idempotent by the Idempotency-Key header (see the package's
// documentation). Pass the result to lambda.Start.
func HTTP(i *idempotency.Idempotency, c Config[events.APIGatewayV2HTTPRequest], fn func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if c.Scope == nil {
		c.Scope = HTTPCaller
	}
	return wrap(i, c, flavor[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]{
		key: func(req events.APIGatewayV2HTTPRequest, name string) (string, keyState) {
			return lookup(req.Headers, nil, name)
		},
		canonical: func(req events.APIGatewayV2HTTPRequest) []byte {
			return CanonicalRequest(req.RequestContext.HTTP.Method, req.RawPath, bodyBytes(req.Body, req.IsBase64Encoded))
		},
		status: func(r events.APIGatewayV2HTTPResponse) int { return r.StatusCode },
		replayed: func(r *events.APIGatewayV2HTTPResponse) {
			if r.Headers == nil {
				r.Headers = map[string]string{}
			}
			r.Headers[ReplayedHeader] = "true"
		},
		answer: func(a answer) events.APIGatewayV2HTTPResponse {
			return events.APIGatewayV2HTTPResponse{StatusCode: a.status, Headers: a.headers(), Body: a.body()}
		},
	}, fn)
}

// flavor is what differs between REST and HTTP APIs.
type flavor[Req, Resp any] struct {
	key       func(Req, string) (string, keyState)
	canonical func(Req) []byte
	status    func(Resp) int
	replayed  func(*Resp)
	answer    func(answer) Resp
}

// errServerStatus makes Do release the key of a 5xx response.
var errServerStatus = errors.New("apigateway: the handler answered 5xx")

// handlerError carries the handler's own error through Do. It has no
// Unwrap on purpose: a handler's idempotency.Permanent error must not be
// stored, since the handler's failure is a 502 and a retry should run it
// again.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }

// unhide gives back the handler's errors that err carries, as Do
// returned them (alone, or joined with the release's).
func unhide(err error) error {
	if he, ok := err.(*handlerError); ok {
		return he.err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		out := make([]error, len(errs))
		for k, e := range errs {
			out[k] = unhide(e)
		}
		return errors.Join(out...)
	}
	return err
}

func wrap[Req, Resp any](i *idempotency.Idempotency, c Config[Req], f flavor[Req, Resp], fn func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	header := c.Header
	if header == "" {
		header = DefaultHeader
	}
	unavailable := c.UnavailableRetryAfter
	if unavailable <= 0 {
		unavailable = DefaultUnavailableRetryAfter
	}
	return func(ctx context.Context, req Req) (Resp, error) {
		if i.Disabled() {
			return fn(ctx, req)
		}
		key, state := f.key(req, header)
		switch state {
		case keyMissing:
			if c.OptionalKey {
				return fn(ctx, req)
			}
			return f.answer(answer{status: http.StatusBadRequest, code: CodeKeyMissing, detail: "the " + header + " header is required"}), nil
		case keyRepeated:
			return f.answer(answer{status: http.StatusBadRequest, code: CodeKeyMalformed, detail: "the " + header + " header was sent more than once"}), nil
		}
		if err := idempotency.ValidateKey(key); err != nil {
			return f.answer(answer{status: http.StatusBadRequest, code: CodeKeyMalformed, detail: "the " + header + " header must be 1 to 255 printable ASCII characters"}), nil
		}
		scope, err := c.Scope(req)
		if err != nil {
			return f.answer(answer{status: http.StatusInternalServerError, code: CodeNoCaller, detail: "no caller to keep the " + header + " of"}), nil
		}
		canonical := f.canonical(req)
		op := idempotency.Operation[Req]{
			Scope:   scope,
			Key:     key,
			Payload: func(Req) ([]byte, error) { return canonical, nil },
		}
		ran := false
		res, err := idempotency.Do(ctx, i, op, req, func(ctx context.Context, req Req) (Resp, error) {
			ran = true
			resp, err := fn(ctx, req)
			if err != nil {
				return resp, &handlerError{err}
			}
			if f.status(resp) >= 500 {
				return resp, errServerStatus
			}
			return resp, nil
		})
		var ip *idempotency.InProgressError
		switch {
		case err == nil:
			if res.Replayed {
				f.replayed(&res.Output)
			}
			return res.Output, nil
		case ran:
			var he *handlerError
			if errors.As(err, &he) {
				return res.Output, unhide(err)
			}
			// A 5xx (the key released), or a response the store failed
			// to settle: the handler's effects are done, so the client
			// gets its response.
			return res.Output, nil
		case errors.As(err, &ip):
			return f.answer(answer{status: http.StatusConflict, code: CodeKeyInProgress, detail: "a request with this " + header + " is in progress", retryAfter: max(ip.RetryAfter, time.Second)}), nil
		case errors.Is(err, idempotency.ErrKeyReused):
			return f.answer(answer{status: http.StatusUnprocessableEntity, code: CodeKeyReused, detail: "this " + header + " was used with another request"}), nil
		case errors.Is(err, idempotency.ErrStoredFailure):
			return f.answer(answer{status: http.StatusInternalServerError, code: CodeStoredFailure, detail: "this " + header + " holds a stored failure"}), nil
		default:
			return f.answer(answer{status: http.StatusServiceUnavailable, code: CodeUnavailable, detail: "the idempotency store is unavailable", retryAfter: unavailable}), nil
		}
	}
}
