//go:build integration

package signed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/client"
	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// key is an access key the local API knows, and the principal it stands
// for.
type key struct {
	id, secret, token string
	arn               string
	expires           time.Time
}

func (k key) credentials() aws.Credentials {
	return aws.Credentials{AccessKeyID: k.id, SecretAccessKey: k.secret, SessionToken: k.token}
}

// owner is the caller scope the service derives from the key's principal:
// the owner of the accounts the key may debit.
func (k key) owner() string { return api.IAMScope(k.arn) }

var (
	// alice is an IAM user's long-term key.
	alice = key{id: "AKIAITSIGNEDALICE001", secret: "alice-secret", arn: "arn:aws:iam::" + stack.AccountID + ":user/it-signed-alice"}
	// worker is an assumed-role session's temporary key.
	worker = key{id: "ASIAITSIGNEDWORKER01", secret: "worker-secret", token: "worker-session-token",
		arn: "arn:aws:sts::" + stack.AccountID + ":assumed-role/Payments/worker-1", expires: time.Now().Add(24 * time.Hour)}
	// expired is a temporary key past its expiry.
	expired = key{id: "ASIAITSIGNEDEXPIRED1", secret: "expired-secret", token: "expired-session-token",
		arn: "arn:aws:sts::" + stack.AccountID + ":assumed-role/Payments/worker-0", expires: time.Now().Add(-time.Minute)}
)

var (
	// st is the stack under test and led its ledger, set up by TestMain.
	st  *stack.Stack
	led *ledger.Ledger
	// runID keeps this run's account ids apart from any other's.
	runID = func() string {
		b := make([]byte, 4)
		if _, err := rand.Read(b); err != nil {
			panic(err)
		}
		return hex.EncodeToString(b)
	}()
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	creds := map[string]apigw.Credential{}
	for _, k := range []key{alice, worker, expired} {
		creds[k.id] = apigw.Credential{SecretAccessKey: k.secret, SessionToken: k.token, Expires: k.expires, PrincipalARN: k.arn}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	s, err := stack.Start(ctx, stack.Options{
		// Legs' retries and timeouts a tenth as long, as in package
		// integration.
		TimeScale:      0.1,
		Parameters:     map[string]string{"CallerRateLimit": "0"},
		APICredentials: creds,
	})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "signed: start the local stack: %v\n", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "signed: stop the local stack: %v\n", err)
		}
	}()
	st = s
	led, err = ledger.New(dynamodb.NewFromConfig(s.AWS), ledger.Config{LedgerTable: s.Tables["LedgerTable"], IdempotencyTable: s.Tables["IdempotencyTable"]})
	if err != nil {
		fmt.Fprintf(os.Stderr, "signed: %v\n", err)
		return 1
	}
	return m.Run()
}

// counter counts the requests a client sends, by method and path.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Method+" "+r.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *counter) count(route string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[route]
}

// newClient is a public client of the local stack signing with k, which
// never retries unless retries is set.
func newClient(t *testing.T, k key, retries bool) (*client.Client, *counter) {
	t.Helper()
	cnt := &counter{}
	policy := client.RetryPolicy{MaxAttempts: 1}
	if retries {
		policy = client.RetryPolicy{}
	}
	c, err := client.New(context.Background(), st.APIURL,
		client.WithRegion(stack.Region),
		client.WithCredentials(aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return k.credentials(), nil
		}))),
		client.WithHTTPClient(&http.Client{Transport: cnt, Timeout: 30 * time.Second}),
		client.WithRetryPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	return c, cnt
}

// open opens an account of k's principal and returns its id.
func open(t *testing.T, k key, label, currency string, balance int64) string {
	t.Helper()
	id := "it-signed-" + runID + "-" + label
	created, err := led.OpenAccount(context.Background(), id, k.owner(), currency, balance)
	if err != nil || !created {
		t.Fatalf("open account %s: created %v, %v", id, created, err)
	}
	return id
}

// problemOf returns the *client.Problem of err, and fails the test without
// one.
func problemOf(t *testing.T, err error) *client.Problem {
	t.Helper()
	var p *client.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T), want a *client.Problem", err, err)
	}
	return p
}

// TestPublicClient drives the stack with the public client, signed as an
// IAM user: a transfer answered final with Prefer: wait, its replay, a
// refused transfer as a typed problem, the caller's transfers page by
// page, and the source account's entries.
func TestPublicClient(t *testing.T) {
	ctx := context.Background()
	c, requests := newClient(t, alice, true)
	src, dst := open(t, alice, "src", "EUR", 5000), open(t, alice, "dst", "EUR", 0)
	req := client.TransferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 1050, Currency: "EUR", Reference: "signed"}
	key := "it-signed-" + runID + "-first"
	var first client.Transfer

	t.Run("create with wait", func(t *testing.T) {
		res, err := c.CreateTransfer(ctx, key, req, client.PreferWait(5))
		if err != nil {
			t.Fatal(err)
		}
		first = res.Transfer
		if res.StatusCode != http.StatusCreated || first.Status != client.StatusCompleted || res.Replayed ||
			res.PreferenceApplied != "wait=5" || res.Location != "/transfers/"+first.TransferID || res.Attempts != 1 {
			t.Fatalf("result %+v, want 201 COMPLETED, wait=5 applied, its Location, not replayed", res)
		}
		if first.Amount != 1050 || first.Reference != "signed" || first.SettledAt == nil || first.CreatedAt.IsZero() {
			t.Errorf("transfer %+v", first)
		}
	})
	if first.TransferID == "" {
		t.FailNow()
	}

	t.Run("replay", func(t *testing.T) {
		res, err := c.CreateTransfer(ctx, key, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || !res.Replayed || res.Transfer.TransferID != first.TransferID || res.Transfer.Status != client.StatusCompleted {
			t.Fatalf("result %+v, want 200 replayed of %s", res, first.TransferID)
		}
	})

	t.Run("the same key with another request", func(t *testing.T) {
		other := req
		other.Amount = 2000
		_, err := c.CreateTransfer(ctx, key, other)
		p := problemOf(t, err)
		if p.Status != http.StatusUnprocessableEntity || p.Code != client.CodeIdempotencyKeyReused || p.Transfer != nil {
			t.Errorf("problem %+v, want 422 idempotency_key_reused without a transfer", p)
		}
	})

	t.Run("a refused transfer", func(t *testing.T) {
		refusedKey := "it-signed-" + runID + "-refused"
		tooMuch := req
		tooMuch.Amount = 999999
		_, err := c.CreateTransfer(ctx, refusedKey, tooMuch, client.PreferWait(5))
		if !errors.Is(err, client.CodeInsufficientFunds) {
			t.Fatalf("error %v, want insufficient_funds", err)
		}
		p := problemOf(t, err)
		if p.Status != http.StatusUnprocessableEntity || p.Transfer == nil || p.Transfer.Status != client.StatusFailed ||
			p.Location != "/transfers/"+p.Transfer.TransferID || p.Replayed {
			t.Fatalf("problem %+v, want 422 with the FAILED transfer and its Location", p)
		}
		// Its replay is the same final answer.
		_, err = c.CreateTransfer(ctx, refusedKey, tooMuch)
		if replay := problemOf(t, err); replay.Code != client.CodeInsufficientFunds || !replay.Replayed || replay.Transfer.TransferID != p.Transfer.TransferID {
			t.Errorf("replay %+v, want the same refusal, replayed", replay)
		}
	})

	t.Run("an invalid request", func(t *testing.T) {
		same := req
		same.DestinationAccountID = src
		_, err := c.CreateTransfer(ctx, "it-signed-"+runID+"-invalid", same)
		p := problemOf(t, err)
		if p.Status != http.StatusBadRequest || p.Code != client.CodeInvalidRequest || len(p.Errors) != 1 || p.Errors[0].Code != "same_account" {
			t.Errorf("problem %+v, want 400 invalid_request with one same_account error", p)
		}
	})

	t.Run("get a transfer", func(t *testing.T) {
		got, err := c.GetTransfer(ctx, first.TransferID)
		if err != nil {
			t.Fatal(err)
		}
		if got.TransferID != first.TransferID || got.Status != client.StatusCompleted || got.SettledAt == nil {
			t.Errorf("transfer %+v", got)
		}
		if _, err := c.GetTransfer(ctx, "no-such-transfer"); !errors.Is(err, client.CodeNotFound) {
			t.Errorf("unknown transfer: %v, want not_found", err)
		}
	})

	// Three more: the caller has five transfers, four of them completed.
	ids := []string{first.TransferID}
	for i := range 3 {
		r := req
		r.Amount = int64(100 * (i + 1))
		res, err := c.CreateTransfer(ctx, fmt.Sprintf("it-signed-%s-more-%d", runID, i), r, client.PreferWait(5))
		if err != nil || res.Transfer.Status != client.StatusCompleted {
			t.Fatalf("transfer %d: %+v, %v", i, res, err)
		}
		ids = append(ids, res.Transfer.TransferID)
	}

	t.Run("list pages with the iterator", func(t *testing.T) {
		// The list is eventually consistent: read it again until the five
		// transfers show.
		var listed []client.Transfer
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			listed = listed[:0]
			before := requests.count("GET /transfers")
			for tr, err := range c.Transfers(ctx, client.PageOptions{Limit: 2}) {
				if err != nil {
					t.Fatal(err)
				}
				listed = append(listed, tr)
			}
			if pages := requests.count("GET /transfers") - before; len(listed) == 5 && pages != 3 {
				t.Fatalf("%d pages of 2 for 5 transfers, want 3", pages)
			}
			if len(listed) == 5 || time.Now().After(deadline) {
				break
			}
		}
		if len(listed) != 5 {
			t.Fatalf("listed %d transfers, want 5: %+v", len(listed), listed)
		}
		failed := 0
		for i, tr := range listed {
			if i > 0 && tr.CreatedAt.After(listed[i-1].CreatedAt) {
				t.Errorf("transfer %d (%s) is newer than the one before it", i, tr.CreatedAt)
			}
			if tr.Status == client.StatusFailed {
				failed++
			} else if !slices.Contains(ids, tr.TransferID) {
				t.Errorf("listed %s, not one of %v", tr.TransferID, ids)
			}
		}
		if failed != 1 {
			t.Errorf("%d failed transfers listed, want the refused one", failed)
		}
	})

	t.Run("entries", func(t *testing.T) {
		acct, err := c.GetAccount(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		var entries []client.Entry
		for e, err := range c.Entries(ctx, src, client.PageOptions{Limit: 3}) {
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		// Four debits: the refused transfer posted none.
		if len(entries) != 4 || acct.Version != 4 {
			t.Fatalf("%d entries, version %d; want the 4 debits", len(entries), acct.Version)
		}
		sum := int64(0)
		for i, e := range entries {
			if want := acct.Version - int64(i); e.Sequence != want {
				t.Errorf("entry %d has sequence %d, want %d (newest first, no gap)", i, e.Sequence, want)
			}
			if e.Leg != client.LegDebit || e.AccountID != src || e.CounterpartyAccountID != dst || e.Amount >= 0 {
				t.Errorf("entry %+v, want a debit of %s to %s", e, src, dst)
			}
			sum += e.Amount
		}
		if acct.Balance != 5000+sum || acct.Balance != 5000-1050-100-200-300 {
			t.Errorf("balance %d, entries add up to %d", acct.Balance, sum)
		}
		if len(acct.Entries) != 4 || acct.Entries[0].Sequence != 4 {
			t.Errorf("the account shows %+v", acct.Entries)
		}
		page, err := c.ListEntries(ctx, src, client.PageOptions{Limit: 3})
		if err != nil || len(page.Entries) != 3 || page.NextCursor == "" {
			t.Fatalf("first page %+v, %v", page, err)
		}
		next, err := c.ListEntries(ctx, src, client.PageOptions{Limit: 3, Cursor: page.NextCursor})
		if err != nil || len(next.Entries) != 1 || next.Entries[0].Sequence != 1 || next.NextCursor != "" {
			t.Fatalf("second page %+v, %v", next, err)
		}
	})
}

// TestTemporaryCredentials: an assumed role's session signs with its
// session token; it is its own caller, apart from the IAM user.
func TestTemporaryCredentials(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, worker, false)
	src, dst := open(t, worker, "worker-src", "JPY", 1000), open(t, worker, "worker-dst", "JPY", 0)
	res, err := c.CreateTransfer(ctx, "it-signed-"+runID+"-worker", client.TransferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 400, Currency: "JPY"}, client.PreferWait(5))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated || res.Transfer.Status != client.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	// Another caller's transfer and account are not found.
	other, _ := newClient(t, alice, false)
	if _, err := other.GetTransfer(ctx, res.Transfer.TransferID); !errors.Is(err, client.CodeNotFound) {
		t.Errorf("the IAM user reads the session's transfer: %v", err)
	}
	if _, err := other.GetAccount(ctx, src); !errors.Is(err, client.CodeNotFound) {
		t.Errorf("the IAM user reads the session's account: %v", err)
	}
	// The session may not debit the IAM user's account.
	aliceAcct := open(t, alice, "alice-jpy", "JPY", 1000)
	_, err = c.CreateTransfer(ctx, "it-signed-"+runID+"-worker-forbidden", client.TransferRequest{SourceAccountID: aliceAcct, DestinationAccountID: dst, Amount: 1, Currency: "JPY"})
	if !errors.Is(err, client.CodeForbidden) || problemOf(t, err).Status != http.StatusForbidden {
		t.Errorf("debit of another caller's account: %v, want 403 forbidden", err)
	}
}

// TestRefusedSignatures: requests the API cannot authenticate are refused
// before any function runs, with API Gateway's codes.
func TestRefusedSignatures(t *testing.T) {
	ctx := context.Background()
	wrongSecret := alice
	wrongSecret.secret = "not-alice-secret"
	unknown := key{id: "AKIAITSIGNEDUNKNOWN1", secret: "x", arn: alice.arn}
	wrongToken := worker
	wrongToken.token = "another-session-token"
	for _, tc := range []struct {
		name string
		key  key
		want client.Code
	}{
		{"the wrong secret", wrongSecret, client.CodeInvalidSignature},
		{"an unknown key", unknown, client.CodeAccessDenied},
		{"another session token", wrongToken, client.CodeAccessDenied},
		{"expired temporary credentials", expired, client.CodeExpiredToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newClient(t, tc.key, true)
			_, err := c.ListTransfers(ctx, client.PageOptions{})
			if p := problemOf(t, err); p.Status != http.StatusForbidden || p.Code != tc.want {
				t.Errorf("problem %+v, want 403 %s", p, tc.want)
			}
			if strings.Contains(err.Error(), "attempts") {
				t.Errorf("a 403 was retried: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		name, authorization string
		want                client.Code
	}{
		{"unsigned", "", client.CodeMissingAuthenticationToken},
		{"a Bearer token", "Bearer it-signed-alice", client.CodeInvalidSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.APIURL+"/transfers", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct {
				Code client.Code `json:"code"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != "application/problem+json" || doc.Code != tc.want {
				t.Errorf("answer %d %s %s, want a 403 problem %s", resp.StatusCode, resp.Header.Get("Content-Type"), doc.Code, tc.want)
			}
		})
	}
}
