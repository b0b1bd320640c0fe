// Package lambdaapi serves, on one local HTTP endpoint, the AWS APIs a
// CodeDeploy lifecycle hook calls, so that the hook runs offline against
// the local stack with the real AWS SDK clients:
//
//   - Lambda's Invoke (REST: POST /2015-03-31/functions/{FunctionName}/invocations,
//     RequestResponse only), which runs the functions of an Invoker (the
//     local stack's lambdarun.Registry) and answers as Lambda does: the
//     function's result, or its error document with X-Amz-Function-Error,
//     or the service's error (ResourceNotFoundException, ...);
//   - CodeDeploy's PutLifecycleEventHookExecutionStatus (JSON 1.1, X-Amz-Target
//     CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus), whose
//     statuses the CodeDeploy recorder keeps for tests to read.
//
// A client reaches it as any other endpoint: AWS_ENDPOINT_URL_LAMBDA and
// AWS_ENDPOINT_URL_CODEDEPLOY, or the clients' BaseEndpoint.
package lambdaapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// Invoker runs a function synchronously by any reference Lambda's Invoke
// accepts (a name, a partial or full ARN, each optionally qualified);
// *lambdarun.Registry is one. An unknown function is an error matching
// lambdarun.ErrFunctionNotFound.
type Invoker interface {
	InvokeFunction(ctx context.Context, name string, payload []byte) ([]byte, *lambdarun.FunctionError, error)
}

var _ Invoker = (*lambdarun.Registry)(nil)

// Config configures a Server.
type Config struct {
	// Invoker runs the functions; required.
	Invoker Invoker
	// Region and AccountID complete the ARN of a function invoked by its
	// name or partial ARN, as given to Authorize; defaults
	// lambdarun.DefaultRegion and lambdarun.DefaultAccountID.
	Region    string
	AccountID string
	// Authorize, when set, is asked before each invocation whether the
	// request (its SigV4 Authorization header names the caller's
	// credentials; its body is the payload and may be read) may invoke
	// functionARN, the function's full ARN with the qualifier when the
	// request has one. An error refuses the invocation as Lambda refuses
	// it: 403 AccessDeniedException with the error's text.
	Authorize func(r *http.Request, functionARN string) error
	// AuthorizeHookStatus, when set, is asked the same of each
	// PutLifecycleEventHookExecutionStatus, with the deployment's id; an
	// error is answered 400 AccessDeniedException, as CodeDeploy answers.
	AuthorizeHookStatus func(r *http.Request, deploymentID string) error
	// Logger receives a line per request; nil discards.
	Logger *slog.Logger
}

// Server serves both APIs. Use it as an http.Handler or with Listen.
type Server struct {
	// CodeDeploy records the lifecycle hook statuses reported.
	CodeDeploy *CodeDeploy

	cfg  Config
	mux  *http.ServeMux
	log  *slog.Logger
	mu   sync.Mutex
	http *http.Server
}

// New returns a server.
func New(cfg Config) (*Server, error) {
	if cfg.Invoker == nil {
		return nil, errors.New("lambdaapi: an Invoker is required")
	}
	if cfg.Region == "" {
		cfg.Region = lambdarun.DefaultRegion
	}
	if cfg.AccountID == "" {
		cfg.AccountID = lambdarun.DefaultAccountID
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, mux: http.NewServeMux()}
	s.CodeDeploy = &CodeDeploy{authorize: cfg.AuthorizeHookStatus, log: log}
	s.mux.HandleFunc("POST /2015-03-31/functions/{FunctionName}/invocations", s.invoke)
	return s, nil
}

// ServeHTTP routes a request with CodeDeploy's X-Amz-Target to CodeDeploy,
// any other to Lambda's REST API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-RequestId", lambdarun.NewRequestID())
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.CodeDeploy.serve(w, r, target)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		lambdaError(w, http.StatusNotFound, "UnknownOperationException", fmt.Sprintf("no Lambda operation at %s %s locally (Invoke only)", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Listen serves on addr (host:port; "" is 127.0.0.1 on a free port) and
// returns the endpoint, http://host:port.
func (s *Server) Listen(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http != nil {
		return "", errors.New("lambdaapi: already listening")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("lambdaapi: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.http = srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "error", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Shutdown stops serving: it waits for the requests in flight until ctx
// ends. It does nothing when the server never listened.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.http
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("lambdaapi: shutdown: %w", err)
	}
	return nil
}

// maxPayload is Lambda's limit of a synchronous invocation's request.
const maxPayload = 6 * 1024 * 1024

// invoke serves Lambda's Invoke.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	ref, ok := withQualifier(r.PathValue("FunctionName"), r.URL.Query().Get("Qualifier"))
	if !ok {
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", qualifierMismatch)
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "" && t != "RequestResponse" {
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException",
			fmt.Sprintf("InvocationType %s is not served locally: RequestResponse only", t))
		return
	}
	arn, valid := s.functionARN(ref)
	if !valid {
		lambdaError(w, http.StatusBadRequest, "ValidationException",
			fmt.Sprintf("1 validation error detected: Value '%s' at 'functionName' failed to satisfy constraint: Member must satisfy regular expression pattern: (arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}(-gov)?-[a-z]+-\\d{1}:)?(\\d{12}:)?(function:)?([a-zA-Z0-9-_\\.]+)(:(\\$LATEST|[a-zA-Z0-9-_]+))?", ref))
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayload))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException",
				fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", maxPayload))
			return
		}
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not read the request body: "+err.Error())
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(payload))
	log := s.log.With("function", arn)
	if s.cfg.Authorize != nil {
		if err := s.cfg.Authorize(r, arn); err != nil {
			log.WarnContext(r.Context(), "invocation refused", "error", err)
			writeJSON(w, http.StatusForbidden, "AccessDeniedException", map[string]string{"Type": "User", "message": err.Error()})
			return
		}
	}
	out, fnErr, err := s.cfg.Invoker.InvokeFunction(r.Context(), ref, payload)
	var svc *lambdarun.ServiceError
	switch {
	case errors.Is(err, lambdarun.ErrFunctionNotFound):
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+arn)
	case errors.Is(err, lambdarun.ErrInvalidRequestContent):
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json: "+err.Error())
	case errors.As(err, &svc):
		status, code, message := serviceError(svc)
		log.WarnContext(r.Context(), "invocation failed", "error", err)
		lambdaError(w, status, code, message)
	case err != nil:
		log.WarnContext(r.Context(), "invocation failed", "error", err)
		lambdaError(w, http.StatusInternalServerError, "ServiceException", err.Error())
	case fnErr != nil:
		doc, merr := json.Marshal(fnErr)
		if merr != nil {
			lambdaError(w, http.StatusInternalServerError, "ServiceException", merr.Error())
			return
		}
		log.DebugContext(r.Context(), "invoked", "functionError", fnErr.Type)
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		writeResult(w, doc)
	default:
		log.DebugContext(r.Context(), "invoked")
		writeResult(w, out)
	}
}

func writeResult(w http.ResponseWriter, payload []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
}

// serviceErrorStatus is the HTTP status of each error of Lambda's Invoke.
var serviceErrorStatus = map[string]int{
	"AccessDeniedException":          http.StatusForbidden,
	"EC2ThrottledException":          http.StatusBadGateway,
	"InvalidParameterValueException": http.StatusBadRequest,
	"InvalidRequestContentException": http.StatusBadRequest,
	"RequestTooLargeException":       http.StatusRequestEntityTooLarge,
	"ResourceConflictException":      http.StatusConflict,
	"ResourceNotFoundException":      http.StatusNotFound,
	"ResourceNotReadyException":      http.StatusBadGateway,
	"ServiceException":               http.StatusInternalServerError,
	"TooManyRequestsException":       http.StatusTooManyRequests,
}

// serviceError is the answer of a service error of the Invoker, whose
// Type is the error's name as Step Functions gives it (Lambda.X): an
// error of the Invoke API is answered as itself, any other (a client-side
// error such as Lambda.SdkClientException) as a ServiceException.
func serviceError(e *lambdarun.ServiceError) (status int, code, message string) {
	code = strings.TrimPrefix(e.Type, "Lambda.")
	if status, ok := serviceErrorStatus[code]; ok {
		return status, code, e.Message
	}
	return http.StatusInternalServerError, "ServiceException", e.Type + ": " + e.Message
}

// lambdaError writes an error of Lambda's REST API.
func lambdaError(w http.ResponseWriter, status int, code, message string) {
	typ := "User"
	if status >= 500 {
		typ = "Service"
	}
	writeJSON(w, status, code, map[string]string{"Type": typ, "Message": message})
}

func writeJSON(w http.ResponseWriter, status int, code string, body any) {
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// qualifierMismatch is Lambda's answer to a function reference whose
// qualifier is not the Qualifier parameter.
const qualifierMismatch = "The derived qualifier from the function name does not match the specified qualifier."

// withQualifier adds the Qualifier parameter to a function reference; ok
// is false for a reference that has another qualifier of its own, which
// Lambda refuses.
func withQualifier(ref, qualifier string) (_ string, ok bool) {
	if qualifier == "" {
		return ref, true
	}
	base, own := splitQualifier(ref)
	if own != "" && own != qualifier {
		return "", false
	}
	return base + ":" + qualifier, true
}

// splitQualifier splits "name:q", "account:function:name:q" and
// "arn:...:function:name:q" into the reference and the qualifier; a
// reference without a qualifier comes back as it is.
func splitQualifier(ref string) (base, qualifier string) {
	parts := strings.Split(ref, ":")
	n := len(parts)
	isARN := strings.HasPrefix(ref, "arn:")
	if (isARN && n == 8) || (!isARN && (n == 2 || n == 4)) {
		return strings.Join(parts[:n-1], ":"), parts[n-1]
	}
	return ref, ""
}

// functionARN is the full ARN a reference names (with its qualifier), as
// IAM evaluates an invocation: a name or a partial ARN is completed with
// the server's region and account. ok is false for a reference of no
// form Lambda accepts.
func (s *Server) functionARN(ref string) (arn string, ok bool) {
	parts := strings.Split(ref, ":")
	for _, p := range parts {
		if p == "" {
			return "", false
		}
	}
	switch {
	case strings.HasPrefix(ref, "arn:"):
		if (len(parts) != 7 && len(parts) != 8) || parts[2] != "lambda" || parts[5] != "function" {
			return "", false
		}
		return ref, true
	case len(parts) <= 2:
		return "arn:aws:lambda:" + s.cfg.Region + ":" + s.cfg.AccountID + ":function:" + ref, true
	case (len(parts) == 3 || len(parts) == 4) && parts[1] == "function":
		return "arn:aws:lambda:" + s.cfg.Region + ":" + ref, true
	}
	return "", false
}
