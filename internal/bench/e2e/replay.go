package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/google/uuid"

	"github.com/exactlyonce/transfers/internal/local/stack"
)

// ReplayConfig is one replay of a Mix.
type ReplayConfig struct {
	// Clients, Duration, Count and Warmup: as in Config; one pass of the
	// mix is one transfer.
	Clients  int
	Duration time.Duration
	Count    int
	Warmup   int
	// Pairs are the accounts worker i replays the mix on:
	// Pairs[i%len(Pairs)], as Run assigns them to its clients. Empty is
	// the captured transfer's pair for every worker.
	Pairs []Pair
	// around, when set, is called for each operation of the measured
	// passes with the request as it will be sent; send sends it (Meter).
	around func(ctx context.Context, o Op, body []byte, send func() (string, []byte, error)) (string, []byte, error)
}

// ReplayResult is what a replay measured.
type ReplayResult struct {
	Clients int
	// Transfers is the number of measured passes of the mix.
	Transfers int
	// Elapsed is the measurement's wall time; PerSecond is Transfers /
	// Elapsed.
	Elapsed   time.Duration
	PerSecond float64
	// Latencies holds each measured pass's duration, in completion order.
	Latencies []time.Duration
	// OpsPerTransfer is the number of operations of one pass, and Kinds
	// counts them by Op.Kind.
	OpsPerTransfer int
	Kinds          map[string]int
	// Issued is the number of operations the measured passes sent.
	Issued int
	// ConditionFailures counts the operations whose condition failed (a
	// ConditionalCheckFailedException, or a cancelled transaction with a
	// ConditionalCheckFailed reason); Failures counts every failed
	// operation by error code, those included. A faithful replay has
	// none.
	ConditionFailures int
	Failures          map[string]int
}

// Replay issues the mix's operations in order, one pass per transfer,
// from cfg.Clients concurrent workers straight to the stack's DynamoDB
// over HTTP (signed, keep-alive), as the Step Functions endpoint sends
// its integration calls. Each pass rewrites the captured identifiers in
// the requests: a new transfer id, a new Idempotency-Key and so a new
// record key, new idempotency tokens of the transactions
// (ClientRequestToken), and the worker's pair for the captured accounts,
// so that every condition holds as it did in the real transfer. A failed
// operation is counted, and the pass goes on with the next one.
func Replay(ctx context.Context, st *stack.Stack, mix Mix, cfg ReplayConfig) (ReplayResult, error) {
	if len(mix.Ops) == 0 {
		return ReplayResult{}, errors.New("e2e: replay: the mix has no operations")
	}
	if mix.TransferID == "" || mix.RecordKey == "" || mix.Pair.Source == "" || mix.Pair.Destination == "" {
		return ReplayResult{}, errors.New("e2e: replay: the mix lacks its transfer id, record key or accounts")
	}
	pairs := cfg.Pairs
	if len(pairs) == 0 {
		pairs = []Pair{mix.Pair}
	}
	c, err := Config{Clients: cfg.Clients, Duration: cfg.Duration, Count: cfg.Count, Warmup: cfg.Warmup, Pairs: pairs}.withDefaults()
	if err != nil {
		return ReplayResult{}, fmt.Errorf("e2e: replay: %w", err)
	}
	caller := mix.Caller
	if caller == "" {
		caller = DefaultCaller
	}
	// The SDK gives each TransactWriteItems an idempotency token: sent
	// again with other parameters it is refused
	// (IdempotentParameterMismatchException), with the same ones it is
	// not applied again. Each pass gets new tokens.
	var tokens []string
	for i, o := range mix.Ops {
		var tok struct{ ClientRequestToken string }
		if err := json.Unmarshal(o.Body, &tok); err != nil {
			return ReplayResult{}, fmt.Errorf("e2e: replay: operation %d is not JSON: %w", i+1, err)
		}
		if tok.ClientRequestToken != "" {
			tokens = append(tokens, tok.ClientRequestToken)
		}
	}
	w := newWire(st.DynamoDBEndpoint, c.Clients)
	defer w.http.CloseIdleConnections()

	res := ReplayResult{Clients: c.Clients, OpsPerTransfer: len(mix.Ops), Kinds: mix.Kinds(), Failures: map[string]int{}}
	var mu sync.Mutex
	one := func(ctx context.Context, worker, _ int, measured bool) error {
		pair := pairs[worker%len(pairs)]
		key := "e2e-replay-" + uuid.NewString()
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("new transfer id: %w", err)
		}
		subst := []string{
			mix.TransferID, id.String(),
			mix.RecordKey, recordKeyOf(caller, key),
			mix.Key, key,
			mix.Pair.Source, pair.Source,
			mix.Pair.Destination, pair.Destination,
		}
		for _, tok := range tokens {
			subst = append(subst, tok, uuid.NewString())
		}
		rw := strings.NewReplacer(subst...)
		start := time.Now()
		var failed []string
		// The versions this pass read of its accounts, by pk: a leg's
		// transaction expects the version its read returned, and numbers
		// its entry with the next (internal/ledger).
		versions := map[string]int64{}
		for _, o := range mix.Ops {
			body := []byte(rw.Replace(string(o.Body)))
			if o.Operation == "TransactWriteItems" {
				if body, err = withVersions(body, versions); err != nil {
					return fmt.Errorf("replay %s: %w", o.Operation, err)
				}
			}
			send := func() (string, []byte, error) { return w.do(ctx, o.Operation, body) }
			var (
				code   string
				answer []byte
			)
			if cfg.around != nil && measured {
				code, answer, err = cfg.around(ctx, o, body, send)
			} else {
				code, answer, err = send()
			}
			if err != nil {
				return fmt.Errorf("replay %s: %w", o.Operation, err)
			}
			if code != "" {
				failed = append(failed, code)
			}
			if o.Operation == "GetItem" && code == "" {
				if pk, v, ok := accountVersion(body, answer); ok {
					versions[pk] = v
				}
			}
		}
		took := time.Since(start)
		if !measured {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		res.Latencies = append(res.Latencies, took)
		res.Issued += len(mix.Ops)
		for _, code := range failed {
			res.Failures[code]++
			if isConditionFailure(code) {
				res.ConditionFailures++
			}
		}
		return nil
	}
	elapsed, err := loop(ctx, c.Clients, c.Warmup, c.Duration, c.Count, one)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("e2e: replay with %d clients: %w", c.Clients, err)
	}
	res.Transfers, res.Elapsed = len(res.Latencies), elapsed
	res.PerSecond = perSecond(res.Transfers, elapsed)
	return res, nil
}

// accountVersion reads an account's version from a GetItem of the
// account item (request) and its answer: the item's pk and version; ok
// is false for any other read.
func accountVersion(request, answer []byte) (pk string, version int64, ok bool) {
	var in struct {
		Key struct {
			PK struct{ S string } `json:"pk"`
			SK struct{ S string } `json:"sk"`
		}
	}
	var out struct {
		Item struct {
			Version *struct{ N string } `json:"version"`
		}
	}
	if json.Unmarshal(request, &in) != nil || in.Key.SK.S != "ACCOUNT" || json.Unmarshal(answer, &out) != nil || out.Item.Version == nil {
		return "", 0, false
	}
	v, err := strconv.ParseInt(out.Item.Version.N, 10, 64)
	return in.Key.PK.S, v, err == nil
}

// withVersions sets, in a leg's transaction, the version its account
// update expects (the condition "version = :v") to the version read of
// that account, and its entry's seq to the next one, as the leg does.
// Accounts not read keep the captured values.
func withVersions(body []byte, versions map[string]int64) ([]byte, error) {
	var tx map[string]any
	if err := json.Unmarshal(body, &tx); err != nil {
		return nil, fmt.Errorf("transaction is not JSON: %w", err)
	}
	items, _ := tx["TransactItems"].([]any)
	posted := map[string]int64{} // pk -> version expected
	for _, it := range items {
		upd, _ := it.(map[string]any)["Update"].(map[string]any)
		if upd == nil {
			continue
		}
		pk := attrS(upd["Key"], "pk")
		v, read := versions[pk]
		if !read {
			continue
		}
		names, _ := upd["ExpressionAttributeNames"].(map[string]any)
		values, _ := upd["ExpressionAttributeValues"].(map[string]any)
		cond, _ := upd["ConditionExpression"].(string)
		for placeholder, name := range names {
			if name != "version" {
				continue
			}
			m := regexp.MustCompile(regexp.QuoteMeta(placeholder) + ` = (:[A-Za-z0-9_]+)`).FindStringSubmatch(cond)
			if m == nil {
				continue
			}
			values[m[1]] = map[string]any{"N": strconv.FormatInt(v, 10)}
			posted[pk] = v
		}
	}
	for _, it := range items {
		put, _ := it.(map[string]any)["Put"].(map[string]any)
		if put == nil {
			continue
		}
		item, _ := put["Item"].(map[string]any)
		if v, ok := posted[attrS(item, "pk")]; ok && item["seq"] != nil {
			item["seq"] = map[string]any{"N": strconv.FormatInt(v+1, 10)}
		}
	}
	return json.Marshal(tx)
}

// attrS is the string attribute name of a DynamoDB JSON item or key.
func attrS(item any, name string) string {
	m, _ := item.(map[string]any)
	a, _ := m[name].(map[string]any)
	s, _ := a["S"].(string)
	return s
}

// isConditionFailure reports whether an error code (see Op.Error) is a
// failed condition.
func isConditionFailure(code string) bool {
	return code == "ConditionalCheckFailedException" ||
		strings.HasPrefix(code, "TransactionCanceledException") && strings.Contains(code, "ConditionalCheckFailed")
}

// wire sends DynamoDB JSON requests as they are, signed with Signature
// Version 4 and static local credentials.
type wire struct {
	url    string
	http   *http.Client
	signer *v4.Signer
	creds  aws.Credentials
}

func newWire(endpoint string, conns int) *wire {
	return &wire{
		url:    strings.TrimSuffix(endpoint, "/") + "/",
		http:   &http.Client{Transport: newTransport(conns)},
		signer: v4.NewSigner(),
		creds:  aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"},
	}
}

// maxResponse bounds a DynamoDB answer.
const maxResponse = 4 << 20

// do sends one operation and returns its error code ("" for success) and
// its answer; err is a failure to get an answer at all.
func (w *wire) do(ctx context.Context, operation string, body []byte) (string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", dynamoDBTargetPrefix+operation)
	sum := sha256.Sum256(body)
	if err := w.signer.SignHTTP(ctx, w.creds, req, hex.EncodeToString(sum[:]), "dynamodb", stack.Region, time.Now()); err != nil {
		return "", nil, fmt.Errorf("sign: %w", err)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return "", nil, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return "", raw, nil
	}
	return errorCode(raw), raw, nil
}
