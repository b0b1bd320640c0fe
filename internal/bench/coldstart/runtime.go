package coldstart

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/internal/local/lambdaproc"
	"github.com/exactlyonce/transfers/internal/telemetry/otlptest"
)

// The Lambda Runtime API's paths and headers that a function's runtime
// (aws-lambda-go) uses.
const (
	apiPrefix        = "/2018-06-01/runtime"
	headerRequestID  = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline   = "Lambda-Runtime-Deadline-Ms"
	headerARN        = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID    = "Lambda-Runtime-Trace-Id"
	headerErrorType  = "Lambda-Runtime-Function-Error-Type"
	maxAnswerBytes   = 6 << 20 // Lambda's limit on a synchronous response
	outputTailBytes  = 4 << 10
	accountID        = "123456789012"
	defaultRegion    = "us-east-1"
	defaultMemoryMiB = "256"
)

// answer is the runtime's answer to the one event handed out.
type answer struct {
	at        time.Time
	requestID string
	payload   []byte
	failed    bool // POST .../error rather than .../response
	errorType string
}

// runtimeAPI serves the Lambda Runtime API on 127.0.0.1 for one process
// start: the first GET /next is the runtime's readiness and gets the
// event; the runtime's response or error to it is the first invoke's end;
// a second GET /next is held until the process is killed.
type runtimeAPI struct {
	ln     net.Listener
	srv    *http.Server
	closed chan struct{}

	event     []byte
	requestID string
	traceID   string
	arn       string
	deadline  time.Duration

	ready   chan time.Time // the first GET /next's arrival
	answers chan answer
	initErr chan []byte

	mu     sync.Mutex
	nexts  int
	handed time.Time // when the event was handed out
}

func newRuntimeAPI(functionName, region string, event []byte, deadline time.Duration) (*runtimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime API: listen: %w", err)
	}
	a := &runtimeAPI{
		ln:        ln,
		closed:    make(chan struct{}),
		event:     event,
		requestID: randomHex(16),
		traceID:   newTraceHeader(),
		arn:       fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, accountID, functionName),
		deadline:  deadline,
		ready:     make(chan time.Time, 1),
		answers:   make(chan answer, 1),
		initErr:   make(chan []byte, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"/invocation/next", a.next)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/response", a.answer(false))
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/error", a.answer(true))
	mux.HandleFunc("POST "+apiPrefix+"/init/error", a.initError)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// addr is the value of AWS_LAMBDA_RUNTIME_API.
func (a *runtimeAPI) addr() string { return a.ln.Addr().String() }

// handedAt is when the event was handed out; zero before.
func (a *runtimeAPI) handedAt() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handed
}

func (a *runtimeAPI) close() {
	close(a.closed)
	_ = a.srv.Close()
}

func (a *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	a.mu.Lock()
	first := a.nexts == 0
	a.nexts++
	a.mu.Unlock()
	if !first {
		// The runtime has answered the event and asks for the next one:
		// there is none. Hold the call until the process is killed.
		select {
		case <-r.Context().Done():
		case <-a.closed:
		}
		return
	}
	a.ready <- arrived
	h := w.Header()
	h.Set(headerRequestID, a.requestID)
	h.Set(headerDeadline, strconv.FormatInt(time.Now().Add(a.deadline).UnixMilli(), 10))
	h.Set(headerARN, a.arn)
	h.Set(headerTraceID, a.traceID)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(a.event)))
	a.mu.Lock()
	a.handed = time.Now()
	a.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.event)
}

func (a *runtimeAPI) answer(failed bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		id := r.PathValue("id")
		body, err := io.ReadAll(io.LimitReader(r.Body, maxAnswerBytes+1))
		if err != nil || len(body) > maxAnswerBytes {
			http.Error(w, "unreadable or oversized payload", http.StatusRequestEntityTooLarge)
			return
		}
		if id != a.requestID {
			http.Error(w, "unknown request id "+id, http.StatusBadRequest)
			return
		}
		select {
		case a.answers <- answer{at: at, requestID: id, payload: body, failed: failed, errorType: r.Header.Get(headerErrorType)}:
			w.WriteHeader(http.StatusAccepted)
		default:
			// Lambda refuses a second answer to one invocation.
			http.Error(w, "invocation already answered", http.StatusBadRequest)
		}
	}
}

func (a *runtimeAPI) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, outputTailBytes))
	select {
	case a.initErr <- body:
	default:
	}
	w.WriteHeader(http.StatusAccepted)
}

// sample is one start's figures and answer.
type sample struct {
	ready, firstInvoke time.Duration
	answer             answer
	spans              int // spans received by the OTLP collector
}

// startOnce starts the binary with env, to which it adds the addresses
// of its Runtime API (AWS_LAMBDA_RUNTIME_API) and of a stand-in for the
// ADOT collector layer's OTLP receiver (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// which the template sets when the layer is deployed). It hands the
// process event as its first invoke and returns the times from just
// before the start to the runtime's first GET /next, and from handing out
// the event to its answer, and counts the spans sent to the collector.
// It kills and reaps the process before returning. A process that exits,
// reports an init error or does not answer within timeout is an error,
// with the tail of its output.
func startOnce(ctx context.Context, bin, name, region string, env []string, event []byte, timeout time.Duration) (sample, error) {
	api, err := newRuntimeAPI(name, region, event, timeout)
	if err != nil {
		return sample{}, err
	}
	defer api.close()
	// A traced function sends an invocation's spans before it answers
	// (internal/telemetry), so those of the first invoke are in by the
	// time its answer arrives.
	collector := otlptest.NewReceiver()
	defer collector.Close()

	out := lambdaproc.NewTail(outputTailBytes)
	cmd := exec.Command(bin)
	cmd.Env = append(env,
		"AWS_LAMBDA_RUNTIME_API="+api.addr(),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+collector.URL+"/v1/traces")
	cmd.Stdout, cmd.Stderr = out, out
	exited := make(chan error, 1)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { exited <- cmd.Wait() }()
	reaped := false
	defer func() {
		if !reaped {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var s sample
	var ready time.Time
	answered := func(ans answer) (sample, error) {
		if ready.IsZero() {
			// The event was handed out, so the readiness is queued.
			s.ready = (<-api.ready).Sub(start)
		}
		s.answer = ans
		s.firstInvoke = ans.at.Sub(api.handedAt())
		_, spans := collector.Received()
		s.spans = len(spans)
		return s, nil
	}
	initError := func(body []byte) (sample, error) {
		return s, fmt.Errorf("%s reported an init error: %s; output: %s", name, body, output(out))
	}
	for {
		select {
		case ready = <-api.ready:
			s.ready = ready.Sub(start)
		case ans := <-api.answers:
			return answered(ans)
		case body := <-api.initErr:
			return initError(body)
		case err := <-exited:
			reaped = true
			// What the process said before it exited comes first.
			select {
			case body := <-api.initErr:
				return initError(body)
			case ans := <-api.answers:
				return answered(ans)
			default:
			}
			phase := "during init"
			if !ready.IsZero() {
				phase = "during its first invoke"
			}
			return s, fmt.Errorf("%s exited %s (%v); output: %s", name, phase, err, output(out))
		case <-timer.C:
			phase := "ready"
			if !ready.IsZero() {
				phase = "answering its first invoke"
			}
			return s, fmt.Errorf("%s not %s after %v; output: %s", name, phase, timeout, output(out))
		case <-ctx.Done():
			return s, fmt.Errorf("%s: %w", name, ctx.Err())
		}
	}
}

// output is a process's last output as an error reports it.
func output(t *lambdaproc.Tail) string {
	if s := t.String(); s != "" {
		return s
	}
	return "(none)"
}

// newTraceHeader is a sampled X-Ray trace header as Lambda hands it to a
// traced function: the root of a new trace and the id of the function's
// segment. Sampled, so that the first invoke pays for its tracing as a
// sampled request in production does.
func newTraceHeader() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=1", time.Now().Unix(), randomHex(12), randomHex(8))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported systems
	return hex.EncodeToString(b)
}
