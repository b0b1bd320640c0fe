// Command fn is a Lambda function for the tests of package lambdaproc,
// built for the host. Its event's "op" says what to do:
//
//   - env: answer with the process's environment, working directory and
//     pid, the invocation's request id, ARN, deadline and trace header,
//     and how many invocations the process has had;
//   - fail: return a messages.InvokeResponse_Error of "type" and
//     "message", as the ledger legs do;
//   - error: return errors.New("message");
//   - panic: panic with "message";
//   - exit: write "message" to stderr and exit with "code";
//   - sleep: answer after "ms" milliseconds;
//   - print: write "message" as a line to stdout and to stderr, then
//     answer;
//   - big: answer a JSON string of "size" bytes.
//
// FN_MODE=initexit makes it exit during init, FN_MODE=initerror report an
// init error to the Runtime API and then wait to be stopped.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Op      string `json:"op"`
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    int    `json:"code"`
	Ms      int    `json:"ms"`
	Size    int    `json:"size"`
}

type report struct {
	Env         map[string]string `json:"env"`
	Dir         string            `json:"dir"`
	Pid         int               `json:"pid"`
	RequestID   string            `json:"requestId"`
	ARN         string            `json:"arn"`
	DeadlineMs  int64             `json:"deadlineMs"`
	TraceID     string            `json:"traceId"`
	Invocations int               `json:"invocations"`
}

func main() {
	switch os.Getenv("FN_MODE") {
	case "initexit":
		fmt.Fprintln(os.Stderr, "environment variable TABLE is required")
		os.Exit(3)
	case "initerror":
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"errorMessage":"no table","errorType":"Config.Missing"}`))
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Config.Missing")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		time.Sleep(time.Hour)
	}
	invocations := 0
	lambda.Start(func(ctx context.Context, ev event) (any, error) {
		invocations++
		switch ev.Op {
		case "env":
			r := report{Env: map[string]string{}, Pid: os.Getpid(), Invocations: invocations}
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				r.Env[k] = v
			}
			r.Dir, _ = os.Getwd()
			if lc, ok := lambdacontext.FromContext(ctx); ok {
				r.RequestID, r.ARN = lc.AwsRequestID, lc.InvokedFunctionArn
			}
			if d, ok := ctx.Deadline(); ok {
				r.DeadlineMs = d.UnixMilli()
			}
			r.TraceID = os.Getenv("_X_AMZN_TRACE_ID")
			return r, nil
		case "fail":
			return nil, messages.InvokeResponse_Error{Type: ev.Type, Message: ev.Message}
		case "error":
			return nil, errors.New(ev.Message)
		case "panic":
			panic(ev.Message)
		case "exit":
			fmt.Fprintln(os.Stderr, ev.Message)
			os.Exit(ev.Code)
		case "sleep":
			time.Sleep(time.Duration(ev.Ms) * time.Millisecond)
			return map[string]int{"slept": ev.Ms}, nil
		case "print":
			fmt.Println(ev.Message)
			fmt.Fprintln(os.Stderr, ev.Message)
			return map[string]string{"printed": ev.Message}, nil
		case "big":
			return strings.Repeat("x", ev.Size), nil
		}
		return nil, fmt.Errorf("unknown op %q", ev.Op)
	})
}
