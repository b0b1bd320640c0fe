package app

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/instrumentation/awsv2"
)

// traced makes every AWS SDK call of the clients built from cfg an X-Ray
// subsegment of the invocation's trace (DynamoDB, Step Functions). Only
// the deployed functions are traced (Main): the subsegments go to the
// X-Ray daemon that Lambda runs beside the function, over UDP on the
// host, so tracing adds no remote call and no wait to a request. Without
// a trace in the context (outside Lambda) the SDK's calls run as usual
// and the X-Ray SDK logs that the context is missing.
func traced(cfg *aws.Config) {
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}
