package emf_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/emf"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

type order struct {
	Key    string `json:"key"`
	Amount int    `json:"amount"`
}

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestObserveLines(t *testing.T) {
	var out bytes.Buffer
	obs, err := emf.New(&out, "Payments")
	if err != nil {
		t.Fatal(err)
	}
	clock := idemtest.NewClock(start)
	idem, err := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 8, Observer: obs, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	op := idempotency.Operation[order]{Name: "charge", Scope: "alice@example.com", KeyFunc: func(o order) (string, error) { return o.Key, nil }}
	charge := func(_ context.Context, o order) (int, error) {
		clock.Advance(1500 * time.Microsecond)
		return o.Amount, nil
	}
	for _, o := range []order{{"order-SECRET", 100}, {"order-SECRET", 100}, {"bad\tkey", 1}} {
		_, _ = idempotency.Do(t.Context(), idem, op, o, charge)
	}
	rk := idempotency.RecordKey("alice@example.com", "order-SECRET")
	const aws = `{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"Payments","Dimensions":[["Operation","Outcome"]],` +
		`"Metrics":[{"Name":"Calls","Unit":"Count"},{"Name":"Duration","Unit":"Milliseconds"},{"Name":"StoreCalls","Unit":"Count"}]}]},`
	want := []string{
		strings.Replace(aws, "%d", "1772366400001", 1) + `"Operation":"charge","Outcome":"completed","Calls":1,"Duration":1.5,"StoreCalls":2,"RecordKey":"` + rk + `"}`,
		strings.Replace(aws, "%d", "1772366400001", 1) + `"Operation":"charge","Outcome":"cached","Calls":1,"Duration":0,"StoreCalls":0,"RecordKey":"` + rk + `"}`,
		strings.Replace(aws, "%d", "1772366400001", 1) + `"Operation":"charge","Outcome":"invalid","Calls":1,"Duration":0,"StoreCalls":0}`,
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasSuffix(out.String(), "}\n") {
		t.Error("the last line does not end with a newline")
	}
	for n, l := range got {
		if err := validEMF([]byte(l)); err != nil {
			t.Errorf("line %d is not valid EMF: %v", n, err)
		}
		if strings.Contains(l, "SECRET") || strings.Contains(l, "alice") {
			t.Errorf("line %d holds the key or the scope: %s", n, l)
		}
	}
	if obs.Err() != nil {
		t.Errorf("Err = %v", obs.Err())
	}
}

// validEMF checks a line against the rules of the EMF specification: a
// JSON object whose _aws member holds a Timestamp (epoch milliseconds)
// and CloudWatchMetrics, an array of directives, each with a Namespace,
// Dimensions (arrays of up to 30 names of string members of the root)
// and Metrics (up to 100, each naming a number member of the root, with
// a unit of the specification's list).
func validEMF(b []byte) error {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(b, &root); err != nil {
		return err
	}
	var meta struct {
		Timestamp         *int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	dec := json.NewDecoder(bytes.NewReader(root["_aws"]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return errors.New("_aws: " + err.Error())
	}
	if meta.Timestamp == nil || *meta.Timestamp < 0 {
		return errors.New("_aws.Timestamp missing")
	}
	if len(meta.CloudWatchMetrics) == 0 {
		return errors.New("_aws.CloudWatchMetrics empty")
	}
	units := []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
		"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second",
		"Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second",
		"Gigabits/Second", "Terabits/Second", "Count/Second", "None"}
	for _, d := range meta.CloudWatchMetrics {
		if d.Namespace == "" || len(d.Namespace) > 255 {
			return errors.New("bad Namespace")
		}
		for _, set := range d.Dimensions {
			if len(set) == 0 || len(set) > 30 {
				return errors.New("a dimension set must have 1 to 30 dimensions")
			}
			for _, name := range set {
				var s string
				if err := json.Unmarshal(root[name], &s); err != nil || s == "" {
					return errors.New("dimension " + name + " is not a non-empty string member of the root")
				}
			}
		}
		if len(d.Metrics) == 0 || len(d.Metrics) > 100 {
			return errors.New("a directive must have 1 to 100 metrics")
		}
		for _, m := range d.Metrics {
			var f float64
			if err := json.Unmarshal(root[m.Name], &f); err != nil {
				return errors.New("metric " + m.Name + " is not a number member of the root")
			}
			if !slices.Contains(units, m.Unit) {
				return errors.New("metric " + m.Name + ": unit " + m.Unit + " is not one of the specification's")
			}
		}
	}
	return nil
}

func TestNewRefusesNamespace(t *testing.T) {
	for _, ns := range []string{"", strings.Repeat("n", 256)} {
		if _, err := emf.New(&bytes.Buffer{}, ns); err == nil {
			t.Errorf("New with a namespace of %d characters succeeded", len(ns))
		}
	}
}

// Concurrent events are whole lines, one each.
func TestObserveConcurrent(t *testing.T) {
	var out bytes.Buffer
	obs, _ := emf.New(&out, "Payments")
	var wg sync.WaitGroup
	for n := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs.Observe(context.Background(), idempotency.Event{Operation: "op", Outcome: idempotency.OutcomeCompleted, StoreCalls: n, Time: start})
		}()
	}
	wg.Wait()
	sc := bufio.NewScanner(&out)
	lines := 0
	for sc.Scan() {
		lines++
		if err := validEMF(sc.Bytes()); err != nil {
			t.Errorf("line %d: %v: %s", lines, err, sc.Text())
		}
	}
	if lines != 50 {
		t.Errorf("%d lines, want 50", lines)
	}
}

type failing struct{ err error }

func (f failing) Write([]byte) (int, error) { return 0, f.err }

func TestObserveKeepsTheFirstWriteError(t *testing.T) {
	errFull := errors.New("disk full")
	obs, _ := emf.New(failing{errFull}, "Payments")
	obs.Observe(context.Background(), idempotency.Event{Operation: "op", Outcome: idempotency.OutcomeCompleted})
	if !errors.Is(obs.Err(), errFull) {
		t.Errorf("Err = %v, want the writer's", obs.Err())
	}
}
