// Package otlptest serves an OTLP/HTTP traces receiver, in the place of
// the ADOT collector layer's, for the telemetry tests and the cold-start
// benchmark.
package otlptest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver keeps the spans of every request it reads: a binary protobuf
// OTLP request (Content-Type application/x-protobuf). Any other request
// is refused (415 or 400) and kept out. Close it when done.
type Receiver struct {
	*httptest.Server
	// Status is the answer to a request it reads; 0 is 200. Set it
	// before the first request.
	Status int

	mu    sync.Mutex
	paths []string
	spans []*tracepb.Span
}

// NewReceiver starts a Receiver; its traces URL is URL + "/v1/traces".
func NewReceiver() *Receiver {
	r := &Receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "Content-Type "+ct+" is not application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(req.Body)
	var td tracepb.TracesData
	if err == nil {
		err = proto.Unmarshal(body, &td)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	if r.Status != 0 {
		w.WriteHeader(r.Status)
	}
}

// Received returns the paths of the requests read, in order, and their
// spans.
func (r *Receiver) Received() (paths []string, spans []*tracepb.Span) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...), append([]*tracepb.Span(nil), r.spans...)
}
