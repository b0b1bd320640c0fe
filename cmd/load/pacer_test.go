package main

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPacerSpacesSlotsAtTheRate(t *testing.T) {
	p := newPacer(t0, 10, 100, time.Minute)
	// All taken at the start: slot i is due i/10 s later.
	for i := range 5 {
		wait, ok := p.take(t0)
		if !ok {
			t.Fatalf("slot %d refused", i)
		}
		if want := time.Duration(i) * 100 * time.Millisecond; wait != want {
			t.Errorf("slot %d: wait %s, want %s", i, wait, want)
		}
	}
	// Behind schedule, a slot is due at once.
	if wait, ok := p.take(t0.Add(10 * time.Second)); !ok || wait != 0 {
		t.Errorf("late slot: wait %s ok %v, want 0 true", wait, ok)
	}
}

func TestPacerUnpacedNeverWaits(t *testing.T) {
	p := newPacer(t0, 0, 1000, time.Minute)
	for i := range 1000 {
		wait, ok := p.take(t0)
		if !ok || wait != 0 {
			t.Fatalf("slot %d: wait %s ok %v", i, wait, ok)
		}
	}
}

func TestPacerStopsAtTheCount(t *testing.T) {
	p := newPacer(t0, 0, 3, time.Minute)
	n := 0
	for range 10 {
		if _, ok := p.take(t0); ok {
			n++
		}
	}
	if n != 3 || p.taken() != 3 {
		t.Errorf("granted %d slots, taken() %d, want 3", n, p.taken())
	}
}

func TestPacerStopsAtTheDeadline(t *testing.T) {
	// 2 per second for 2 s: slots at 0, 0.5, 1, 1.5 s; the fifth would be
	// due at the deadline.
	p := newPacer(t0, 2, 100, 2*time.Second)
	n := 0
	for range 10 {
		if _, ok := p.take(t0); ok {
			n++
		}
	}
	if n != 4 {
		t.Errorf("granted %d slots, want 4", n)
	}
	q := newPacer(t0, 0, 100, time.Second)
	if _, ok := q.take(t0.Add(time.Second)); ok {
		t.Error("a slot was granted at the deadline")
	}
}
