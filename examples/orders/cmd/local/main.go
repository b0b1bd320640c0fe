// Command local serves the orders example on one machine: DynamoDB Local
// (idemtest.Start), an SQS-compatible server (moto's, started here, or
// the one at AWS_ENDPOINT_URL_SQS), the template's tables and queues,
// POST http://127.0.0.1:3001/orders for the api handler, and the queue's
// messages delivered to the worker handler in batches, as Lambda's event
// source mapping does: a message the worker reports failed is left on
// the queue and delivered again after its visibility timeout, and moved
// to the dead-letter queue after maxReceiveCount receives.
//
// The handlers are wired as the functions wire them, from the same
// environment variables (IDEMPOTENCY_TABLE, ORDERS_TABLE, QUEUE_URL) and
// the AWS SDK's endpoint variables (AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS), which this command sets.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/transfers/examples/orders"
	"github.com/exactlyonce/transfers/examples/orders/api"
	"github.com/exactlyonce/transfers/examples/orders/internal/template"
	"github.com/exactlyonce/transfers/examples/orders/worker"
	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/apigateway"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// timeout is the functions' Timeout in template.yaml: each invocation's
// deadline, which is also its idempotency lease.
const timeout = 10 * time.Second

func main() {
	if err := run(); err != nil {
		log.Fatalf("orders-local: %v", err)
	}
}

type flags struct {
	port       int
	moto       string
	tmpl       string
	visibility time.Duration
	maxReceive int
}

func run() error {
	var f flags
	flag.IntVar(&f.port, "port", 3001, "the API's port on 127.0.0.1")
	flag.StringVar(&f.moto, "moto", "", "moto_server to start for SQS (unless AWS_ENDPOINT_URL_SQS is set)")
	flag.StringVar(&f.tmpl, "template", template.Path(), "the SAM template whose tables are created")
	flag.DurationVar(&f.visibility, "visibility", 5*time.Second, "the queue's visibility timeout: how long a failed message waits before it is delivered again")
	flag.IntVar(&f.maxReceive, "max-receive", 5, "receives before a message moves to the dead-letter queue")
	flag.Parse()
	log.SetPrefix("orders-local: ")
	log.SetFlags(log.Ltime)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, f, func(r ready) { log.Printf("serving POST http://%s/orders", r.addr) })
}

// ready is what serve tells once it serves.
type ready struct {
	addr     string // the API's host:port
	queueURL string
	dlqURL   string
}

// serve runs the example until ctx ends: it starts what the environment
// does not name (DynamoDB Local, moto's server), creates the tables and
// queues, serves the API and delivers the queue to the worker. It calls
// up once it serves.
func serve(ctx context.Context, f flags, up func(ready)) error {
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" {
		startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		ddb, err := idemtest.Start(startCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("start DynamoDB Local: %w", err)
		}
		defer ddb.Stop()
		os.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb.Endpoint())
	}
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" {
		if f.moto == "" {
			return errors.New("set -moto (make local installs moto's server) or AWS_ENDPOINT_URL_SQS")
		}
		endpoint, stopMoto, err := startMoto(ctx, f.moto)
		if err != nil {
			return err
		}
		defer stopMoto()
		os.Setenv("AWS_ENDPOINT_URL_SQS", endpoint)
	}
	log.Printf("DynamoDB at %s, SQS at %s", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), os.Getenv("AWS_ENDPOINT_URL_SQS"))

	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	db, sq := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	if err := createTables(ctx, db, f.tmpl); err != nil {
		return err
	}
	queueURL, queueARN, dlqURL, err := createQueues(ctx, sq, f)
	if err != nil {
		return err
	}
	os.Setenv(orders.EnvIdempotencyTable, "IdempotencyTable")
	os.Setenv(orders.EnvOrdersTable, "OrdersTable")
	os.Setenv(orders.EnvQueueURL, queueURL)

	apiHandler, err := newAPI(ctx)
	if err != nil {
		return err
	}
	workerHandler, err := newWorker(ctx)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.port)))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: gateway(apiHandler), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		poll(ctx, sq, queueURL, queueARN, cfg.Region, workerHandler)
	}()
	up(ready{addr: ln.Addr().String(), queueURL: queueURL, dlqURL: dlqURL})
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-polled
	return nil
}

// newAPI wires the api handler as functions/api does.
func newAPI(ctx context.Context) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	env, err := orders.FromEnv(orders.EnvIdempotencyTable, orders.EnvOrdersTable, orders.EnvQueueURL)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(cfg)
	idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(db, env.IdempotencyTable), CacheSize: 1000})
	if err != nil {
		return nil, err
	}
	return api.New(idem, &api.Handler{DB: db, OrdersTable: env.OrdersTable, Queue: sqs.NewFromConfig(cfg), QueueURL: env.QueueURL}), nil
}

// newWorker wires the worker handler as functions/worker does.
func newWorker(ctx context.Context) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	env, err := orders.FromEnv(orders.EnvIdempotencyTable, orders.EnvOrdersTable)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(cfg)
	idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(db, env.IdempotencyTable), CacheSize: 1000})
	if err != nil {
		return nil, err
	}
	return worker.New(idem, &worker.Handler{DB: db, OrdersTable: env.OrdersTable, Payments: worker.FakePayments{}}), nil
}

// startMoto runs moto's server on a free loopback port and waits until
// it answers; stop ends it.
func startMoto(ctx context.Context, bin string) (endpoint string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.SysProcAttr = sysProcAttr()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start moto's server (make local installs it): %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return endpoint, stop, nil
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("moto's server exited: %s", out.String())
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("moto's server did not answer in 60s: %s", out.String())
		}
	}
}

// createTables creates the template's tables under their logical ids,
// with their Time to Live.
func createTables(ctx context.Context, db *dynamodb.Client, path string) error {
	tables, err := template.Tables(path)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := idemtest.CreateTable(ctx, db, t.Create); err != nil {
			return err
		}
		if in := t.TTLInput(t.LogicalID); in != nil {
			if _, err := db.UpdateTimeToLive(ctx, in); err != nil {
				return err
			}
		}
		log.Printf("table %s", t.LogicalID)
	}
	return nil
}

// createQueues creates the orders queue and its dead-letter queue, and
// returns the queue's URL and ARN, and the dead-letter queue's URL.
func createQueues(ctx context.Context, sq *sqs.Client, f flags) (url, arn, dlqURL string, err error) {
	dlq, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders-dlq")})
	if err != nil {
		return "", "", "", fmt.Errorf("create the dead-letter queue: %w", err)
	}
	dlqARN, err := queueARN(ctx, sq, aws.ToString(dlq.QueueUrl))
	if err != nil {
		return "", "", "", err
	}
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(f.visibility.Seconds())),
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqARN, f.maxReceive),
	}})
	if err != nil {
		return "", "", "", fmt.Errorf("create the queue: %w", err)
	}
	arn, err = queueARN(ctx, sq, aws.ToString(q.QueueUrl))
	if err != nil {
		return "", "", "", err
	}
	log.Printf("queue %s (dead letters to %s after %d receives)", aws.ToString(q.QueueUrl), dlqARN, f.maxReceive)
	return aws.ToString(q.QueueUrl), arn, aws.ToString(dlq.QueueUrl), nil
}

func queueARN(ctx context.Context, sq *sqs.Client, url string) (string, error) {
	out, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", err
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}

// gateway is the HTTP API: POST /orders as a payload format 2.0 event
// (header names in lower case, as API Gateway passes them), each
// invocation with the function's timeout as its deadline.
func gateway(h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/orders" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"Not Found"}`)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		headers := map[string]string{}
		for k, v := range r.Header {
			headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		req := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: "POST /orders", RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
			Headers: headers, Body: string(body),
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				RouteKey: "POST /orders", Stage: "$default", DomainName: r.Host,
				RequestID: strconv.FormatInt(time.Now().UnixNano(), 36), TimeEpoch: time.Now().UnixMilli(),
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: host, UserAgent: r.UserAgent()},
			},
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		resp, err := h(ctx, req)
		if err != nil {
			log.Printf("api: %v", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"message":"Internal Server Error"}`)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		out := []byte(resp.Body)
		if resp.IsBase64Encoded {
			if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
				log.Printf("api: %v", err)
			}
		}
		w.Write(out)
		replayed := ""
		if resp.Headers[apigateway.ReplayedHeader] == "true" {
			replayed = " (replayed)"
		}
		log.Printf("api: POST /orders key=%q -> %d%s", headers["idempotency-key"], resp.StatusCode, replayed)
	})
}

// poll delivers the queue's messages to the worker until ctx ends, in
// batches of up to 10, and deletes those the worker did not report
// failed; an error of the worker fails the whole batch.
func poll(ctx context.Context, sq *sqs.Client, url, arn, region string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	for ctx.Err() == nil {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				log.Printf("worker: receive: %v", err)
				time.Sleep(time.Second)
			}
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		ev := events.SQSEvent{}
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes,
				EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: region,
			})
		}
		ictx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := h(ictx, ev)
		cancel()
		failed := map[string]bool{}
		if err != nil {
			log.Printf("worker: the batch failed: %v", err)
			continue
		}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var done []sqstypes.DeleteMessageBatchRequestEntry
		for _, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				done = append(done, sqstypes.DeleteMessageBatchRequestEntry{Id: m.MessageId, ReceiptHandle: m.ReceiptHandle})
			}
		}
		if len(done) > 0 {
			if _, err := sq.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: done}); err != nil {
				log.Printf("worker: delete: %v", err)
			}
		}
		if len(failed) > 0 {
			log.Printf("worker: batch of %d, %d done, %d reported failed: delivered again after the visibility timeout", len(out.Messages), len(done), len(failed))
		} else {
			log.Printf("worker: batch of %d done", len(out.Messages))
		}
	}
}
