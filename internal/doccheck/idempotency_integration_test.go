//go:build integration

package doccheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/iam"
	"github.com/exactlyonce/transfers/internal/local/lambdaproc"
)

// idempotencyPage is the library's getting-started page.
const idempotencyPage = "docs/idempotency/README.md"

// fencedBlocks returns the fenced code blocks of page in language lang.
func fencedBlocks(page, lang string) []string {
	re := regexp.MustCompile("(?ms)^```" + regexp.QuoteMeta(lang) + "\n(.*?)^```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestIdempotencyGettingStarted runs the getting-started page as a reader
// would: its template's table is created in DynamoDB Local, its handler
// is built and run as a Lambda bootstrap against that table, and every
// DynamoDB call the handler makes is checked against the page's IAM
// policy.
func TestIdempotencyGettingStarted(t *testing.T) {
	page := read(t, idempotencyPage)
	yamls, gos := fencedBlocks(page, "yaml"), fencedBlocks(page, "go")
	if len(yamls) != 1 || len(gos) != 1 {
		t.Fatalf("%s has %d yaml and %d go blocks, want one of each", idempotencyPage, len(yamls), len(gos))
	}
	dir := t.TempDir()
	tplPath := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(tplPath, []byte(yamls[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl, err := cfn.Load(tplPath)
	if err != nil {
		t.Fatalf("the page's template: %v", err)
	}
	env := cfn.Env{StackName: "doccheck-" + randomHex(4)}
	tables, err := tpl.Tables(env)
	if err != nil || len(tables) != 1 {
		t.Fatalf("the page's template has tables %v, %v; want one", tables, err)
	}
	funcs, err := tpl.Functions(env)
	if err != nil || len(funcs) != 1 {
		t.Fatalf("the page's template has functions %v, %v; want one", funcs, err)
	}
	fn := funcs[0]
	policy := functionPolicy(t, tpl, env, fn.LogicalID)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := idemtest.Start(ctx)
	if err != nil {
		t.Fatalf("DynamoDB Local: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	client := idemtest.NewClient(srv.Endpoint())
	if err := cfn.CreateTables(ctx, client, tables, nil); err != nil {
		t.Fatal(err)
	}
	table := tables[0].Input
	tableARN := fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", cfn.DefaultRegion, cfn.DefaultAccountID, *table.TableName)

	calls := &recorder{}
	proxy := httptest.NewServer(calls.proxy(t, srv.Endpoint()))
	t.Cleanup(proxy.Close)

	bootstrap := buildSnippet(t, gos[0], dir)
	fnEnv := map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": proxy.URL,
		"AWS_ACCESS_KEY_ID":         "local",
		"AWS_SECRET_ACCESS_KEY":     "local",
	}
	for k, v := range fn.Environment {
		fnEnv[k] = v
	}
	proc, err := lambdaproc.New(lambdaproc.Config{Bootstrap: bootstrap, Name: fn.Name, Timeout: fn.Timeout, Env: fnEnv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Close(context.Background()) })
	handler := proc.NewHandler()

	invoke := func(order string) (string, error) {
		out, err := handler.Invoke(ctx, []byte(order))
		return string(out), err
	}
	first, err := invoke(`{"id":"order-42","amount":100}`)
	if err != nil || first != `{"paymentId":"pay-order-42"}` {
		t.Fatalf("first call = %s, %v", first, err)
	}
	firstCalls := calls.take()
	again, err := invoke(`{"id":"order-42","amount":100}`)
	if err != nil || again != first {
		t.Fatalf("the same order again = %s, %v; want %s", again, err, first)
	}
	if _, err := invoke(`{"id":"order-42","amount":999}`); err == nil || !strings.Contains(err.Error(), "different request") {
		t.Errorf("the same id with another amount = %v; want the key refused as reused", err)
	}
	// The page's table of store calls: two for a new order; a duplicate
	// is served from the cache.
	if want := []string{"UpdateItem", "UpdateItem"}; !slices.Equal(firstCalls, want) {
		t.Errorf("a new order made the calls %v, want %v", firstCalls, want)
	}
	// Both later calls found the settled record in the container's cache.
	if later := calls.take(); len(later) != 0 {
		t.Errorf("the duplicate and the reused key made the calls %v; want none (the cache answers both)", later)
	}
	for _, c := range calls.all() {
		if c.table != *table.TableName {
			t.Errorf("dynamodb:%s on table %q, want %q", c.op, c.table, *table.TableName)
		}
		res, err := iam.Evaluate(iam.Request{
			Principal: fmt.Sprintf("arn:aws:iam::%s:role/%sRole", cfn.DefaultAccountID, fn.LogicalID),
			Action:    "dynamodb:" + c.op, Resource: tableARN, Context: map[string][]string{},
		}, []*iam.Policy{policy}, nil)
		if err != nil {
			t.Fatalf("evaluate %s: %v", c.op, err)
		}
		if res.Decision != iam.Allow {
			t.Errorf("the page's policy does not allow dynamodb:%s, which the handler calls", c.op)
		}
	}
}

// functionPolicy is the function's inline policy statements (SAM's
// Policies), resolved for env.
func functionPolicy(t *testing.T, tpl *cfn.Template, env cfn.Env, logicalID string) *iam.Policy {
	t.Helper()
	r, err := cfn.NewResolver(tpl, env)
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Value(tpl.Resources[logicalID].Properties.Get("Policies"))
	if err != nil {
		t.Fatalf("resolve the Policies of %s: %v", logicalID, err)
	}
	items, _ := v.([]any)
	var statements []any
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok || m["Statement"] == nil {
			t.Fatalf("%s: a policy that is not an inline statement list: %v", logicalID, it)
		}
		statements = append(statements, m["Statement"].([]any)...)
	}
	p, err := iam.ParsePolicy(logicalID+" Policies", map[string]any{"Version": iam.Version2012, "Statement": statements})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// buildSnippet builds the page's Go program for this machine as the
// bootstrap of a provided runtime, from a folder inside this module so
// that its imports resolve to this repository's modules.
func buildSnippet(t *testing.T, src, out string) string {
	t.Helper()
	pkg := filepath.Join(root, ".doccheck-"+randomHex(6))
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pkg)
	if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(out, "bootstrap")
	for _, args := range [][]string{{"vet", "./" + filepath.Base(pkg)}, {"build", "-o", bin, "./" + filepath.Base(pkg)}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of %s's Go program: %v\n%s", args[0], idempotencyPage, err, b)
		}
	}
	return bin
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// recorder is a proxy to DynamoDB that records the operation of each call.
type recorder struct {
	mu       sync.Mutex
	calls    []call
	consumed int
}

// call is one recorded DynamoDB call.
type call struct{ op, table string }

func (r *recorder) proxy(t *testing.T, endpoint string) http.Handler {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		target := req.Header.Get("X-Amz-Target")
		_, op, _ := strings.Cut(target, ".")
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var in struct{ TableName string }
		_ = json.Unmarshal(body, &in)
		r.mu.Lock()
		r.calls = append(r.calls, call{op, in.TableName})
		r.mu.Unlock()
		rp.ServeHTTP(w, req)
	})
}

// take returns the operations recorded since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls[r.consumed:] {
		out = append(out, c.op)
	}
	r.consumed = len(r.calls)
	return out
}

func (r *recorder) all() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
