package apigateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/apigateway"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// counted is a client of DynamoDB Local that counts the calls it sends.
func counted(t *testing.T) (*dynamodb.Client, *atomic.Int64) { return idemtest.CountingClient(t) }

// TestRESTOnDynamoDB: the REST wrapper over DynamoDB Local, with the
// DynamoDB calls of each request: a new one two, a duplicate one, a key
// reused one, a 5xx two (acquire, release), a request without a key none.
func TestRESTOnDynamoDB(t *testing.T) {
	client, n := counted(t)
	table := idemtest.Table(t, client)
	store := idempotency.NewDynamoDBPersistence(client, table)
	idem, err := idempotency.New(idempotency.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	handler := apigateway.REST(idem, apigateway.Config[events.APIGatewayProxyRequest]{}, func(_ context.Context, r events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		runs++
		if r.Path == "/fail" && runs == 3 {
			return events.APIGatewayProxyResponse{StatusCode: 502, Body: "upstream"}, nil
		}
		return events.APIGatewayProxyResponse{StatusCode: 201, Headers: map[string]string{"Location": r.Path + "/1"}, Body: r.Body}, nil
	})
	req := func(key, path, body string) events.APIGatewayProxyRequest {
		return events.APIGatewayProxyRequest{
			HTTPMethod: "POST", Path: path, Body: body,
			Headers:        map[string]string{"Idempotency-Key": key},
			RequestContext: events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: alice}},
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	steps := []struct {
		name     string
		req      events.APIGatewayProxyRequest
		status   int
		replayed bool
		calls    int64
		runs     int
	}{
		{"new", req("k1", "/transfers", `{"amount":5}`), 201, false, 2, 1},
		{"duplicate", req("k1", "/transfers", `{"amount":5}`), 201, true, 1, 1},
		{"key reused", req("k1", "/transfers", `{"amount":6}`), 422, false, 1, 1},
		{"no key", req("", "/transfers", `{"amount":5}`), 400, false, 0, 1},
		{"another key", req("k2", "/fail", `{}`), 201, false, 2, 2},
		{"5xx releases", req("k3", "/fail", `{}`), 502, false, 2, 3},
		{"retry after a 5xx runs", req("k3", "/fail", `{}`), 201, false, 2, 4},
		{"and is replayed", req("k3", "/fail", `{}`), 201, true, 1, 4},
	}
	for _, s := range steps {
		before := n.Load()
		resp, err := handler(ctx, s.req)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if resp.StatusCode != s.status || (resp.Headers[apigateway.ReplayedHeader] == "true") != s.replayed {
			t.Errorf("%s: response %+v, want %d replayed %v", s.name, resp, s.status, s.replayed)
		}
		if got := n.Load() - before; got != s.calls {
			t.Errorf("%s: %d DynamoDB calls, want %d", s.name, got, s.calls)
		}
		if runs != s.runs {
			t.Errorf("%s: handler runs = %d, want %d", s.name, runs, s.runs)
		}
	}
	e, err := store.Get(ctx, aliceScope, "k3")
	if err != nil || e.Status != idempotency.EntryCompleted || e.LeaseCount != 2 {
		t.Errorf("record of k3 = %+v, %v, want COMPLETED under its second lease", e, err)
	}
}
