// Package hook wires the CodeDeploy PreTraffic hook function. It is apart
// from package app so that the product's functions do not link the
// Lambda and CodeDeploy clients only the hook uses: their package
// initialisation (the Lambda client's schemas, both clients' endpoint
// rules) ran at every cold start of every function.
package hook

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/exactlyonce/transfers/internal/app"
	"github.com/exactlyonce/transfers/internal/pretraffic"
)

// lambdaClient is a Lambda client.
func lambdaClient(a app.AWS) *lambdasvc.Client {
	return lambdasvc.NewFromConfig(a.Config, func(o *lambdasvc.Options) {
		if a.Tracer != nil {
			o.TracerProvider = a.Tracer
		}
	})
}

// codeDeployClient is a CodeDeploy client.
func codeDeployClient(a app.AWS) *codedeploy.Client {
	return codedeploy.NewFromConfig(a.Config, func(o *codedeploy.Options) {
		if a.Tracer != nil {
			o.TracerProvider = a.Tracer
		}
	})
}

// PreTraffic builds the CodeDeploy PreTraffic hook's handler: it probes
// the versions a deployment shifts to and reports the outcome to
// CodeDeploy (package pretraffic). Environment: ORCHESTRATOR_VERSION_ARN,
// DEBIT_VERSION_ARN, CREDIT_VERSION_ARN, REFUND_VERSION_ARN,
// REAPER_VERSION_ARN (the new versions' qualified ARNs) and
// STATE_MACHINE_ARN, all required.
func PreTraffic(_ context.Context, env app.Env, clients app.AWS, log *slog.Logger) (any, error) {
	cfg, err := pretraffic.ConfigFromEnv(env)
	if err != nil {
		return nil, fmt.Errorf("pretraffic: %w", err)
	}
	h, err := pretraffic.New(cfg, lambdaClient(clients), codeDeployClient(clients), log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}
