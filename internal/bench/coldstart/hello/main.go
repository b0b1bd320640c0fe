// Command hello is the reference of the cold-start measurement
// (internal/bench/coldstart): the smallest aws-lambda-go function, built
// exactly as the project's functions are. It answers each event with the
// event itself.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, event json.RawMessage) (json.RawMessage, error) {
		return event, nil
	})
}
