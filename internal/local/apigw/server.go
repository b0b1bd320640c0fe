// Package apigw is a local Amazon API Gateway REST API with Lambda proxy
// integrations (payload format 1.0): it turns each HTTP request into the
// event API Gateway sends, invokes the route's function and turns its
// APIGatewayProxyResponse back into the HTTP response, with API Gateway's
// error responses for function errors and timeouts.
package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
	"github.com/exactlyonce/transfers/internal/spec"
)

const (
	// DefaultIntegrationTimeout is API Gateway's integration timeout.
	DefaultIntegrationTimeout = 29 * time.Second
	// DefaultMaxBodyBytes is API Gateway's payload limit (10 MB).
	DefaultMaxBodyBytes = 10 << 20
	// DefaultMaxHeaderBytes caps the request line and headers near API
	// Gateway's limit of about 10 KB for them; larger requests are
	// refused with 431.
	DefaultMaxHeaderBytes = 10 << 10
	// DefaultReadTimeout bounds reading a whole request, headers and
	// body: a client that stalls its body is cut off.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds how long a kept-alive connection waits
	// for its next request.
	DefaultIdleTimeout = 60 * time.Second
	// headerSlack is what net/http accepts beyond http.Server's
	// MaxHeaderBytes (its bufio slop, 4096 bytes in go1.26's
	// net/http/server.go initialReadLimitSize).
	headerSlack = 4096
)

// Invoker invokes Lambda functions by name; *lambdarun.Registry is one.
type Invoker interface {
	InvokeFunction(ctx context.Context, functionName string, payload []byte) ([]byte, *lambdarun.FunctionError, error)
}

// Route is one method of one resource, integrated with a function.
type Route struct {
	// Method is an HTTP method or ANY.
	Method string
	// Path is the resource path: literal segments, {param} segments and a
	// final greedy {param+}, e.g. /transfers/{transferId} or /{proxy+}.
	Path string
	// FunctionName is what Invoker is asked to invoke: a name or an ARN.
	FunctionName string
	// Invoker runs the function; nil means Config.Invoker.
	Invoker Invoker
}

// Config configures a Server. Zero fields take the defaults shown.
type Config struct {
	Routes []Route
	// Invoker serves routes that have none.
	Invoker Invoker
	// Stage is the stage name ("Prod"). Requests may include it as the
	// first path segment, as the deployed URL does, or leave it out.
	Stage string
	// AccountID is the account of the API and of local callers
	// ("123456789012").
	AccountID string
	// APIID is the REST API id ("localapi01").
	APIID string
	// BinaryMediaTypes are the request Content-Types whose bodies reach the
	// function base64-encoded, e.g. "application/octet-stream", "image/*",
	// "*/*". The template's "~1" escape for "/" is accepted.
	BinaryMediaTypes []string
	// IntegrationTimeout bounds each invocation (DefaultIntegrationTimeout).
	IntegrationTimeout time.Duration
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Definition is the API's OpenAPI document (JSON or YAML, intrinsic
	// functions resolved). When set, the server validates requests as its
	// x-amazon-apigateway-request-validators say and answers its own
	// refusals with its x-amazon-apigateway-gateway-responses; without it,
	// nothing is validated and refusals get API Gateway's default body,
	// {"message": "..."}.
	Definition []byte
	// CallerRate limits each caller's requests, as the stack's web ACL
	// does in front of the deployed API; the zero value is no limit.
	CallerRate RateLimit
	// WaitRate counts each caller's requests whose Prefer header asks to
	// wait (contains "wait", in any case), as the web ACL's wait rules
	// do: a request over it is passed on with the header WaitLimited
	// ("true") added, the way a rate-based rule's Count action inserts
	// one. The zero value marks none.
	WaitRate    RateLimit
	WaitLimited string
	// ReadTimeout bounds reading one whole request, headers and body
	// (DefaultReadTimeout); IdleTimeout bounds a kept-alive connection's
	// wait for its next request (DefaultIdleTimeout); MaxHeaderBytes caps
	// the request line and headers (DefaultMaxHeaderBytes). They apply to
	// the HTTPServer.
	ReadTimeout    time.Duration
	IdleTimeout    time.Duration
	MaxHeaderBytes int
	// Credentials, when set, turn on SigV4 mode (see Server): the access
	// keys the server knows, by access key id. nil keeps the Bearer mode.
	Credentials map[string]Credential
	// Region is the Region SigV4 signatures must be scoped to
	// (DefaultRegion).
	Region string
	// Now is the clock of requestTime and of signatures' dates (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// RateLimit is a per-caller request limit: at most Limit requests of one
// caller within any Window. The zero value is no limit.
type RateLimit struct {
	Limit  int
	Window time.Duration
}

// Server is the local REST API. It is an http.Handler.
//
// Authorization: the deployed API uses AWS_IAM authorization, where API
// Gateway verifies the SigV4 signature and fills requestContext.identity
// with the signer's IAM identity. The server has two modes.
//
// In the Bearer mode (the default, without Config.Credentials) there are
// no credentials: the caller names itself with "Authorization: Bearer
// <name>", name being an IAM user name (1-64 characters of
// [A-Za-z0-9+=,.@_-]), and the identity is that of IAM user <name> in the
// account (see NewCaller). A request without an Authorization header is
// made as user "local". A present Authorization header that is not a
// Bearer token with a valid name is refused with 403 and the JSON body API
// Gateway sends for requests without valid IAM authentication,
// {"message": "Missing Authentication Token"} (x-amzn-ErrorType
// MissingAuthenticationTokenException); a SigV4 Authorization header is
// refused too, as nothing checks it in this mode.
//
// In the SigV4 mode (Config.Credentials set) every request must be signed
// with one of the known keys, as API Gateway requires: the Authorization
// header's Credential, SignedHeaders and Signature are parsed, the
// credential scope must be the request's X-Amz-Date, Config.Region,
// execute-api and aws4_request, X-Amz-Date within MaxClockSkew of the
// server's clock, and X-Amz-Security-Token the key's session token when it
// has one; then the signature is computed again over the request's method,
// path, query, signed headers and body hash with the key's secret (the
// SDK's v4.Signer, at the request's X-Amz-Date) and must be the one sent.
// The identity is the key's principal (PrincipalCaller). The refusals are
// API Gateway's (AWS's "How do I troubleshoot HTTP 403 errors from API
// Gateway?"), all 403: no Authorization header is
// MISSING_AUTHENTICATION_TOKEN; a header that is not a complete SigV4
// one, a scope, date or signature that does not match are
// INVALID_SIGNATURE (x-amzn-ErrorType IncompleteSignatureException or
// InvalidSignatureException, "Signature expired: ..." for an old date);
// an unknown key or a session token that is not the key's is
// ACCESS_DENIED ("The security token included in the request is
// invalid."); a key past its Credential.Expires is EXPIRED_TOKEN. Only
// the Authorization header form is verified: a signature in the query
// string (a presigned URL) is not, and such a request is refused as
// unsigned. A Bearer header is refused as an incomplete signature.
//
// Unlike API Gateway, which answers 403 Missing Authentication Token for
// any unknown resource or method, the server answers 404 for a path no
// resource matches and 405, with Allow, for a method the matched resource
// lacks, so that routing mistakes are told apart from authorization ones.
//
// With Config.Definition, every refusal of the server is the definition's
// gateway response for its type (a 404 is RESOURCE_NOT_FOUND, a 405
// DEFAULT_4XX, a refused caller MISSING_AUTHENTICATION_TOKEN (or, in the
// SigV4 mode, INVALID_SIGNATURE, ACCESS_DENIED or EXPIRED_TOKEN), a body over
// MaxBodyBytes REQUEST_TOO_LARGE, a caller over Config.CallerRate
// WAF_FILTERED, the request validator's refusals
// BAD_REQUEST_PARAMETERS and BAD_REQUEST_BODY, a function error
// DEFAULT_5XX, a timeout INTEGRATION_TIMEOUT), falling back to DEFAULT_4XX
// or DEFAULT_5XX. Serve it on Listener(ln) so that requests the HTTP
// server rejects before any handler runs get DEFAULT_4XX or DEFAULT_5XX as
// well.
type Server struct {
	cfg       Config
	log       *slog.Logger
	router    router
	binary    []string
	stagePath string
	// spec is the loaded Definition and responses its gateway responses
	// by type; both nil without a Definition.
	spec      *spec.Spec
	responses map[string]*gatewayResponse
	// limiter applies Config.CallerRate; nil without a limit.
	limiter *callerLimiter
	// waits applies Config.WaitRate; nil without one.
	waits *callerLimiter
	// keys are Config.Credentials with their callers; nil in the Bearer
	// mode.
	keys map[string]signingKey
}

// DefaultCaller is the caller of requests without an Authorization header.
const DefaultCaller = "local"

// NewServer checks the routes and returns the server.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Stage == "" {
		cfg.Stage = "Prod"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "123456789012"
	}
	if cfg.APIID == "" {
		cfg.APIID = "localapi01"
	}
	if cfg.IntegrationTimeout <= 0 {
		cfg.IntegrationTimeout = DefaultIntegrationTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxHeaderBytes <= headerSlack {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{cfg: cfg, log: log.With("apiId", cfg.APIID, "stage", cfg.Stage), stagePath: "/" + cfg.Stage,
		limiter: newCallerLimiter(cfg.CallerRate, cfg.Now)}
	if cfg.WaitLimited != "" {
		s.waits = newCallerLimiter(cfg.WaitRate, cfg.Now)
	}
	for _, bt := range cfg.BinaryMediaTypes {
		s.binary = append(s.binary, strings.ToLower(strings.ReplaceAll(bt, "~1", "/")))
	}

	byPath := make(map[string]*resource)
	templates := make(map[string][]segment)
	for i, rt := range cfg.Routes {
		method := strings.ToUpper(rt.Method)
		if method != "ANY" && !slices.Contains(methods, method) {
			return nil, fmt.Errorf("%w: route %d: method %q", ErrInvalidRoute, i, rt.Method)
		}
		if rt.FunctionName == "" {
			return nil, fmt.Errorf("%w: %s %s: no function name", ErrInvalidRoute, method, rt.Path)
		}
		if rt.Invoker == nil && cfg.Invoker == nil {
			return nil, fmt.Errorf("%w: %s %s: no invoker", ErrInvalidRoute, method, rt.Path)
		}
		res := byPath[rt.Path]
		if res == nil {
			segs, err := parseTemplate(rt.Path)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalidRoute, err)
			}
			res = &resource{path: rt.Path, id: resourceID(cfg.APIID, rt.Path), segments: segs, methods: make(map[string]*Route)}
			byPath[rt.Path] = res
			templates[rt.Path] = segs
			s.router.resources = append(s.router.resources, res)
		}
		if res.methods[method] != nil {
			return nil, fmt.Errorf("%w: %s %s is defined twice", ErrInvalidRoute, method, rt.Path)
		}
		route := rt
		route.Method = method
		if route.Invoker == nil {
			route.Invoker = cfg.Invoker
		}
		res.methods[method] = &route
	}
	if err := checkSiblings(templates); err != nil {
		return nil, err
	}
	if len(cfg.Definition) > 0 {
		if err := s.loadDefinition(cfg.Definition); err != nil {
			return nil, err
		}
	}
	if len(cfg.Credentials) > 0 {
		if err := s.loadCredentials(cfg.Credentials); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// loadDefinition reads the API definition's request validation and
// gateway responses.
func (s *Server) loadDefinition(def []byte) error {
	doc, err := spec.Load(def)
	if err != nil {
		return fmt.Errorf("apigw: API definition: %w", err)
	}
	s.spec = doc
	s.responses = make(map[string]*gatewayResponse)
	raw, ok := doc.Extension("x-amazon-apigateway-gateway-responses")
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("apigw: gateway responses: %w", err)
	}
	if err := json.Unmarshal(b, &s.responses); err != nil {
		return fmt.Errorf("apigw: gateway responses: %w", err)
	}
	return nil
}

// HTTPServer is an HTTP server of s with the connection limits of Config:
// a request must arrive whole within ReadTimeout (headers within the
// lesser of it and 10 s), an idle kept-alive connection is closed after
// IdleTimeout, and a request line and headers over MaxHeaderBytes are
// refused with 431. Serve it on s.Listener so that its own refusals are
// the gateway's responses.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: min(10*time.Second, s.cfg.ReadTimeout),
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		// net/http reads up to MaxHeaderBytes plus its slack.
		MaxHeaderBytes: s.cfg.MaxHeaderBytes - headerSlack,
	}
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	now := s.cfg.Now()
	requestID := lambdarun.NewRequestID()
	extendedID := extendedRequestID()
	w.Header().Set("x-amzn-RequestId", requestID)
	w.Header().Set("x-amz-apigw-id", extendedID)
	log := s.log.With("requestId", requestID, "method", r.Method, "path", r.URL.Path)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		// Per request: DEBUG, so that a load run does not flood the log.
		log.Debug("request", "status", rec.status, "duration", time.Since(start))
	}()
	w = rec

	escaped, path := r.URL.EscapedPath(), r.URL.Path
	if rest, ok := stripStage(escaped, s.stagePath); ok {
		escaped = rest
		path, _ = stripStage(path, s.stagePath)
	}
	if path == "" {
		path = "/"
	}

	res, params := s.router.find(escaped)
	if res == nil {
		s.refuse(w, requestID, refusal{typ: respResourceNotFound, status: http.StatusNotFound, errorType: "NotFoundException", message: "Not Found"})
		return
	}
	route := res.methods[r.Method]
	if route == nil {
		route = res.methods["ANY"]
	}
	if route == nil {
		w.Header().Set("Allow", res.allowed())
		s.refuse(w, requestID, refusal{typ: respDefault4XX, status: http.StatusMethodNotAllowed, errorType: "MethodNotAllowedException", message: "Method Not Allowed"})
		return
	}
	log = log.With("resource", res.path, "function", route.FunctionName)

	// A signature covers the body: in the SigV4 mode it is read first.
	var body []byte
	if s.keys != nil {
		var ok bool
		if body, ok = s.readBody(w, r, requestID, log); !ok {
			return
		}
	}
	caller, rf := s.authenticate(r, body)
	if rf != nil {
		log.Debug("request refused by the authorization", "responseType", rf.typ, "errorType", rf.errorType, "message", rf.message)
		s.refuse(w, requestID, *rf)
		return
	}

	if !s.limiter.allow(caller.ARN) {
		// The web ACL answers before API Gateway reads the request.
		log.Info("request refused by the per-caller rate limit", "caller", caller.ARN)
		s.refuse(w, requestID, wafFiltered)
		return
	}
	if s.waits != nil && asksToWait(r) && !s.waits.allow(caller.ARN) {
		log.Info("request marked by the per-caller wait limit", "caller", caller.ARN)
		r.Header.Set(s.cfg.WaitLimited, "true")
	}

	if s.keys == nil {
		var ok bool
		if body, ok = s.readBody(w, r, requestID, log); !ok {
			return
		}
	}

	if rerr := s.validate(r, res, route, body); rerr != nil {
		log.Debug("request refused by the request validator", "responseType", rerr.ResponseType, "validation", rerr.Validation)
		s.refuse(w, requestID, refusal{typ: rerr.ResponseType, status: http.StatusBadRequest, errorType: "BadRequestException",
			message: rerr.Message, validation: rerr.Validation})
		return
	}

	event := s.event(r, res, route, params, path, body, caller, requestID, extendedID, now)
	payload, err := json.Marshal(event)
	if err != nil {
		log.Error("encoding the proxy event", "error", err)
		s.refuse(w, requestID, internalError)
		return
	}
	s.integrate(w, r, route, payload, requestID, log)
}

// readBody reads the whole request body, up to MaxBodyBytes; it refuses
// the request and returns false when it cannot.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, requestID string, log *slog.Logger) ([]byte, bool) {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		s.refuse(w, requestID, tooLarge)
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		log.Warn("reading request body", "error", err)
		s.refuse(w, requestID, refusal{typ: respDefault4XX, status: http.StatusBadRequest, errorType: "BadRequestException", message: "Bad Request"})
		return nil, false
	}
	if int64(len(body)) > s.cfg.MaxBodyBytes {
		s.refuse(w, requestID, tooLarge)
		return nil, false
	}
	return body, true
}

var (
	// wafFiltered is API Gateway's answer to a request its web ACL
	// blocked: 403 unless the WAF_FILTERED gateway response says
	// otherwise.
	wafFiltered   = refusal{typ: respWAFFiltered, status: http.StatusForbidden, errorType: "WAFFilteredException", message: "Forbidden"}
	tooLarge      = refusal{typ: respRequestTooLarge, status: http.StatusRequestEntityTooLarge, errorType: "RequestTooLongException", message: "Request Too Long"}
	internalError = refusal{typ: respDefault5XX, status: http.StatusInternalServerError, errorType: "InternalServerErrorException", message: "Internal server error"}
	badGateway    = refusal{typ: respDefault5XX, status: http.StatusBadGateway, errorType: "InternalServerErrorException", message: "Internal server error"}
)

// validate applies the definition's request validator to the route's
// operation; nil without a definition or when the operation is not in it.
func (s *Server) validate(r *http.Request, res *resource, route *Route, body []byte) *spec.RequestError {
	if s.spec == nil {
		return nil
	}
	method := route.Method
	if method == "ANY" {
		method = r.Method
	}
	op, err := s.spec.Find(method, res.path)
	if err != nil {
		return nil
	}
	query, _ := url.ParseQuery(r.URL.RawQuery)
	return s.spec.ValidateRequest(op, r.Header, query, body)
}

// stripStage removes a leading /<stage> path segment.
func stripStage(p, stagePath string) (string, bool) {
	if p == stagePath {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, stagePath+"/"); ok {
		return "/" + rest, true
	}
	return p, false
}

// authenticate returns the caller of a request, or the refusal of a
// request that has none; see Server. body is the request's body in the
// SigV4 mode.
func (s *Server) authenticate(r *http.Request, body []byte) (Caller, *refusal) {
	if s.keys != nil {
		return s.verifySigV4(r, body)
	}
	if c, ok := s.bearerCaller(r); ok {
		return c, nil
	}
	return Caller{}, &missingAuthToken
}

// bearerCaller is the caller of a request in the Bearer mode.
func (s *Server) bearerCaller(r *http.Request) (Caller, bool) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return NewCaller(s.cfg.AccountID, DefaultCaller), true
	}
	if len(values) > 1 {
		return Caller{}, false
	}
	scheme, name, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	name = strings.TrimSpace(name)
	if !ok || !strings.EqualFold(scheme, "Bearer") || !validCallerName(name) {
		return Caller{}, false
	}
	return NewCaller(s.cfg.AccountID, name), true
}

func (s *Server) event(r *http.Request, res *resource, route *Route, params map[string]string, path string,
	body []byte, caller Caller, requestID, extendedID string, now time.Time) *requestEvent {
	sourceIP := sourceIPOf(r)
	headers, multiHeaders := headerMaps(r, sourceIP)
	if _, ok := multiHeaders["X-Amzn-Trace-Id"]; !ok {
		tid := traceID(now)
		headers["X-Amzn-Trace-Id"], multiHeaders["X-Amzn-Trace-Id"] = tid, []string{tid}
	}
	query, multiQuery := queryMaps(r.URL.RawQuery)
	eventBody, isBase64 := eventBody(body, isBinary(r.Header.Get("Content-Type"), s.binary))
	return &requestEvent{
		Resource:                        res.path,
		Path:                            path,
		HTTPMethod:                      r.Method,
		Headers:                         headers,
		MultiValueHeaders:               multiHeaders,
		QueryStringParameters:           query,
		MultiValueQueryStringParameters: multiQuery,
		PathParameters:                  params,
		StageVariables:                  nil,
		Body:                            eventBody,
		IsBase64Encoded:                 isBase64,
		RequestContext: requestContext{
			ResourceID:        res.id,
			ResourcePath:      res.path,
			HTTPMethod:        r.Method,
			ExtendedRequestID: extendedID,
			RequestTime:       requestTime(now),
			Path:              contextPath(r),
			AccountID:         s.cfg.AccountID,
			Protocol:          r.Proto,
			Stage:             s.cfg.Stage,
			DomainPrefix:      domainPrefix(r.Host),
			RequestTimeEpoch:  now.UnixMilli(),
			RequestID:         requestID,
			DomainName:        r.Host,
			APIID:             s.cfg.APIID,
			Identity: identity{
				AccountID: caller.AccountID,
				Caller:    caller.UserID,
				SourceIP:  sourceIP,
				AccessKey: caller.AccessKeyID,
				UserArn:   caller.ARN,
				UserAgent: r.UserAgent(),
				User:      caller.UserID,
			},
		},
	}
}

// asksToWait reports whether the request's Prefer header contains "wait"
// in any case: the wait rules' scope-down statement (a ByteMatch,
// CONTAINS, after LOWERCASE).
func asksToWait(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "wait")
}

type invocation struct {
	result []byte
	fnErr  *lambdarun.FunctionError
	err    error
}

// integrate invokes the function and writes its response.
func (s *Server) integrate(w http.ResponseWriter, r *http.Request, route *Route, payload []byte, requestID string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.IntegrationTimeout)
	defer cancel()
	done := make(chan invocation, 1)
	go func() {
		var inv invocation
		defer func() {
			if v := recover(); v != nil {
				inv = invocation{err: fmt.Errorf("apigw: invoker panicked: %v", v)}
			}
			done <- inv
		}()
		inv.result, inv.fnErr, inv.err = route.Invoker.InvokeFunction(ctx, route.FunctionName, payload)
	}()

	var (
		inv       invocation
		throttled *lambdarun.ServiceError
	)
	select {
	case inv = <-done:
	case <-ctx.Done():
		inv.err = context.Cause(ctx)
	}
	switch {
	case r.Context().Err() != nil:
		log.Warn("client went away before the integration answered", "error", context.Cause(r.Context()))
		return
	case inv.err != nil && ctx.Err() != nil:
		log.Error("integration timed out", "timeout", s.cfg.IntegrationTimeout, "error", inv.err)
		s.refuse(w, requestID, refusal{typ: respIntegrationTimeout, status: http.StatusGatewayTimeout, errorType: "InternalServerErrorException", message: "Endpoint request timed out"})
		return
	case errors.As(inv.err, &throttled) && throttled.Type == lambdarun.ErrorTypeTooManyRequests:
		// The function's reserved concurrency is in use: API Gateway
		// answers INTEGRATION_FAILURE.
		log.Warn("the function is throttled", "error", inv.err)
		s.refuse(w, requestID, refusal{typ: respIntegrationFailure, status: http.StatusGatewayTimeout, errorType: "InternalServerErrorException", message: "Execution failed due to limit exceeded"})
		return
	case inv.err != nil:
		log.Error("invoking the function failed", "error", inv.err)
		s.refuse(w, requestID, internalError)
		return
	case inv.fnErr != nil:
		log.Error("function error", "errorType", inv.fnErr.Type, "errorMessage", inv.fnErr.Message, "stackTrace", inv.fnErr.StackTrace)
		s.refuse(w, requestID, badGateway)
		return
	}
	resp, err := parseResponse(inv.result)
	if err != nil {
		log.Error("malformed Lambda proxy response", "error", err, "response", truncate(inv.result, 1024))
		s.refuse(w, requestID, badGateway)
		return
	}
	resp.write(w)
}

// proxyResponse is the function's events.APIGatewayProxyResponse, checked.
type proxyResponse struct {
	status  int
	headers http.Header
	body    []byte
}

// remappedHeaders are response headers API Gateway does not pass through
// as they are: it sends them as x-amzn-Remapped-<name>.
var remappedHeaders = []string{"Connection", "Content-Length", "Date", "Server", "Transfer-Encoding", "Upgrade"}

func parseResponse(raw []byte) (*proxyResponse, error) {
	var out struct {
		StatusCode        *int                `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
		Body              *string             `json:"body"`
		IsBase64Encoded   bool                `json:"isBase64Encoded"`
	}
	if !strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		return nil, errors.New("response is not a JSON object")
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding the response: %w", err)
	}
	if out.StatusCode == nil {
		return nil, errors.New("statusCode is missing")
	}
	if *out.StatusCode < 100 || *out.StatusCode > 599 {
		return nil, fmt.Errorf("statusCode %d is not an HTTP status", *out.StatusCode)
	}
	resp := &proxyResponse{status: *out.StatusCode, headers: make(http.Header)}
	for k, vs := range out.MultiValueHeaders {
		for _, v := range vs {
			resp.headers.Add(k, v)
		}
	}
	for k, v := range out.Headers {
		// A header in both maps takes its values from multiValueHeaders.
		if _, ok := resp.headers[http.CanonicalHeaderKey(k)]; !ok {
			resp.headers.Set(k, v)
		}
	}
	for _, h := range remappedHeaders {
		if vs, ok := resp.headers[h]; ok {
			delete(resp.headers, h)
			resp.headers["X-Amzn-Remapped-"+h] = vs
		}
	}
	if resp.headers.Get("Content-Type") == "" {
		resp.headers.Set("Content-Type", "application/json")
	}
	if out.Body != nil {
		if out.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(*out.Body)
			if err != nil {
				return nil, fmt.Errorf("body is not valid base64: %w", err)
			}
			resp.body = b
		} else {
			resp.body = []byte(*out.Body)
		}
	}
	return resp, nil
}

func (p *proxyResponse) write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range p.headers {
		h[k] = vs
	}
	h.Set("Content-Length", strconv.Itoa(len(p.body)))
	w.WriteHeader(p.status)
	_, _ = w.Write(p.body)
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// statusRecorder records the status for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// contextPath is requestContext.path: the path as the client called it,
// with the stage segment when the client sent one (as on the execute-api
// URL) and without it otherwise (as through a custom domain).
func contextPath(r *http.Request) string {
	if r.URL.Path == "" {
		return "/"
	}
	return r.URL.Path
}
