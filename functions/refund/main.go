// Command refund is the refund Lambda function; see internal/app.Refund.
package main

import "github.com/exactlyonce/transfers/internal/app"

func main() { app.Main(app.Refund) }
