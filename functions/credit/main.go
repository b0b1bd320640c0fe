// Command credit is the credit Lambda function; see internal/app.Credit.
package main

import "github.com/exactlyonce/transfers/internal/app"

func main() { app.Main(app.Credit) }
