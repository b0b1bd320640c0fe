//go:build integration

package chaos_test

import (
	"errors"
	"time"

	"github.com/exactlyonce/transfers/internal/local/fault"
)

// errInjected is a failure the SDK does not retry: the caller sees it.
var errInjected = errors.New("chaos: injected failure")

// errExit is a function error type the workflow neither retries nor
// catches.
const errExit = "Runtime.ExitError"

// legFunctions are the workflow's Lambda functions.
var legFunctions = []string{"DebitFunction", "CreditFunction", "RefundFunction"}

// armFaults arms the run's faults, each firing at random with its
// probability for as long as it is armed. The draws come from the
// injector's seeded source.
func armFaults(in *fault.Injector) {
	for _, fn := range legFunctions {
		in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.Fail, Prob: 0.03})
		in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.LoseResponse, Prob: 0.03})
		in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.Detach, Prob: 0.02})
		in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.Hang, Prob: 0.01})
		// An error the workflow does not retry: the execution fails and
		// the reaper settles the transfer, after the leg committed or
		// before.
		in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.Fail, Prob: 0.015, Error: errExit})
		in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.LoseResponse, Prob: 0.015, Error: errExit})
	}
	in.Lambda(fault.LambdaFault{Function: "ReaperFunction", Kind: fault.Fail, Prob: 0.1})
	in.Lambda(fault.LambdaFault{Function: "ReaperFunction", Kind: fault.LoseResponse, Prob: 0.05})
	in.Lambda(fault.LambdaFault{Function: "ReaperFunction", Kind: fault.Detach, Prob: 0.05})
	// No Hang on the reaper: a hung invocation ends only at the reaper's
	// timeout (60 s, not scaled), longer than the run waits to come to
	// rest.

	in.Event(fault.EventFault{Kind: fault.Drop, Prob: 0.1})
	in.Event(fault.EventFault{Kind: fault.Delay, Prob: 0.1, Delay: 300 * time.Millisecond})
	in.Event(fault.EventFault{Kind: fault.Duplicate, Prob: 0.1})

	for _, c := range []struct{ service, op string }{
		{"DynamoDB", "PutItem"}, {"DynamoDB", "TransactWriteItems"}, {"SFN", "StartExecution"},
	} {
		for _, when := range []fault.When{fault.Before, fault.After} {
			// A connection reset the SDK retries, and a failure it
			// does not: the caller sees that one.
			in.SDK(fault.SDKFault{Service: c.service, Operation: c.op, When: when, Prob: 0.03})
			in.SDK(fault.SDKFault{Service: c.service, Operation: c.op, When: when, Prob: 0.01, Err: errInjected})
		}
	}
	for _, when := range []fault.When{fault.Before, fault.After} {
		in.Integration(fault.IntegrationFault{Operation: "UpdateItem", When: when, Prob: 0.03})
	}
}
