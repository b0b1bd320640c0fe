package asl

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestRetryFullJitter checks JitterStrategy FULL. AWS documents it as "a
// random number between 0 and the computed backoff for the given retry
// attempt count" (JitterType.FULL,
// https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_stepfunctions.JitterType.md;
// the computed backoff is IntervalSeconds*BackoffRate^attempt capped by
// MaxDelaySeconds, as in the Step Functions guide's "Handling errors in
// Step Functions workflows"). With a fixed seed every wait is in
// [0, computed delay], the sequence is reproducible, and NONE keeps the
// computed delays.
func TestRetryFullJitter(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		retry    string
		wantCaps []time.Duration // computed delays at TimeScale 0.001
		jitter   bool
	}{
		{"full: backoff", `[{"ErrorEquals":["Boom"],"IntervalSeconds":2,"BackoffRate":2,"MaxAttempts":4,"JitterStrategy":"FULL"}]`,
			[]time.Duration{2 * ms, 4 * ms, 8 * ms, 16 * ms}, true},
		{"full: capped by MaxDelaySeconds", `[{"ErrorEquals":["Boom"],"IntervalSeconds":3,"BackoffRate":3,"MaxAttempts":4,"MaxDelaySeconds":10,"JitterStrategy":"FULL"}]`,
			[]time.Duration{3 * ms, 9 * ms, 10 * ms, 10 * ms}, true},
		{"none: the computed delays", `[{"ErrorEquals":["Boom"],"IntervalSeconds":2,"BackoffRate":2,"MaxAttempts":4,"JitterStrategy":"NONE"}]`,
			[]time.Duration{2 * ms, 4 * ms, 8 * ms, 16 * ms}, false},
	}
	run := func(t *testing.T, retry string, seed uint64) []time.Duration {
		t.Helper()
		inv := newInvoker(map[string]invokeFunc{"r": fails(named("Boom"))})
		m, err := Load(testFile, []byte(taskDef(`"Retry":`+retry)), Options{Tasks: inv, TimeScale: 0.001, Rand: rand.New(rand.NewPCG(seed, 7))})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		rec := &sleepRecorder{}
		m.def.sleep = rec.sleep
		wantFailed(t, execute(t, context.Background(), m, `{}`), "Boom", "")
		return rec.recorded()
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, tc.retry, 42)
			if len(got) != len(tc.wantCaps) {
				t.Fatalf("waits = %v, want %d of them", got, len(tc.wantCaps))
			}
			if !tc.jitter {
				if !reflect.DeepEqual(got, tc.wantCaps) {
					t.Fatalf("waits = %v, want %v", got, tc.wantCaps)
				}
				return
			}
			equal := 0
			for i, d := range got {
				if d < 0 || d > tc.wantCaps[i] {
					t.Errorf("wait %d = %v, outside [0, %v]", i, d, tc.wantCaps[i])
				}
				if d == tc.wantCaps[i] {
					equal++
				}
			}
			if equal == len(got) {
				t.Errorf("waits = %v: no jitter applied", got)
			}
			if again := run(t, tc.retry, 42); !reflect.DeepEqual(again, got) {
				t.Errorf("same seed: waits %v, then %v", got, again)
			}
			if other := run(t, tc.retry, 43); reflect.DeepEqual(other, got) {
				t.Errorf("another seed gave the same waits %v", got)
			}
		})
	}

	t.Run("full: uniform over the interval", func(t *testing.T) {
		// 200 retries capped at 10 ms: their mean is near 5 ms and they
		// reach both ends of the interval.
		got := run(t, `[{"ErrorEquals":["Boom"],"IntervalSeconds":10,"BackoffRate":1,"MaxAttempts":200,"JitterStrategy":"FULL"}]`, 1)
		var sum time.Duration
		low, high := 0, 0
		for _, d := range got {
			sum += d
			if d < 2*ms {
				low++
			}
			if d > 8*ms {
				high++
			}
		}
		mean := sum / time.Duration(len(got))
		if mean < 4*ms || mean > 6*ms || low == 0 || high == 0 {
			t.Errorf("mean %v, %d below 2 ms, %d above 8 ms over %d waits: not uniform over [0, 10 ms]", mean, low, high, len(got))
		}
	})
}
