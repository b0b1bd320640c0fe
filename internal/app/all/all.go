// Package all maps each Lambda function's code folder to its
// constructor, for whatever builds a function by name: the local stack
// and the tests. A function's own main imports only the package of its
// constructor (app, or app/hook for the deployment hook), so that no
// function links the clients of another.
package all

import (
	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/app/hook"
)

// Functions maps each function's code folder (the last element of its
// CodeUri in template.yaml) to its constructor.
var Functions = map[string]app.Constructor{
	"orchestrator": app.Orchestrator,
	"debit":        app.Debit,
	"credit":       app.Credit,
	"refund":       app.Refund,
	"reaper":       app.Reaper,
	"pretraffic":   hook.PreTraffic,
}
