// Command pretraffic is the CodeDeploy PreTraffic hook Lambda function;
// see internal/app/hook.PreTraffic.
package main

import (
	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/app/hook"
)

func main() { app.Main(hook.PreTraffic) }
