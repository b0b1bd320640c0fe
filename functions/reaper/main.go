// Command reaper is the reaper Lambda function; see internal/app.Reaper.
package main

import "github.com/exactlyonce/transfers/internal/app"

func main() { app.Main(app.Reaper) }
