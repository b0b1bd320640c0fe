package e2e

import (
	"context"
	"testing"
	"time"
)

// MeasureWait counts every answer, and a transfer that settles within the
// wait is answered final: on an idle local stack, most of them.
func TestMeasureWait(t *testing.T) {
	pairs, _ := seed(t, 2)
	r, err := MeasureWait(context.Background(), st, WaitConfig{Clients: 2, Wait: 5, Duration: time.Second, Pairs: pairs, Caller: DefaultCaller})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests == 0 || r.Final == 0 || r.Final > r.Requests || r.P50 <= 0 || r.P99 < r.P50 {
		t.Fatalf("result %+v", r)
	}
}
