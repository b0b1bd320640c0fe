// Package emf writes the calls of idempotency.Do as CloudWatch Embedded
// Metric Format (EMF) log lines: an idempotency.Observer for
// idempotency.Config.Observer. In a Lambda function, lines written to
// standard output become metrics without a call to CloudWatch.
//
// Each call is one line, a JSON object:
//
//	{"_aws":{"Timestamp":1772366400250,"CloudWatchMetrics":[{"Namespace":"Payments",
//	"Dimensions":[["Operation","Outcome"]],"Metrics":[{"Name":"Calls","Unit":"Count"},
//	{"Name":"Duration","Unit":"Milliseconds"},{"Name":"StoreCalls","Unit":"Count"}]}]},
//	"Operation":"charge","Outcome":"completed","Calls":1,"Duration":250,"StoreCalls":2,
//	"RecordKey":"9f86d0…"}
//
// (here folded): the dimensions Operation (Operation.Name) and Outcome
// (idempotency.CallOutcome); the metrics Calls (1), Duration (the call's,
// in milliseconds) and StoreCalls (its store calls); and RecordKey, the
// SHA-256 of scope and key, as a property that is no dimension, for
// finding the record. Neither the key nor the scope is written.
//
// The format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
package emf

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
)

// Dimension and metric names.
const (
	DimOperation     = "Operation"
	DimOutcome       = "Outcome"
	MetricCalls      = "Calls"
	MetricDuration   = "Duration"
	MetricStoreCalls = "StoreCalls"
)

// maxNamespace is the longest CloudWatch namespace.
const maxNamespace = 255

// Observer writes one EMF line per event to its writer. It is safe for
// concurrent use: each line is one Write, never interleaved with
// another.
type Observer struct {
	mu   sync.Mutex
	w    io.Writer
	aws  awsMeta
	line []byte
	err  error
}

var _ idempotency.Observer = (*Observer)(nil)

// New returns an Observer writing to w (os.Stdout in a Lambda function)
// under namespace, which must have 1 to 255 characters.
func New(w io.Writer, namespace string) (*Observer, error) {
	if namespace == "" || len(namespace) > maxNamespace {
		return nil, errors.New("emf: the namespace must have 1 to 255 characters")
	}
	return &Observer{w: w, aws: awsMeta{CloudWatchMetrics: []directive{{
		Namespace:  namespace,
		Dimensions: [][]string{{DimOperation, DimOutcome}},
		Metrics: []metricDef{
			{Name: MetricCalls, Unit: "Count"},
			{Name: MetricDuration, Unit: "Milliseconds"},
			{Name: MetricStoreCalls, Unit: "Count"},
		},
	}}}}, nil
}

// awsMeta is the _aws member: the metadata that makes the line metrics.
type awsMeta struct {
	// Timestamp is in epoch milliseconds.
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// line is one event as EMF.
type line struct {
	AWS        *awsMeta `json:"_aws"`
	Operation  string   `json:"Operation"`
	Outcome    string   `json:"Outcome"`
	Calls      int      `json:"Calls"`
	Duration   float64  `json:"Duration"`
	StoreCalls int      `json:"StoreCalls"`
	RecordKey  string   `json:"RecordKey,omitempty"`
}

// Observe writes ev as one line; its timestamp is the call's end.
func (o *Observer) Observe(_ context.Context, ev idempotency.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.aws.Timestamp = ev.Time.Add(ev.Duration).UnixMilli()
	b, err := json.Marshal(line{
		AWS:        &o.aws,
		Operation:  ev.Operation,
		Outcome:    string(ev.Outcome),
		Calls:      1,
		Duration:   float64(ev.Duration) / float64(time.Millisecond),
		StoreCalls: ev.StoreCalls,
		RecordKey:  ev.RecordKey,
	})
	if err == nil {
		o.line = append(append(o.line[:0], b...), '\n')
		_, err = o.w.Write(o.line)
	}
	if err != nil && o.err == nil {
		o.err = err
	}
}

// Err is the first error writing a line, nil when there was none.
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
