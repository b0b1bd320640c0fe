// Command floor is the floor of the cold-start measurement
// (internal/bench/coldstart): hello with the AWS SDK for Go v2's DynamoDB
// client linked in, which every function of the project needs, and
// nothing else. The client's packages are initialised (their package
// variables, the operation schemas and endpoint tables among them) but no
// client is built, and nothing is sent: a function of the project, which
// must also build its clients, can start no faster. It answers each event
// with the event itself.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func main() {
	if os.Getenv("FLOOR_BUILD_CLIENT") != "" {
		// Never set by the measurement: it keeps the client's code, and
		// so the initialisation of its packages, in the binary.
		_ = dynamodb.New(dynamodb.Options{})
	}
	lambda.Start(func(_ context.Context, event json.RawMessage) (json.RawMessage, error) {
		return event, nil
	})
}
