// Command debit is the debit Lambda function; see internal/app.Debit.
package main

import "github.com/exactlyonce/transfers/internal/app"

func main() { app.Main(app.Debit) }
