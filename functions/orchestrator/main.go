// Command orchestrator is the orchestrator Lambda function; see internal/app.Orchestrator.
package main

import "github.com/exactlyonce/transfers/internal/app"

func main() { app.Main(app.Orchestrator) }
