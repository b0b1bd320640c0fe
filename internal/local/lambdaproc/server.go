package lambdaproc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The Lambda Runtime API (version 2018-06-01) as a function's runtime
// (aws-lambda-go) calls it.
const (
	apiPrefix = "/2018-06-01/runtime"

	HeaderRequestID  = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMs = "Lambda-Runtime-Deadline-Ms"
	HeaderARN        = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID    = "Lambda-Runtime-Trace-Id"
	// HeaderErrorType names the error of a POST to .../error or
	// /runtime/init/error; aws-lambda-go sends it as a trailer of a
	// streamed response that failed midway, with HeaderErrorBody.
	HeaderErrorType = "Lambda-Runtime-Function-Error-Type"
	HeaderErrorBody = "Lambda-Runtime-Function-Error-Body"

	// MaxResponseBytes is Lambda's limit on a synchronous response.
	MaxResponseBytes = 6 << 20
	// ErrorTypeResponseTooLarge is the errorType of a response over
	// MaxResponseBytes.
	ErrorTypeResponseTooLarge = "Function.ResponseSizeTooLarge"
)

// ErrNotDelivered is matched (errors.Is) by the error of a Server.Invoke
// whose event no runtime took: the runtime never asked for it before the
// context ended. An event that was handed out and not answered is not
// ErrNotDelivered.
var ErrNotDelivered = errors.New("lambdaproc: the runtime did not take the event")

// Event is one invocation as the runtime receives it from GET
// /runtime/invocation/next.
type Event struct {
	RequestID          string
	Deadline           time.Time
	InvokedFunctionARN string
	TraceID            string
	Payload            []byte
}

// Answer is the runtime's answer to an Event.
type Answer struct {
	// Payload is the response body, or the error document when Failed.
	Payload []byte
	// Failed: the runtime posted to .../error, or its streamed response
	// ended in an error (Payload is then the error document it sent).
	Failed bool
	// ErrorType is the Lambda-Runtime-Function-Error-Type the runtime
	// sent with an error, if any.
	ErrorType string
	// HandedAt is when the event was handed to the runtime, AnsweredAt
	// when its answer arrived.
	HandedAt, AnsweredAt time.Time
}

// InitError is an error a runtime reported on /runtime/init/error.
type InitError struct {
	Payload   []byte
	ErrorType string
}

// Server serves the Lambda Runtime API of one execution environment on
// loopback: any number of invocations, one after another, to the runtime
// process (or the successive processes) pointed at Addr through
// AWS_LAMBDA_RUNTIME_API. Invoke queues an event for the runtime's next
// GET /runtime/invocation/next and waits for its POST .../response or
// .../error. It is safe for concurrent use; concurrent Invoke calls are
// handed out one per GET, as the runtime asks for them.
type Server struct {
	ln      net.Listener
	srv     *http.Server
	done    chan struct{}
	closing sync.Once

	pending chan *invocation // unbuffered: taken by a GET .../next
	initErr chan InitError

	mu       sync.Mutex
	inflight map[string]*invocation // handed out, not yet answered
}

type invocation struct {
	ev       Event
	handedAt time.Time // set before the invocation is in inflight
	answer   chan Answer
}

// NewServer starts a Runtime API server on addr; "" is 127.0.0.1 on a
// free port.
func NewServer(addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lambdaproc: runtime API: listen: %w", err)
	}
	s := &Server{
		ln:       ln,
		done:     make(chan struct{}),
		pending:  make(chan *invocation),
		initErr:  make(chan InitError, 1),
		inflight: map[string]*invocation{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"/invocation/next", s.next)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/response", s.answer(false))
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/error", s.answer(true))
	mux.HandleFunc("POST "+apiPrefix+"/init/error", s.initError)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the value of AWS_LAMBDA_RUNTIME_API: host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// InitErrors delivers the errors runtimes report on /runtime/init/error;
// it holds the latest one not yet received.
func (s *Server) InitErrors() <-chan InitError { return s.initErr }

// Close stops the server; pending GET .../next calls end.
func (s *Server) Close() error {
	var err error
	s.closing.Do(func() {
		close(s.done)
		err = s.srv.Close()
	})
	return err
}

// Invoke hands ev to the runtime and returns its answer. It returns
// context.Cause(ctx) when ctx ends first, wrapped with ErrNotDelivered if
// the runtime had not taken the event yet; a late answer is then refused.
// The caller passes the runtime's deadline as ev.Deadline; Invoke does
// not enforce it.
func (s *Server) Invoke(ctx context.Context, ev Event) (Answer, error) {
	if ev.RequestID == "" {
		return Answer{}, errors.New("lambdaproc: runtime API: event without a request id")
	}
	inv := &invocation{ev: ev, answer: make(chan Answer, 1)}
	select {
	case s.pending <- inv:
	case <-s.done:
		return Answer{}, fmt.Errorf("%w: the runtime API is closed", ErrNotDelivered)
	case <-ctx.Done():
		return Answer{}, fmt.Errorf("%w: %w", ErrNotDelivered, context.Cause(ctx))
	}
	defer s.forget(ev.RequestID)
	select {
	case a := <-inv.answer:
		return a, nil
	case <-s.done:
		return Answer{}, errors.New("lambdaproc: runtime API closed during the invocation")
	case <-ctx.Done():
		return Answer{}, context.Cause(ctx)
	}
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id)
}

// next hands the runtime the next event, waiting for one as Lambda does
// between invocations.
func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	var inv *invocation
	select {
	case inv = <-s.pending:
	case <-r.Context().Done():
		return
	case <-s.done:
		http.Error(w, "runtime API closed", http.StatusGone)
		return
	}
	inv.handedAt = time.Now()
	s.mu.Lock()
	s.inflight[inv.ev.RequestID] = inv
	s.mu.Unlock()
	h := w.Header()
	h.Set(HeaderRequestID, inv.ev.RequestID)
	h.Set(HeaderDeadlineMs, strconv.FormatInt(inv.ev.Deadline.UnixMilli(), 10))
	h.Set(HeaderARN, inv.ev.InvokedFunctionARN)
	if inv.ev.TraceID != "" {
		h.Set(HeaderTraceID, inv.ev.TraceID)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(inv.ev.Payload)))
	w.WriteHeader(http.StatusOK)
	// A runtime that is gone by now never answers: its invoker sees the
	// process exit.
	_, _ = w.Write(inv.ev.Payload)
}

// answer takes the runtime's response (failed false) or error document
// (failed true) to an event handed out.
func (s *Server) answer(failed bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		id := r.PathValue("id")
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseBytes+1))
		s.mu.Lock()
		inv := s.inflight[id]
		delete(s.inflight, id)
		s.mu.Unlock()
		if inv == nil {
			// Unknown, already answered, or given up on (timed out).
			writeError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation "+id+" is waiting for an answer")
			return
		}
		a := Answer{Payload: body, Failed: failed, ErrorType: r.Header.Get(HeaderErrorType), HandedAt: inv.handedAt, AnsweredAt: at}
		switch {
		case err != nil:
			a = a.withError("Runtime.InvalidResponse", fmt.Sprintf("reading the runtime's answer: %v", err))
		case len(body) > MaxResponseBytes:
			a = a.withError(ErrorTypeResponseTooLarge, fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponseBytes))
		case !failed && r.Trailer.Get(HeaderErrorType) != "":
			// A streamed response whose reader failed: aws-lambda-go
			// ends the body and names the error in the trailers.
			a.Failed, a.ErrorType = true, r.Trailer.Get(HeaderErrorType)
			if doc, derr := base64.StdEncoding.DecodeString(r.Trailer.Get(HeaderErrorBody)); derr == nil && len(doc) > 0 {
				a.Payload = doc
			} else {
				a.Payload = []byte(`{"errorType":` + strconv.Quote(a.ErrorType) + `,"errorMessage":"the response stream failed"}`)
			}
		}
		inv.answer <- a
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"status":"OK"}`)
	}
}

// withError turns a into the error errorType with message.
func (a Answer) withError(errorType, message string) Answer {
	a.Failed, a.ErrorType = true, errorType
	a.Payload = []byte(`{"errorType":` + strconv.Quote(errorType) + `,"errorMessage":` + strconv.Quote(message) + `}`)
	return a
}

func (s *Server) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxResponseBytes))
	ie := InitError{Payload: body, ErrorType: r.Header.Get(HeaderErrorType)}
	// Keep the latest.
	select {
	case <-s.initErr:
	default:
	}
	select {
	case s.initErr <- ie:
	default:
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func writeError(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"errorType":`+strconv.Quote(errorType)+`,"errorMessage":`+strconv.Quote(message)+`}`)
}
