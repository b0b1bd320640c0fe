//go:build integration

package doccheck

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/seed"
)

// tours are the pages whose console sessions run as shown against a
// freshly started make local.
var tours = []string{"README.md", "docs/getting-started.md"}

// TestToursRunAsShown runs each tour page's console session, command by
// command, against a fresh local stack seeded as make local seeds it, and
// compares what the service answers with what the page shows (ids matched
// to the ones answered, times to any time, "..." to any text). A page
// whose example no longer matches the service fails.
func TestToursRunAsShown(t *testing.T) {
	for _, page := range tours {
		t.Run(page, func(t *testing.T) {
			steps := Steps(read(t, page))
			if len(steps) < 3 {
				t.Fatalf("%s has %d console commands: is its session still in a ```console block?", page, len(steps))
			}
			base := startLocal(t)
			client := &http.Client{Timeout: 30 * time.Second}
			ids := IDs{}
			for _, s := range steps {
				c, err := ParseCurl(ids.Rewrite(s.Command))
				if err != nil {
					t.Fatalf("%s:%d: %v", page, s.Line, err)
				}
				req, err := c.Request(base)
				if err != nil {
					t.Fatalf("%s:%d: %v", page, s.Line, err)
				}
				resp, err := client.Do(req.WithContext(t.Context()))
				if err != nil {
					t.Fatalf("%s:%d: %v", page, s.Line, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("%s:%d: %v", page, s.Line, err)
				}
				if diff := ids.Compare(c, s.Output, c.Shown(resp, body)); diff != "" {
					t.Errorf("%s:%d: $ %s\n%s", page, s.Line, s.Command, diff)
				}
			}
		})
	}
}

// startLocal starts the stack as make local does (cmd/local): the
// template's defaults, its schedules, and the demo accounts opened before
// the API opens. It returns the API's base URL.
func startLocal(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{
		Schedules: true,
		Ready: func(ctx context.Context, st *stack.Stack) error {
			led, err := ledger.New(dynamodb.NewFromConfig(st.AWS), ledger.Config{
				LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"],
			})
			if err != nil {
				return err
			}
			_, err = seed.Open(ctx, led, seed.Demo)
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			t.Errorf("stop the stack: %v", err)
		}
	})
	return st.APIURL
}
