package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
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
	"github.com/aws/aws-xray-sdk-go/xray"
)

// daemon is a stand-in for the X-Ray daemon: it keeps the documents the
// X-Ray SDK sends it over UDP.
type daemon struct {
	conn net.PacketConn
}

func newDaemon(t *testing.T) *daemon {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &daemon{conn: conn}
}

// next returns the next document received (after its header line).
func (d *daemon) next(t *testing.T) []byte {
	t.Helper()
	buf := make([]byte, 64*1024)
	_ = d.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := d.conn.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no segment sent to the daemon: %v", err)
	}
	_, doc, _ := bytes.Cut(buf[:n], []byte("\n"))
	return doc
}

// tracedConfig is the configuration Main builds, on an endpoint that
// counts the requests it gets.
func tracedConfig(t *testing.T) (aws.Config, *int) {
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
	traced(&cfg)
	return cfg, &requests
}

// Within a trace, each DynamoDB and Step Functions call is a subsegment
// named after its service, and it is the only request made: tracing adds
// no remote call.
func TestTracedClientsRecordSubsegments(t *testing.T) {
	d := newDaemon(t)
	if err := xray.Configure(xray.Config{DaemonAddr: d.conn.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
	cfg, requests := tracedConfig(t)

	ctx, seg := xray.BeginSegment(context.Background(), "transfer")
	if _, err := dynamodb.NewFromConfig(cfg).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if _, err := sfn.NewFromConfig(cfg).StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:T")}); err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	seg.Close(nil)

	if *requests != 2 {
		t.Errorf("requests = %d, want 2", *requests)
	}
	calls := map[string]string{}
	var doc any
	if err := json.Unmarshal(d.next(t), &doc); err != nil {
		t.Fatal(err)
	}
	collectCalls(doc, calls)
	if calls["DynamoDB"] != "GetItem" || calls["SFN"] != "StartExecution" {
		t.Errorf("subsegments %v, want DynamoDB GetItem and SFN StartExecution", calls)
	}
}

// collectCalls maps the name of each (sub)segment that records an AWS call
// to its operation.
func collectCalls(v any, calls map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if aws, ok := v["aws"].(map[string]any); ok {
			if op, ok := aws["operation"].(string); ok {
				calls[v["name"].(string)] = op
			}
		}
		for _, c := range v {
			collectCalls(c, calls)
		}
	case []any:
		for _, c := range v {
			collectCalls(c, calls)
		}
	}
}

// Outside a trace (the local runtime, a test) the traced clients still
// work.
func TestTracedClientsWorkWithoutATrace(t *testing.T) {
	cfg, requests := tracedConfig(t)
	if _, err := dynamodb.NewFromConfig(cfg).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if *requests != 1 {
		t.Errorf("requests = %d, want 1", *requests)
	}
}
