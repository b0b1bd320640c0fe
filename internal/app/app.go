// Package app wires each Lambda function: it reads the function's
// configuration once, builds its AWS clients once and returns its handler.
// The functions' main packages and the local runtime share this wiring, so
// what runs locally is what is deployed.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go/tracing"

	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/telemetry"
)

// Env reads one configuration variable.
type Env func(name string) string

// Constructor builds a function's handler (a value lambda.NewHandler
// accepts) from its environment and its AWS clients' configuration.
type Constructor func(ctx context.Context, env Env, clients AWS, log *slog.Logger) (any, error)

// AWS is what a function builds its AWS clients from: the SDK's
// configuration and the tracer provider their calls report spans to (nil:
// untraced).
type AWS struct {
	Config aws.Config
	Tracer tracing.TracerProvider
}

// DynamoDB is a DynamoDB client.
func (a AWS) DynamoDB() *dynamodb.Client {
	return dynamodb.NewFromConfig(a.Config, func(o *dynamodb.Options) {
		if a.Tracer != nil {
			o.TracerProvider = a.Tracer
		}
	})
}

// SFN is a Step Functions client.
func (a AWS) SFN() *sfn.Client {
	return sfn.NewFromConfig(a.Config, func(o *sfn.Options) {
		if a.Tracer != nil {
			o.TracerProvider = a.Tracer
		}
	})
}

// StackNameVar names the environment variable that holds the stack's
// name: the Stack dimension of the functions' metrics.
const StackNameVar = "STACK_NAME"

// Main is a function's main: it builds the handler from the process
// environment and serves it. A configuration error ends the process with
// the error logged, so the failed init shows in the function's logs.
func Main(build Constructor) {
	ctx := context.Background()
	log := newLogger()
	awsCfg, err := loadConfig(os.Getenv)
	if err != nil {
		log.Error("load AWS configuration", "error", err)
		os.Exit(1)
	}
	tracing, err := telemetry.New(os.Getenv)
	if err != nil {
		// Tracing is not worth failing the function for.
		log.Warn("OpenTelemetry tracing off", "error", err)
	}
	tracing.Instrument(&awsCfg)
	h, err := build(ctx, os.Getenv, AWS{Config: awsCfg, Tracer: tracing.SDKTracer()}, metrics.WithStack(log, os.Getenv(StackNameVar)))
	if err != nil {
		log.Error("configure function", "error", err)
		os.Exit(1)
	}
	lambda.Start(tracing.Wrap(lambda.NewHandler(h)))
}

func required(env Env, name string) (string, error) {
	v := env(name)
	if v == "" {
		return "", fmt.Errorf("environment variable %s is required", name)
	}
	return v, nil
}

func positiveInt(env Env, name string, def int64) (int64, error) {
	v := env(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("environment variable %s must be a positive integer, got %q", name, v)
	}
	return n, nil
}
