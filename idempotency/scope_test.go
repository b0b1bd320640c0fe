package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func tenantCtx(id string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req", TenantID: id})
}

// TestScopeFunc: each call is kept under the scope ScopeFunc gives it, so
// one key from two tenants is two records; a call the scope refuses costs
// no store call and does not run; Wrap's calls, concurrent, never share a
// scope.
func TestScopeFunc(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			rec := idemtest.NewRecorder(store)
			idem, err := idempotency.New(idempotency.Config{Store: rec, CacheSize: 10})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			runs := map[string]int{}
			handler := idempotency.Wrap(idem, idempotency.Operation[order]{
				ScopeFunc: idempotency.LambdaTenant[order],
				KeyFunc:   func(o order) (string, error) { return o.Key, nil },
			}, func(ctx context.Context, o order) (receipt, error) {
				lc, _ := lambdacontext.FromContext(ctx)
				mu.Lock()
				defer mu.Unlock()
				runs[lc.TenantID]++
				return receipt{Amount: o.Amount}, nil
			})
			var wg sync.WaitGroup
			for _, tenant := range []string{"acme", "globex", "acme", "globex"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := handler(tenantCtx(tenant), order{"k1", 5}); err != nil && !errors.Is(err, idempotency.ErrInProgress) {
						t.Errorf("%s: %v", tenant, err)
					}
				}()
			}
			wg.Wait()
			if runs["acme"] != 1 || runs["globex"] != 1 {
				t.Errorf("runs %v, want one per tenant", runs)
			}
			for _, tenant := range []string{"acme", "globex"} {
				e, err := store.Get(context.Background(), fmt.Sprintf("tenant %q", tenant), "k1")
				if err != nil || e.Status != idempotency.EntryCompleted {
					t.Errorf("%s's record: %+v, %v", tenant, e, err)
				}
			}
			rec.Take()
			if _, err := handler(context.Background(), order{"k1", 5}); !errors.Is(err, idempotency.ErrNoTenant) {
				t.Errorf("without a tenant: %v, want ErrNoTenant", err)
			}
			if ops := rec.Take(); len(ops) != 0 {
				t.Errorf("a call without a tenant made the store calls %v", ops)
			}
		})
	}
}

// Each tenant of a Lambda function in tenant isolation mode has its own
// records: the same key from two tenants runs twice, once per tenant.
func ExampleLambdaTenant() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	handler := idempotency.Wrap(idem, idempotency.Operation[string]{
		ScopeFunc: idempotency.LambdaTenant[string],
		Key:       "order-42",
	}, func(ctx context.Context, s string) (string, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		return "charged for " + lc.TenantID, nil
	})
	for _, tenant := range []string{"acme", "globex", "acme"} {
		out, err := handler(tenantCtx(tenant), "pay")
		fmt.Println(out, err)
	}
	_, err := handler(context.Background(), "pay")
	fmt.Println(err)
	// Output:
	// charged for acme <nil>
	// charged for globex <nil>
	// charged for acme <nil>
	// idempotency: scope: idempotency: the invocation has no Lambda tenant id
}
