package apigateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/apigateway"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// exampleREST is a REST API request of an IAM caller.
func exampleREST(key, body string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		HTTPMethod: "POST", Path: "/transfers", Body: body,
		Headers:        map[string]string{"Idempotency-Key": key},
		RequestContext: events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: "arn:aws:iam::111122223333:user/alice"}},
	}
}

// A REST API's handler made idempotent: the retry gets the stored
// response, marked replayed; the same key with another body is refused.
// In a Lambda: lambda.Start(handler).
func ExampleREST() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	created := 0
	handler := apigateway.REST(idem, apigateway.Config[events.APIGatewayProxyRequest]{}, func(_ context.Context, r events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		created++
		return events.APIGatewayProxyResponse{StatusCode: 201, Body: fmt.Sprintf(`{"id":"t-%d"}`, created)}, nil
	})
	ctx := context.Background()
	for _, body := range []string{`{"amount":5}`, `{"amount":5}`, `{"amount":6}`} {
		resp, _ := handler(ctx, exampleREST("9b1c5e2a", body))
		fmt.Println(resp.StatusCode, resp.Headers[apigateway.ReplayedHeader], resp.Body)
	}
	// Output:
	// 201  {"id":"t-1"}
	// 201 true {"id":"t-1"}
	// 422  {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this Idempotency-Key was used with another request","code":"idempotency-key-reused"}
}

// An HTTP API's handler: here the caller is the JWT authorizer's subject.
// A 5xx response releases the key, so the retry runs the handler again.
func ExampleHTTP() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	runs := 0
	handler := apigateway.HTTP(idem, apigateway.Config[events.APIGatewayV2HTTPRequest]{}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		runs++
		if runs == 1 {
			return events.APIGatewayV2HTTPResponse{StatusCode: 503, Body: "ledger busy"}, nil
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "paid"}, nil
	})
	req := events.APIGatewayV2HTTPRequest{
		RawPath: "/payments", Body: `{"amount":5}`,
		Headers: map[string]string{"idempotency-key": "pay-77"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"iss": "https://issuer.example", "sub": "user-1"}},
			},
		},
	}
	for range 3 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[apigateway.ReplayedHeader])
	}
	// Output:
	// 503 ledger busy replayed=""
	// 200 paid replayed=""
	// 200 paid replayed="true"
}

// Config: another header, and a key that may be left out (then the
// handler runs without idempotency).
func ExampleConfig() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	runs := 0
	handler := apigateway.REST(idem, apigateway.Config[events.APIGatewayProxyRequest]{
		Header:      "X-Request-Key",
		OptionalKey: true,
	}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		runs++
		return events.APIGatewayProxyResponse{StatusCode: 200, Body: fmt.Sprint(runs)}, nil
	})
	keyed := exampleREST("", `{}`)
	keyed.Headers = map[string]string{"x-request-key": "r-1"}
	for _, r := range []events.APIGatewayProxyRequest{keyed, keyed, exampleREST("", `{}`)} {
		resp, _ := handler(context.Background(), r)
		fmt.Println(resp.StatusCode, resp.Body)
	}
	// Output:
	// 200 1
	// 200 1
	// 200 2
}

// The wrapper's own answers are problems: Code tells them apart.
func ExampleProblem() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	handler := apigateway.REST(idem, apigateway.Config[events.APIGatewayProxyRequest]{}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 200}, nil
	})
	for _, key := range []string{"", "tab\tkey"} {
		resp, _ := handler(context.Background(), exampleREST(key, `{}`))
		var p apigateway.Problem
		_ = json.Unmarshal([]byte(resp.Body), &p)
		fmt.Println(resp.Headers["Content-Type"], p.Status, p.Code, p.Code == apigateway.CodeKeyMissing)
	}
	// Output:
	// application/problem+json 400 idempotency-key-missing true
	// application/problem+json 400 idempotency-key-malformed false
}

// RESTCaller names the caller a REST API's authorizer or IAM
// authentication found; an anonymous request has none.
func ExampleRESTCaller() {
	signed := events.APIGatewayProxyRequest{RequestContext: events.APIGatewayProxyRequestContext{
		Identity: events.APIGatewayRequestIdentity{UserArn: "arn:aws:iam::111122223333:user/alice"},
	}}
	fmt.Println(apigateway.RESTCaller(signed))
	cognito := events.APIGatewayProxyRequest{RequestContext: events.APIGatewayProxyRequestContext{
		Authorizer: map[string]any{"claims": map[string]any{"iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Pool", "sub": "7f3c"}},
	}}
	fmt.Println(apigateway.RESTCaller(cognito))
	_, err := apigateway.RESTCaller(events.APIGatewayProxyRequest{})
	fmt.Println(errors.Is(err, apigateway.ErrNoCaller))
	// Output:
	// iam "arn:aws:iam::111122223333:user/alice" <nil>
	// jwt "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Pool" "7f3c" <nil>
	// true
}

func ExampleHTTPCaller() {
	req := events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{
		Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"iss": "https://issuer.example", "sub": "user-1"}},
		},
	}}
	fmt.Println(apigateway.HTTPCaller(req))
	// Output:
	// jwt "https://issuer.example" "user-1" <nil>
}

// Without a caller (an API without authorization), the default scope
// refuses the request: give Config.Scope instead.
func ExampleErrNoCaller() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	anonymous := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/signup", Headers: map[string]string{"Idempotency-Key": "s-1"}}
	ok := func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 201}, nil
	}
	resp, _ := apigateway.REST(idem, apigateway.Config[events.APIGatewayProxyRequest]{}, ok)(context.Background(), anonymous)
	fmt.Println(resp.StatusCode)
	resp, _ = apigateway.REST(idem, apigateway.Config[events.APIGatewayProxyRequest]{
		Scope: func(events.APIGatewayProxyRequest) (string, error) { return "public", nil },
	}, ok)(context.Background(), anonymous)
	fmt.Println(resp.StatusCode)
	// Output:
	// 500
	// 201
}

// The fingerprint is of the method, the path and the body, each length
// prefixed.
func ExampleCanonicalRequest() {
	fmt.Printf("%s\n", apigateway.CanonicalRequest("POST", "/transfers", []byte(`{"amount":5}`)))
	// Output:
	// 4:POST10:/transfers{"amount":5}
}
