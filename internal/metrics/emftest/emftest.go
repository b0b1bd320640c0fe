// Package emftest reads the EMF documents a JSON slog handler wrote, for
// tests of the code that publishes metrics.
package emftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/exactlyonce/transfers/internal/metrics"
)

// Doc is one EMF document: its dimensions and its metric values.
type Doc struct {
	Dimensions map[string]string
	Values     map[string]float64
	Units      map[string]string
}

// Parse checks one log line as an EMF document, as CloudWatch reads it:
// "_aws" holds a millisecond Timestamp and one CloudWatchMetrics directive
// in the project's namespace; every dimension it names is a top-level
// string member, and every metric it defines has a unit and is a top-level
// number member. ok is false for a line without "_aws".
func Parse(line []byte) (doc Doc, ok bool, err error) {
	var raw map[string]any
	if err := json.Unmarshal(line, &raw); err != nil {
		return Doc{}, false, fmt.Errorf("not JSON: %w", err)
	}
	meta, ok := raw["_aws"]
	if !ok {
		return Doc{}, false, nil
	}
	var aws struct {
		Timestamp         *int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	b, _ := json.Marshal(meta)
	if err := json.Unmarshal(b, &aws); err != nil {
		return Doc{}, true, fmt.Errorf("_aws: %w", err)
	}
	if aws.Timestamp == nil || *aws.Timestamp <= 0 {
		return Doc{}, true, fmt.Errorf("_aws.Timestamp missing")
	}
	if len(aws.CloudWatchMetrics) != 1 {
		return Doc{}, true, fmt.Errorf("%d metric directives, want 1", len(aws.CloudWatchMetrics))
	}
	d := aws.CloudWatchMetrics[0]
	if d.Namespace != metrics.Namespace {
		return Doc{}, true, fmt.Errorf("namespace %q, want %q", d.Namespace, metrics.Namespace)
	}
	if len(d.Dimensions) != 1 || len(d.Metrics) == 0 {
		return Doc{}, true, fmt.Errorf("%d dimension sets and %d metrics, want 1 and some", len(d.Dimensions), len(d.Metrics))
	}
	doc = Doc{Dimensions: map[string]string{}, Values: map[string]float64{}, Units: map[string]string{}}
	for _, name := range d.Dimensions[0] {
		v, ok := raw[name].(string)
		if !ok {
			return Doc{}, true, fmt.Errorf("dimension %s is %v, want a string member", name, raw[name])
		}
		doc.Dimensions[name] = v
	}
	for _, m := range d.Metrics {
		v, ok := raw[m.Name].(float64)
		if !ok || m.Unit == "" {
			return Doc{}, true, fmt.Errorf("metric %s is %v with unit %q, want a number member and a unit", m.Name, raw[m.Name], m.Unit)
		}
		doc.Values[m.Name] = v
		doc.Units[m.Name] = m.Unit
	}
	return doc, true, nil
}

// Docs returns the EMF documents in JSON log lines, or the first line that
// is not valid.
func Docs(logs []byte) ([]Doc, error) {
	var docs []Doc
	sc := bufio.NewScanner(bytes.NewReader(logs))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		doc, ok, err := Parse(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Text(), err)
		}
		if ok {
			docs = append(docs, doc)
		}
	}
	return docs, sc.Err()
}

// Sum adds the values of metric name over the documents whose dimensions
// include dims.
func Sum(docs []Doc, name string, dims map[string]string) (total float64, found bool) {
next:
	for _, d := range docs {
		for k, v := range dims {
			if d.Dimensions[k] != v {
				continue next
			}
		}
		if v, ok := d.Values[name]; ok {
			total += v
			found = true
		}
	}
	return total, found
}

// With returns the documents of logs that publish metric name, in order.
func With(logs []byte, name string) ([]Doc, error) {
	docs, err := Docs(logs)
	if err != nil {
		return nil, err
	}
	var out []Doc
	for _, d := range docs {
		if _, ok := d.Values[name]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}
