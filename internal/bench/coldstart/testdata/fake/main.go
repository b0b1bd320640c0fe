// Command fake is a function whose cold start goes wrong in the way
// FAKE_MODE says, for the tests of package coldstart:
//
//   - exit: exits during init, as a function whose configuration is
//     refused does;
//   - initerror: reports an init error to the Runtime API, then exits;
//   - hang: never asks for an event;
//   - anything else: a function whose handler answers every event with
//     an error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	switch os.Getenv("FAKE_MODE") {
	case "exit":
		fmt.Fprintln(os.Stderr, "environment variable TABLE is required")
		os.Exit(3)
	case "initerror":
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"errorMessage":"no table","errorType":"InitError"}`))
		if err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	case "hang":
		time.Sleep(time.Hour)
	}
	lambda.Start(func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("refused")
	})
}
