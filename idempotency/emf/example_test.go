package emf_test

import (
	"context"
	"os"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/emf"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// In a Lambda function, write to os.Stdout: CloudWatch Logs turns each
// line into the metrics Calls, Duration and StoreCalls by Operation and
// Outcome.
func ExampleNew() {
	obs, _ := emf.New(os.Stdout, "Payments")
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Observer: obs, Clock: clock.Now})
	op := idempotency.Operation[int]{Name: "charge", Scope: "alice", Key: "order-1"}
	_, _ = idempotency.Do(context.Background(), idem, op, 100, func(_ context.Context, amount int) (int, error) {
		clock.Advance(42 * time.Millisecond)
		return amount, nil
	})
	// Output:
	// {"_aws":{"Timestamp":1772366400042,"CloudWatchMetrics":[{"Namespace":"Payments","Dimensions":[["Operation","Outcome"]],"Metrics":[{"Name":"Calls","Unit":"Count"},{"Name":"Duration","Unit":"Milliseconds"},{"Name":"StoreCalls","Unit":"Count"}]}]},"Operation":"charge","Outcome":"completed","Calls":1,"Duration":42,"StoreCalls":2,"RecordKey":"e25c186a85914c94f9b809b46747bf89919d5fc13efafd7fc83b077c5d64dfb9"}
}
