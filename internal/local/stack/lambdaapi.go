package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/exactlyonce/transfers/internal/local/lambdaapi"
)

// The local Lambda Invoke API and CodeDeploy's lifecycle hook status API
// (package lambdaapi), which the CodeDeploy PreTraffic hook calls: the
// functions' SDK clients reach them through AWS_ENDPOINT_URL_LAMBDA and
// AWS_ENDPOINT_URL_CODEDEPLOY, as they reach DynamoDB and Step Functions.

// startLambdaAPI serves both APIs on loopback, invoking the stack's
// functions (with Options.Faults' Lambda faults), and points the
// endpoint variables at it. It runs before the functions are built: a
// client takes its endpoint from the environment when it is built.
func (st *Stack) startLambdaAPI() error {
	srv, err := lambdaapi.New(lambdaapi.Config{
		Invoker:             st.Functions,
		Region:              Region,
		AccountID:           AccountID,
		Authorize:           st.authorizeLambdaInvoke,
		AuthorizeHookStatus: st.authorizeHookStatus,
		Logger:              st.log.With("component", "lambda-api"),
	})
	if err != nil {
		return err
	}
	endpoint, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start Lambda endpoint: %w", err)
	}
	st.lambdaAPI, st.LambdaEndpoint, st.CodeDeploy = srv, endpoint, srv.CodeDeploy
	for _, k := range []string{"AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_CODEDEPLOY"} {
		if err := os.Setenv(k, endpoint); err != nil {
			return err
		}
	}
	return nil
}

// authorizeLambdaInvoke checks, against the IAM policies of the caller
// whose credentials signed r, an invocation through the Lambda endpoint
// of functionARN (qualified when the request names a qualifier).
func (st *Stack) authorizeLambdaInvoke(r *http.Request, functionARN string) error {
	return st.IAM.AuthorizeRequest(r, "lambda:InvokeFunction", functionARN)
}

// authorizeHookStatus checks a lifecycle hook's status report against
// the caller's policies, on the ARN of the deployment's group.
func (st *Stack) authorizeHookStatus(r *http.Request, deploymentID string) error {
	d, ok := st.CodeDeploy.Deployment(deploymentID)
	if !ok {
		return fmt.Errorf("deployment %s does not exist", deploymentID)
	}
	group := "arn:aws:codedeploy:" + Region + ":" + AccountID + ":deploymentgroup:" + d.Application + "/" + d.Group
	return st.IAM.AuthorizeRequest(r, "codedeploy:PutLifecycleEventHookExecutionStatus", group)
}

// closeLambdaAPI stops the Lambda endpoint, waiting until ctx ends for
// the invocations in flight.
func (st *Stack) closeLambdaAPI(ctx context.Context) error {
	if st.lambdaAPI == nil {
		return nil
	}
	return st.lambdaAPI.Shutdown(ctx)
}
