package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/xray"
	"github.com/exactlyonce/transfers/internal/xray/xraytest"
)

// tracedConfig is the configuration Main builds with the daemon address
// addr, on an endpoint that counts the requests it gets.
func tracedConfig(t *testing.T, addr string) (aws.Config, func() int, error) {
	t.Helper()
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String(srv.URL),
	}
	err := traced(&cfg, addr)
	return cfg, func() int { mu.Lock(); defer mu.Unlock(); return requests }, err
}

func callBoth(t *testing.T, ctx context.Context, cfg aws.Config) {
	t.Helper()
	if _, err := dynamodb.NewFromConfig(cfg).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if _, err := sfn.NewFromConfig(cfg).StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:T")}); err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
}

// Within a sampled invocation, each DynamoDB and Step Functions call is a
// subsegment of the invocation's segment, named after its service, and
// it is the only request made: tracing adds no remote call. Outside one,
// or with an unusable daemon address, the clients work untraced.
func TestTracedClients(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	tests := []struct {
		name      string
		header    string
		badAddr   bool
		wantCalls map[string]string // subsegment name -> operation
	}{
		{name: "sampled invocation", header: header, wantCalls: map[string]string{"DynamoDB": "GetItem", "SFN": "StartExecution"}},
		{name: "outside an invocation"},
		{name: "unusable daemon address", header: header, badAddr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := xraytest.NewDaemon(t)
			addr := d.Addr()
			if tt.badAddr {
				addr = "tcp:" + addr
			}
			cfg, requests, err := tracedConfig(t, addr)
			if (err != nil) != tt.badAddr {
				t.Fatalf("traced: %v, want an error %v", err, tt.badAddr)
			}
			ctx := context.Background()
			if tt.header != "" {
				ctx = xray.ContextWithTraceHeader(ctx, tt.header)
			}
			callBoth(t, ctx, cfg)
			if requests() != 2 {
				t.Errorf("requests = %d, want 2", requests())
			}
			calls := map[string]string{}
			for {
				msg := d.Next(t, 200*time.Millisecond)
				if msg == nil {
					break
				}
				_, doc, _ := bytes.Cut(msg, []byte("\n"))
				var seg struct {
					Name     string `json:"name"`
					ParentID string `json:"parent_id"`
					AWS      struct {
						Operation string `json:"operation"`
					} `json:"aws"`
				}
				if err := json.Unmarshal(doc, &seg); err != nil {
					t.Fatalf("document %s: %v", doc, err)
				}
				if seg.ParentID != "53995c3f42cd8ad8" {
					t.Errorf("subsegment %s has parent %s, want the invocation's segment", seg.Name, seg.ParentID)
				}
				calls[seg.Name] = seg.AWS.Operation
			}
			if len(calls) != len(tt.wantCalls) {
				t.Fatalf("subsegments %v, want %v", calls, tt.wantCalls)
			}
			for name, op := range tt.wantCalls {
				if calls[name] != op {
					t.Errorf("subsegments %v, want %s %s", calls, name, op)
				}
			}
		})
	}
}
