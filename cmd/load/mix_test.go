package main

import (
	"math"
	"testing"
)

func TestMixIsReproducibleFromTheSeed(t *testing.T) {
	m := mix{Duplicate: 0.2, Reuse: 0.1, Insufficient: 0.1}
	draw := func(seed uint64, client int) []op {
		r := clientRand(seed, client)
		out := make([]op, 200)
		for i := range out {
			out[i] = m.pick(r)
		}
		return out
	}
	a, b := draw(42, 3), draw(42, 3)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 42 client 3 drew %v then %v at %d", a[i], b[i], i)
		}
	}
	other, same := draw(42, 4), 0
	for i := range a {
		if a[i] == other[i] {
			same++
		}
	}
	if same == len(a) {
		t.Error("two clients of one seed drew the same sequence")
	}
}

func TestMixShares(t *testing.T) {
	m := mix{Duplicate: 0.2, Reuse: 0.05, Insufficient: 0.1}
	r := clientRand(7, 0)
	const n = 100000
	var counts [numOps]int
	for range n {
		counts[m.pick(r)]++
	}
	want := [numOps]float64{opNew: 0.65, opDuplicate: 0.2, opReuse: 0.05, opInsufficient: 0.1}
	for k := range numOps {
		if got := float64(counts[k]) / n; math.Abs(got-want[k]) > 0.01 {
			t.Errorf("%v: share %.3f, want %.3f", op(k), got, want[k])
		}
	}
}

func TestMixZeroIsAllNew(t *testing.T) {
	r := clientRand(1, 0)
	for range 1000 {
		if o := (mix{}).pick(r); o != opNew {
			t.Fatalf("drew %v", o)
		}
	}
}

func TestMixValidate(t *testing.T) {
	for _, m := range []mix{{Duplicate: -0.1}, {Reuse: 1.5}, {Duplicate: 0.6, Reuse: 0.3, Insufficient: 0.2}, {Insufficient: math.NaN()}} {
		if m.validate() == nil {
			t.Errorf("%+v accepted", m)
		}
	}
	if err := (mix{Duplicate: 0.5, Reuse: 0.25, Insufficient: 0.25}).validate(); err != nil {
		t.Errorf("a mix adding up to 1 refused: %v", err)
	}
}

func TestBookRequests(t *testing.T) {
	bk, warnings := newBook(map[string]balance{
		"a": {100, "EUR"}, "b": {50, "EUR"}, "c": {7, "EUR"}, "u": {10, "USD"},
	}, 1000)
	if len(bk.groups) != 1 || len(warnings) != 1 {
		t.Fatalf("groups %+v warnings %q: want the EUR group and a warning for the lone USD account", bk.groups, warnings)
	}
	r := clientRand(5, 0)
	for range 500 {
		req := bk.request(r, opNew, 10, "ref")
		if req.Source == req.Destination || req.Currency != "EUR" || req.Amount < 1 || req.Amount > 10 || req.Source == "u" || req.Destination == "u" {
			t.Fatalf("bad request %+v", req)
		}
	}
	if req := bk.request(r, opInsufficient, 10, ""); req.Amount != 158 {
		t.Errorf("insufficient amount %d, want the sum of the EUR balances + 1 = 158", req.Amount)
	}
	capped, w := newBook(map[string]balance{"a": {900, "EUR"}, "b": {900, "EUR"}}, 1000)
	if capped.groups[0].tooMuch != 1000 || len(w) != 1 {
		t.Errorf("tooMuch %d warnings %q: want MaxTransferAmount and a warning", capped.groups[0].tooMuch, w)
	}
}
