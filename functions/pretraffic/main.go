// Command pretraffic is the CodeDeploy PreTraffic hook Lambda function;
// see internal/app.PreTraffic.
package main

import "github.com/exactlyonce/transfers/internal/app"

func main() { app.Main(app.PreTraffic) }
