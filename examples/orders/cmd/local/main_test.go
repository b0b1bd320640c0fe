package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/transfers/examples/orders/api"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// motoServer is moto's server as make moto installs it, or
// $ORDERS_MOTO_SERVER.
func motoServer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ORDERS_MOTO_SERVER")
	if bin == "" {
		bin = filepath.Join("..", "..", "..", "..", ".tools", "moto", "bin", "moto_server")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("moto's server is not installed (make moto, or ORDERS_MOTO_SERVER): %v", err)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The local server end to end, on DynamoDB Local and moto's SQS: an
// order over HTTP is stored, enqueued and charged by the worker; its
// retry is replayed; a message the worker fails is delivered again and,
// after maxReceiveCount receives, moved to the dead-letter queue.
func TestServe(t *testing.T) {
	db := idemtest.Client(t) // skips, under IDEMTEST_SKIP_UNAVAILABLE, without DynamoDB Local
	moto := motoServer(t)
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan ready, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, flags{port: 0, moto: moto, tmpl: "../../template.yaml", visibility: time.Second, maxReceive: 2}, func(r ready) { up <- r })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var r ready
	select {
	case r = <-up:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the server did not come up in 2 minutes")
	}

	t.Run("README", func(t *testing.T) { readmeSession(t, r.addr) })

	post := func(key, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/orders", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	const order = `{"customer":"c-42","sku":"mug","quantity":2,"amountCents":1800}`
	first, body := post("local-1", order)
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", first.StatusCode, body)
	}
	again, body2 := post("local-1", order)
	if again.StatusCode != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" || body2 != body {
		t.Errorf("retry: %d %v %s, want the first answer replayed", again.StatusCode, again.Header, body2)
	}
	if resp, _ := post("", order); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("without a key: %d, want 400", resp.StatusCode)
	}

	id := api.OrderID(api.AnonymousScope, "local-1")
	eventually(t, "the order PAID", func() bool {
		out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{
			TableName: aws.String("OrdersTable"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"orderId": &types.AttributeValueMemberS{Value: id}},
		})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := out.Item["status"].(*types.AttributeValueMemberS)
		return s != nil && s.Value == "PAID"
	})

	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sq := sqs.NewFromConfig(cfg)
	if _, err := sq.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(r.queueURL), MessageBody: aws.String(`{"orderId":"ord_unknown"}`)}); err != nil {
		t.Fatal(err)
	}
	var receives string
	eventually(t, "the failing message in the dead-letter queue", func() bool {
		out, err := sq.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.dlqURL), WaitTimeSeconds: 1, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if strings.Contains(aws.ToString(m.Body), "ord_unknown") {
				receives = m.Attributes["ApproximateReceiveCount"]
				return true
			}
		}
		return false
	})
	// The worker got it twice (maxReceiveCount) before it moved.
	if n, err := strconv.Atoi(receives); err != nil || n < 2 {
		t.Errorf("ApproximateReceiveCount %q, want at least 2", receives)
	}
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readmeSession runs the README's curl session against the server at
// addr and checks each answer as shown: the status line, every header
// but Date, and the body.
func readmeSession(t *testing.T, addr string) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "```console\n")
	if start < 0 {
		t.Fatal("README.md has no console session")
	}
	text = text[start+len("```console\n"):]
	text = text[:strings.Index(text, "\n```")]
	header := regexp.MustCompile(`-H '([^']*)'`)
	data := regexp.MustCompile(`-d '([^']*)'`)
	steps := strings.Split(text, "\n$ ")
	steps[0] = strings.TrimPrefix(steps[0], "$ ")
	for _, step := range steps {
		command, shown, _ := strings.Cut(step, "\n")
		if !strings.HasPrefix(command, "curl -si http://127.0.0.1:3001/orders ") {
			t.Fatalf("README.md: %q is no curl of the orders API", command)
		}
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/orders", strings.NewReader(data.FindStringSubmatch(command)[1]))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl -d sends
		for _, h := range header.FindAllStringSubmatch(command, -1) {
			k, v, _ := strings.Cut(h[1], ": ")
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		head, wantBody, _ := strings.Cut(strings.TrimSpace(shown), "\n\n")
		lines := strings.Split(head, "\n")
		if got := "HTTP/1.1 " + resp.Status; got != lines[0] {
			t.Errorf("%s: %s, README shows %s", command, got, lines[0])
		}
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ": ")
			if k != "Date" && resp.Header.Get(k) != v {
				t.Errorf("%s: %s: %q, README shows %q", command, k, resp.Header.Get(k), v)
			}
		}
		if string(body) != wantBody {
			t.Errorf("%s: body\n%s\nREADME shows\n%s", command, body, wantBody)
		}
	}
}
