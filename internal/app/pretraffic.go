package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/exactlyonce/transfers/internal/pretraffic"
)

// Lambda is a Lambda client.
func (a AWS) Lambda() *lambdasvc.Client {
	return lambdasvc.NewFromConfig(a.Config, func(o *lambdasvc.Options) {
		if a.Tracer != nil {
			o.TracerProvider = a.Tracer
		}
	})
}

// CodeDeploy is a CodeDeploy client.
func (a AWS) CodeDeploy() *codedeploy.Client {
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
func PreTraffic(_ context.Context, env Env, clients AWS, log *slog.Logger) (any, error) {
	cfg, err := pretraffic.ConfigFromEnv(env)
	if err != nil {
		return nil, fmt.Errorf("pretraffic: %w", err)
	}
	h, err := pretraffic.New(cfg, clients.Lambda(), clients.CodeDeploy(), log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}
