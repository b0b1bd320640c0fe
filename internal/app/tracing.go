package app

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/transfers/internal/xray"
)

// traced makes every AWS SDK call of the clients built from cfg an X-Ray
// subsegment of the invocation's trace (DynamoDB, Step Functions), sent
// to the daemon at daemonAddr. Only the deployed functions are traced
// (Main, with the AWS_XRAY_DAEMON_ADDRESS Lambda sets): the subsegments go
// to the X-Ray daemon that Lambda runs beside the function, over UDP on
// the host, so tracing adds no remote call and no wait to a request.
// Without a sampled trace in the context (outside Lambda, or a request
// X-Ray does not sample) or without a daemon address, the SDK's calls
// run as they would untraced. An address that cannot be used is an
// error, and cfg is left untraced.
func traced(cfg *aws.Config, daemonAddr string) error {
	tracer, err := xray.NewTracer(daemonAddr)
	if err != nil {
		return err
	}
	tracer.Instrument(&cfg.APIOptions)
	return nil
}
