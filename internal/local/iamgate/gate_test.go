package iamgate_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/iamgate"
)

var env = cfn.Env{Region: "us-east-1", AccountID: "123456789012"}

func newGate(t *testing.T, file string) *iamgate.Gate {
	t.Helper()
	tpl, err := cfn.Load(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	g, err := iamgate.New(tpl, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fakeDynamoDB answers every request with an empty JSON object and
// counts what reaches it.
func fakeDynamoDB(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func client(g *iamgate.Gate, endpoint string, creds aws.Credentials) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.StaticCredentialsProvider{Value: creds},
		HTTPClient:       &http.Client{Transport: g.Transport(http.DefaultTransport)},
		RetryMaxAttempts: 1,
	})
}

func TestTransportChecksEachCallAgainstTheRole(t *testing.T) {
	g := newGate(t, "stack.cfn.json")
	srv, reached := fakeDynamoDB(t)
	role := g.FunctionRole("Fn")
	if role == nil {
		t.Fatal("no role for Fn")
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	fn := client(g, srv.URL, role.Credentials())
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		call    func(*dynamodb.Client) error
		allowed bool
		code    string
	}{
		{"GetItem on the table", func(c *dynamodb.Client) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Things"), Key: key})
			return err
		}, true, ""},
		{"UpdateItem, granted nowhere", func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Things"), Key: key})
			return err
		}, false, "AccessDeniedException"},
		{"GetItem on another table", func(c *dynamodb.Client) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Other"), Key: key})
			return err
		}, false, "AccessDeniedException"},
		{"Query of the granted index", func(c *dynamodb.Client) error {
			_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Things"), IndexName: aws.String("ByOwner")})
			return err
		}, true, ""},
		{"Query of the table itself", func(c *dynamodb.Client) error {
			_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Things")})
			return err
		}, false, "AccessDeniedException"},
		{"a transaction with one item not granted", func(c *dynamodb.Client) error {
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String("Things"), Item: key}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String("Things"), Key: key, ConditionExpression: aws.String("attribute_exists(pk)")}},
			}})
			return err
		}, false, "AccessDeniedException"},
		{"an operation the gate does not map", func(c *dynamodb.Client) error {
			_, err := c.DescribeEndpoints(ctx, &dynamodb.DescribeEndpointsInput{})
			return err
		}, false, "AccessDeniedException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached.Load()
			err := tc.call(fn)
			if tc.allowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if reached.Load() != before+1 {
					t.Fatal("the allowed call did not reach DynamoDB")
				}
				return
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if !strings.Contains(ae.ErrorMessage(), "assumed-role/FnRole/Fn") {
				t.Errorf("message %q does not name the caller", ae.ErrorMessage())
			}
			if reached.Load() != before {
				t.Fatal("a refused call reached DynamoDB")
			}
		})
	}
	if n := len(g.Denials()); n != 5 {
		t.Errorf("%d denials recorded, want 5", n)
	}

	t.Run("unknown credentials", func(t *testing.T) {
		_, err := client(g, srv.URL, aws.Credentials{AccessKeyID: "AKIAUNKNOWN", SecretAccessKey: "x"}).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Things"), Key: key})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "UnrecognizedClientException" {
			t.Fatalf("error %v, want UnrecognizedClientException", err)
		}
	})
	t.Run("the runtime's own credentials", func(t *testing.T) {
		if _, err := client(g, srv.URL, iamgate.AdminCredentials).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Other"), Key: key}); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
}

func TestUsageCountsTheGrantsCallsUsed(t *testing.T) {
	g := newGate(t, "stack.cfn.json")
	srv, _ := fakeDynamoDB(t)
	fn := client(g, srv.URL, g.FunctionRole("Fn").Credentials())
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	if _, err := fn.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("Things"), Key: key}); err != nil {
		t.Fatal(err)
	}
	u := g.Usage()
	if len(u.Used) != 1 || u.Used[0].Action != "dynamodb:GetItem" {
		t.Fatalf("used %v, want the GetItem grant only", u.Used)
	}
	if len(u.Granted) != 4 { // GetItem, PutItem, Query; the Deny grants nothing; the rule's permission
		t.Fatalf("granted %v", u.Granted)
	}
}

func TestAuthorizeInvoke(t *testing.T) {
	g := newGate(t, "stack.cfn.json")
	inv, err := g.RuleInvocation("Rule")
	if err != nil {
		t.Fatal(err)
	}
	if inv.FunctionARN != "arn:aws:lambda:us-east-1:123456789012:function:Fn:live" || inv.Service != "events.amazonaws.com" {
		t.Fatalf("invocation %+v", inv)
	}
	if err := g.AuthorizeInvoke(inv); err != nil {
		t.Fatalf("the rule with a permission was refused: %v", err)
	}
	other, err := g.RuleInvocation("OtherRule")
	if err != nil {
		t.Fatal(err)
	}
	var denied *iamgate.DeniedError
	if err := g.AuthorizeInvoke(other); !errors.As(err, &denied) {
		t.Fatalf("a rule without a permission was allowed: %v", err)
	}
	unqualified := inv
	unqualified.FunctionARN = "arn:aws:lambda:us-east-1:123456789012:function:Fn"
	if err := g.AuthorizeInvoke(unqualified); !errors.As(err, &denied) {
		t.Fatalf("the permission on the alias allowed the unqualified function: %v", err)
	}
	if err := g.AuthorizeInvoke(iamgate.Invocation{Role: g.FunctionRole("Fn"), FunctionARN: inv.FunctionARN}); !errors.As(err, &denied) {
		t.Fatalf("a role without lambda:InvokeFunction invoked: %v", err)
	}
}

func TestNewRefusesWhatItCannotCheck(t *testing.T) {
	for _, tc := range []struct{ name, old, new, want string }{
		{"an unknown managed policy", `service-role/AWSLambdaBasicExecutionRole"`, `service-role/AWSLambdaVPCAccessExecutionRole"`, "AWSLambdaVPCAccessExecutionRole"},
		{"a trust policy that does not admit Lambda", `"Service": "lambda.amazonaws.com"`, `"Service": "states.amazonaws.com"`, "does not let lambda.amazonaws.com assume it"},
		{"a permission property not modelled", `"SourceArn": {"Fn::GetAtt": ["Rule", "Arn"]}`, `"SourceArn": {"Fn::GetAtt": ["Rule", "Arn"]}, "EventSourceToken": "t"`, "EventSourceToken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := readFile("testdata/stack.cfn.json")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(data, tc.old) {
				t.Fatalf("testdata has no %s", tc.old)
			}
			tpl, err := cfn.Parse("stack.cfn.json", []byte(strings.Replace(data, tc.old, tc.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = iamgate.New(tpl, env, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func readFile(name string) (string, error) {
	data, err := os.ReadFile(name)
	return string(data), err
}

// AuthorizeRequest checks a request that a local endpoint serves itself
// (Lambda's Invoke, CodeDeploy) against the policies of the caller whose
// credentials signed it; the client's Transport lets such a request pass
// to that endpoint unchecked, and checks the others.
func TestAuthorizeRequest(t *testing.T) {
	g := newGate(t, "stack.cfn.json")
	role := g.FunctionRole("Fn")
	sign := func(creds aws.Credentials) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/2015-03-31/functions/x/invocations", nil)
		r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+creds.AccessKeyID+"/20261127/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=0")
		return r
	}
	table := "arn:aws:dynamodb:us-east-1:123456789012:table/Things"
	var denied *iamgate.DeniedError
	if err := g.AuthorizeRequest(sign(role.Credentials()), "dynamodb:GetItem", table); err != nil {
		t.Errorf("a granted action was refused: %v", err)
	}
	if err := g.AuthorizeRequest(sign(role.Credentials()), "lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:Fn:1"); !errors.As(err, &denied) {
		t.Errorf("an action the role lacks was allowed: %v", err)
	}
	if err := g.AuthorizeRequest(sign(aws.Credentials{AccessKeyID: "AKIAUNKNOWN"}), "dynamodb:GetItem", table); !errors.As(err, &denied) {
		t.Errorf("unknown credentials were allowed: %v", err)
	}
	if err := g.AuthorizeRequest(sign(iamgate.AdminCredentials), "lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:Fn"); err != nil {
		t.Errorf("the runtime's credentials were refused: %v", err)
	}

	var reached int
	next := roundTripFunc(func(*http.Request) (*http.Response, error) {
		reached++
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}, nil
	})
	rt := g.Transport(next)
	for _, tc := range []struct {
		name   string
		req    *http.Request
		passes bool
	}{
		{"Lambda's Invoke", sign(role.Credentials()), true},
		{"CodeDeploy", func() *http.Request {
			r := sign(role.Credentials())
			r.URL.Path = "/"
			r.Header.Set("X-Amz-Target", "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus")
			return r
		}(), true},
		{"another service", func() *http.Request {
			r := sign(role.Credentials())
			r.URL.Path = "/"
			r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
			return r
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			resp, err := rt.RoundTrip(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if passed := reached > before; passed != tc.passes || (tc.passes && resp.StatusCode != http.StatusOK) {
				t.Fatalf("passed %v (status %d), want %v", passed, resp.StatusCode, tc.passes)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
