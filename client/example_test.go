package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/transfers/client"
)

// fakeAPI stands in for a deployed stack in the examples: it answers as
// the API does, without checking signatures.
func fakeAPI() *httptest.Server {
	transfer := func(id, status string, amount int) string {
		return fmt.Sprintf(`{"transferId":%q,"status":%q,"sourceAccountId":"acct-alice-eur","destinationAccountId":"acct-bob-eur","amount":%d,"currency":"EUR","createdAt":"2026-05-04T09:08:07.654Z"}`, id, status, amount)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"amount":999999`) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Location", "/v1/transfers/t-2")
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"type":"/problems/insufficient_funds","title":"Insufficient funds in the source account","status":422,"code":"insufficient_funds","transfer":%s}`,
				transfer("t-2", "FAILED", 999999))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/transfers/t-1")
		w.Header().Set("Preference-Applied", r.Header.Get("Prefer"))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, transfer("t-1", "COMPLETED", 1050))
	})
	mux.HandleFunc("GET /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "" {
			fmt.Fprintf(w, `{"transfers":[%s,%s],"nextCursor":"page-2"}`, transfer("t-3", "COMPLETED", 300), transfer("t-2", "FAILED", 999999))
			return
		}
		fmt.Fprintf(w, `{"transfers":[%s]}`, transfer("t-1", "COMPLETED", 1050))
	})
	return httptest.NewServer(mux)
}

// exampleCredentials are made-up keys for the fake API.
var exampleCredentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "example-secret"}, nil
})

// A client of a deployed stack signs with the default credential chain and
// Region (AWS_PROFILE, AWS_REGION, SSO, roles, ...).
func ExampleNew() {
	ctx := context.Background()
	c, err := client.New(ctx, "https://abcdef1234.execute-api.eu-west-1.amazonaws.com/v1")
	if err != nil {
		log.Fatal(err)
	}
	acct, err := c.GetAccount(ctx, "acct-alice-eur")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acct.Balance, acct.Currency)
}

func ExampleClient_CreateTransfer() {
	api := fakeAPI()
	defer api.Close()
	ctx := context.Background()
	c, err := client.New(ctx, api.URL+"/v1", client.WithRegion("eu-west-1"), client.WithCredentials(exampleCredentials))
	if err != nil {
		log.Fatal(err)
	}

	// One key per transfer, made before the first attempt and stored with
	// it: every retry sends it again.
	key := "5f0c3c1e-8a4b-4f7e-9d2a-0b6c1d2e3f40"
	res, err := c.CreateTransfer(ctx, key, client.TransferRequest{
		SourceAccountID:      "acct-alice-eur",
		DestinationAccountID: "acct-bob-eur",
		Amount:               1050, // EUR 10.50
		Currency:             "EUR",
	}, client.PreferWait(5))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StatusCode, res.Transfer.Status, res.Location, res.PreferenceApplied, res.Replayed)
	// Output: 201 COMPLETED /v1/transfers/t-1 wait=5 false
}

// A transfer the ledger refuses is a *Problem carrying the failed transfer;
// errors.Is compares its code.
func ExampleProblem() {
	api := fakeAPI()
	defer api.Close()
	ctx := context.Background()
	c, err := client.New(ctx, api.URL+"/v1", client.WithRegion("eu-west-1"), client.WithCredentials(exampleCredentials))
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.CreateTransfer(ctx, "c9a1f7a2-3d4e-4b5c-8d6e-7f8091a2b3c4", client.TransferRequest{
		SourceAccountID: "acct-alice-eur", DestinationAccountID: "acct-bob-eur", Amount: 999999, Currency: "EUR",
	})
	var p *client.Problem
	if errors.As(err, &p) {
		fmt.Println(p.Status, p.Code, p.Transfer.TransferID, p.Transfer.Status)
	}
	if errors.Is(err, client.CodeInsufficientFunds) {
		fmt.Println("final: fund the account, then make a new transfer with a new key")
	}
	// Output:
	// 422 insufficient_funds t-2 FAILED
	// final: fund the account, then make a new transfer with a new key
}

// Transfers reads the pages one after the other as the loop needs them.
func ExampleClient_Transfers() {
	api := fakeAPI()
	defer api.Close()
	ctx := context.Background()
	c, err := client.New(ctx, api.URL+"/v1", client.WithRegion("eu-west-1"), client.WithCredentials(exampleCredentials))
	if err != nil {
		log.Fatal(err)
	}

	for t, err := range c.Transfers(ctx, client.PageOptions{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.TransferID, t.Status, t.Amount)
	}
	// Output:
	// t-3 COMPLETED 300
	// t-2 FAILED 999999
	// t-1 COMPLETED 1050
}

// ListTransfers reads one page; its NextCursor reads the next.
func ExampleClient_ListTransfers() {
	api := fakeAPI()
	defer api.Close()
	ctx := context.Background()
	c, err := client.New(ctx, api.URL+"/v1", client.WithRegion("eu-west-1"), client.WithCredentials(exampleCredentials))
	if err != nil {
		log.Fatal(err)
	}

	page, err := c.ListTransfers(ctx, client.PageOptions{Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Transfers), page.NextCursor)
	page, err = c.ListTransfers(ctx, client.PageOptions{Limit: 2, Cursor: page.NextCursor})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Transfers), page.NextCursor == "")
	// Output:
	// 2 page-2
	// 1 true
}
