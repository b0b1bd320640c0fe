package main

import (
	"strings"
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	ds := make([]time.Duration, 1000)
	for i := range ds {
		ds[i] = time.Duration(1000-i) * time.Millisecond // 1..1000 ms, reversed
	}
	p := percentilesOf(ds)
	want := percentiles{N: 1000, P50: 500 * time.Millisecond, P90: 900 * time.Millisecond, P99: 990 * time.Millisecond, P999: 999 * time.Millisecond, Max: 1000 * time.Millisecond}
	if p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
	if ds[0] != 1000*time.Millisecond {
		t.Error("percentilesOf sorted its argument")
	}
	one := percentilesOf([]time.Duration{7})
	if one.P50 != 7 || one.P999 != 7 || one.Max != 7 {
		t.Errorf("one value: %+v", one)
	}
	if (percentilesOf(nil) != percentiles{}) {
		t.Error("no values: not zero")
	}
}

func TestHistogram(t *testing.T) {
	s := newStats()
	for range 3 {
		s.add(opNew, label(202, ""), time.Millisecond)
	}
	s.add(opReuse, label(422, "idempotency_key_reused"), time.Millisecond)
	s.add(opNew, label(503, "service_unavailable"), time.Millisecond)
	s.add(opNew, label(500, ""), time.Millisecond)
	s.add(opNew, label(0, ""), time.Millisecond)
	got := s.histogram()
	want := []bucket{{"202", 3}, {"422 idempotency_key_reused", 1}, {"500", 1}, {"503 service_unavailable", 1}, {"transport error", 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: %v, want %v", i, got[i], want[i])
		}
	}
	if s.total() != 7 || s.serverErrors() != 1 {
		t.Errorf("total %d serverErrors %d, want 7 and 1 (503 asks for a retry)", s.total(), s.serverErrors())
	}
	var b strings.Builder
	writeHistogram(&b, got)
	if !strings.Contains(b.String(), "202") || !strings.Contains(b.String(), strings.Repeat("#", 40)) {
		t.Errorf("histogram:\n%s", b.String())
	}
}
