package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/iamgate"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// functionAWS is the AWS configuration of a function: the stack's, signed
// with the credentials of the function's role, so that each call it makes
// is checked against that role's policies.
func (st *Stack) functionAWS(f cfn.Function) (aws.Config, error) {
	role := st.IAM.FunctionRole(f.LogicalID)
	if role == nil {
		return aws.Config{}, fmt.Errorf("function %s: the transformed template gives it no role", f.LogicalID)
	}
	cfg := st.AWS.Copy()
	cfg.Credentials = credentials.StaticCredentialsProvider{Value: role.Credentials()}
	return cfg, nil
}

// roleCredentials are the credentials a state machine's role signs its
// DynamoDB integrations with; a role the template does not have gets
// credentials the checks refuse.
func (st *Stack) roleCredentials(roleARN string) aws.Credentials {
	if r := st.IAM.RoleByARN(roleARN); r != nil {
		return r.Credentials()
	}
	return aws.Credentials{AccessKeyID: "unknown-role", SecretAccessKey: "unknown-role"}
}

// authorizeRoleInvoke checks a state machine's lambda:invoke task.
func (st *Stack) authorizeRoleInvoke(_ context.Context, roleARN, functionARN string) error {
	r := st.IAM.RoleByARN(roleARN)
	if r == nil {
		return fmt.Errorf("AccessDeniedException: %s is not a role of the stack", roleARN)
	}
	return st.IAM.AuthorizeInvoke(iamgate.Invocation{Role: r, FunctionARN: functionARN})
}

// authorizedInvoker invokes a function for a service principal (API
// Gateway) once the function's resource policy allows it; a refusal is the
// service's error, as Lambda returns it to API Gateway.
type authorizedInvoker struct {
	gate *iamgate.Gate
	inv  iamgate.Invocation
	next *lambdarun.Registry
}

func (a authorizedInvoker) InvokeFunction(ctx context.Context, name string, payload []byte) ([]byte, *lambdarun.FunctionError, error) {
	if err := a.gate.AuthorizeInvoke(a.inv); err != nil {
		return nil, nil, &lambdarun.ServiceError{Type: "AccessDeniedException", Message: err.Error()}
	}
	return a.next.InvokeFunction(ctx, name, payload)
}

// clientTransport sends requests with an SDK HTTP client; checkedClient is
// an SDK HTTP client that sends through a transport.
type clientTransport struct{ c aws.HTTPClient }

func (t clientTransport) RoundTrip(req *http.Request) (*http.Response, error) { return t.c.Do(req) }

type checkedClient struct{ rt http.RoundTripper }

func (c checkedClient) Do(req *http.Request) (*http.Response, error) { return c.rt.RoundTrip(req) }

// checkedEndpoint serves target behind the IAM checks on loopback, for
// processes outside this one (a function's bootstrap), and returns its
// URL; one server per target.
func (st *Stack) checkedEndpoint(target string) (string, error) {
	if u, ok := st.checkedURL[target]; ok {
		return u, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("serve %s behind the IAM checks: %w", target, err)
	}
	srv := &http.Server{Handler: st.IAM.Handler(target, newTransport()), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	if st.checked == nil {
		st.checked, st.checkedURL = map[string]*http.Server{}, map[string]string{}
	}
	u := "http://" + ln.Addr().String()
	st.checked[target], st.checkedURL[target] = srv, u
	return u, nil
}
