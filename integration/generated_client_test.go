//go:build integration

package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/exactlyonce/transfers/internal/apiclient"
)

// generatedClient is the client oapi-codegen generates from the public
// contract, signed as c.
func generatedClient(t testing.TB, c *caller) *apiclient.ClientWithResponses {
	t.Helper()
	client, err := apiclient.NewClientWithResponses(tg.api.String(),
		apiclient.WithHTTPClient(httpClient),
		apiclient.WithRequestEditorFn(func(ctx context.Context, req *http.Request) error {
			var body []byte
			if req.Body != nil {
				b, err := io.ReadAll(req.Body)
				if err != nil {
					return err
				}
				body = b
				req.Body = io.NopCloser(bytes.NewReader(b))
			}
			return c.authorize(ctx, req, body)
		}))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// TestGeneratedClient: a Go client generated from api/openapi.yaml alone
// drives the stack: a transfer answered final with Prefer: wait, read
// back, listed, its entries listed, and a refusal decoded as its problem.
func TestGeneratedClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBook(t)
	src, dst := b.open(t, "src", "JPY", 5000), b.open(t, "dst", "JPY", 0)
	client := generatedClient(t, tg.first)
	wait := "wait=5"
	reference := "generated client"

	created, err := client.CreateTransferWithResponse(ctx,
		&apiclient.CreateTransferParams{IdempotencyKey: newKey(), Prefer: &wait},
		apiclient.TransferRequest{SourceAccountId: src, DestinationAccountId: dst, Amount: 1200, Currency: "JPY", Reference: &reference})
	if err != nil {
		t.Fatal(err)
	}
	if created.JSON201 == nil || created.JSON201.Status != apiclient.COMPLETED {
		t.Fatalf("create: %d %s, want 201 COMPLETED", created.StatusCode(), created.Body)
	}
	id := created.JSON201.TransferId

	got, err := client.GetTransferWithResponse(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.JSON200 == nil || got.JSON200.TransferId != id || got.JSON200.Amount != 1200 || got.JSON200.SettledAt == nil {
		t.Fatalf("get: %d %s", got.StatusCode(), got.Body)
	}

	limit := 1
	listed, err := client.ListTransfersWithResponse(ctx, &apiclient.ListTransfersParams{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if listed.JSON200 == nil || len(listed.JSON200.Transfers) != 1 {
		t.Fatalf("list transfers: %d %s", listed.StatusCode(), listed.Body)
	}

	entries, err := client.ListEntriesWithResponse(ctx, src, &apiclient.ListEntriesParams{})
	if err != nil {
		t.Fatal(err)
	}
	if entries.JSON200 == nil || len(entries.JSON200.Entries) != 1 || entries.JSON200.Entries[0].Amount != -1200 {
		t.Fatalf("list entries: %d %s", entries.StatusCode(), entries.Body)
	}

	bad := 0
	refused, err := client.ListEntriesWithResponse(ctx, src, &apiclient.ListEntriesParams{Limit: &bad})
	if err != nil {
		t.Fatal(err)
	}
	if refused.ApplicationproblemJSON400 == nil || refused.ApplicationproblemJSON400.Code != apiclient.BadPageCodeInvalidLimit {
		t.Fatalf("limit 0: %d %s, want 400 invalid_limit", refused.StatusCode(), refused.Body)
	}

	invalid, err := client.CreateTransferWithResponse(ctx, &apiclient.CreateTransferParams{IdempotencyKey: newKey()},
		apiclient.TransferRequest{SourceAccountId: src, DestinationAccountId: src, Amount: 1, Currency: "JPY"})
	if err != nil {
		t.Fatal(err)
	}
	if p := invalid.ApplicationproblemJSON400; p == nil || p.Code != apiclient.CreateTransfer400ApplicationProblemPlusJSONResponseBodyCodeInvalidRequest || p.Errors == nil || len(*p.Errors) != 1 {
		t.Fatalf("same account: %d %s, want 400 invalid_request with one field error", invalid.StatusCode(), invalid.Body)
	}
}
