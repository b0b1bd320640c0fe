package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// sameEntry reports whether two entries are the same posting.
func sameEntry(a, b ledger.Entry) bool {
	if !a.PostedAt.Equal(b.PostedAt) {
		return false
	}
	a.PostedAt, b.PostedAt = time.Time{}, time.Time{}
	a.Replayed, b.Replayed = false, false
	return a == b
}

// settle posts a leg, retrying while the ledger is unavailable (as the
// state machine's Retry does), and returns the first other outcome.
func settle(ctx context.Context, l *ledger.Ledger, leg ledger.Leg) (ledger.Entry, error) {
	for attempt := 0; ; attempt++ {
		e, err := l.Post(ctx, leg)
		if !errors.Is(err, ledger.ErrUnavailable) || attempt == 200 {
			return e, err
		}
		time.Sleep(time.Duration(1+attempt%10) * time.Millisecond)
	}
}

// transferFixture opens a source (1000 USD) and a destination (50 USD) and
// starts a 300 USD transfer between them.
func transferFixture(t *testing.T, env *ledgertest.Env) ledgertest.Transfer {
	t.Helper()
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "USD", 1000)
	env.OpenAccount(t, dst, "USD", 50)
	return env.NewTransfer(t, src, dst, 300, "USD")
}

func TestPostCommitsOnce(t *testing.T) {
	env := ledgertest.New(t)
	cases := []struct {
		name             string
		prior            []ledger.Kind
		kind             ledger.Kind
		wantSrc, wantDst int64
		wantAmount       int64
		wantVersions     [2]int64
		// wantSequence: the posted account's version after the leg.
		wantSequence int64
	}{
		{name: "debit", kind: ledger.Debit, wantSrc: 700, wantDst: 50, wantAmount: -300, wantVersions: [2]int64{1, 0}, wantSequence: 1},
		{name: "credit after debit", prior: []ledger.Kind{ledger.Debit}, kind: ledger.Credit, wantSrc: 700, wantDst: 350, wantAmount: 300, wantVersions: [2]int64{1, 1}, wantSequence: 1},
		{name: "refund after debit", prior: []ledger.Kind{ledger.Debit}, kind: ledger.Refund, wantSrc: 1000, wantDst: 50, wantAmount: 300, wantVersions: [2]int64{2, 0}, wantSequence: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tr := transferFixture(t, env)
			for _, k := range tc.prior {
				env.Post(t, tr, k)
			}
			before := time.Now()
			got, err := env.Ledger.Post(ctx, tr.Leg(tc.kind))
			after := time.Now()
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			leg := tr.Leg(tc.kind)
			want := ledger.Entry{
				AccountID:             leg.AccountID,
				TransferID:            tr.ID,
				Kind:                  tc.kind,
				Amount:                tc.wantAmount,
				Currency:              "USD",
				CounterpartyAccountID: leg.CounterpartyAccountID,
				Sequence:              tc.wantSequence,
				PostedAt:              got.PostedAt,
			}
			if !sameEntry(got, want) || got.Replayed {
				t.Errorf("Post = %+v, want %+v, not replayed", got, want)
			}
			if got.PostedAt.Before(before.Add(-time.Millisecond)) || got.PostedAt.After(after.Add(time.Millisecond)) {
				t.Errorf("PostedAt = %v, want between %v and %v", got.PostedAt, before, after)
			}
			if b := env.Balance(t, tr.Source); b != tc.wantSrc {
				t.Errorf("source balance = %d, want %d", b, tc.wantSrc)
			}
			if b := env.Balance(t, tr.Destination); b != tc.wantDst {
				t.Errorf("destination balance = %d, want %d", b, tc.wantDst)
			}
			if v := env.Account(t, tr.Source).Version; v != tc.wantVersions[0] {
				t.Errorf("source version = %d, want %d", v, tc.wantVersions[0])
			}
			if v := env.Account(t, tr.Destination).Version; v != tc.wantVersions[1] {
				t.Errorf("destination version = %d, want %d", v, tc.wantVersions[1])
			}
			stored, err := env.Ledger.TransferEntries(ctx, tr.ID, tr.Source, tr.Destination)
			if err != nil {
				t.Fatalf("TransferEntries: %v", err)
			}
			if len(stored) != len(tc.prior)+1 || !sameEntry(stored[tc.kind], got) {
				t.Errorf("TransferEntries = %+v, want %d entries with %+v", stored, len(tc.prior)+1, got)
			}
			recent, err := env.Ledger.RecentEntries(ctx, leg.AccountID, 1)
			if err != nil {
				t.Fatalf("RecentEntries: %v", err)
			}
			if len(recent) != 1 || !sameEntry(recent[0], got) {
				t.Errorf("RecentEntries = %+v, want [%+v]", recent, got)
			}
		})
	}
}

func TestPostWholeBalance(t *testing.T) {
	env := ledgertest.New(t)
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "USD", 300)
	env.OpenAccount(t, dst, "USD", 0)
	tr := env.NewTransfer(t, src, dst, 300, "USD")
	env.Post(t, tr, ledger.Debit)
	env.Post(t, tr, ledger.Credit)
	if s, d := env.Balance(t, src), env.Balance(t, dst); s != 0 || d != 300 {
		t.Errorf("balances = %d, %d; want 0, 300", s, d)
	}
}

func TestPostRetryReturnsStoredEntry(t *testing.T) {
	env := ledgertest.New(t)
	// Things that happen between the first attempt and its retry; none of
	// them may change the retry's answer.
	changes := []struct {
		name   string
		change func(t *testing.T, tr ledgertest.Transfer)
	}{
		{"nothing", func(*testing.T, ledgertest.Transfer) {}},
		{"record completed", func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusCompleted, tr.ID)
		}},
		{"record failed", func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusFailed, tr.ID)
		}},
		{"record deleted", func(t *testing.T, tr ledgertest.Transfer) { env.DeleteRecord(t, tr.RecordKey) }},
		{"accounts closed", func(t *testing.T, tr ledgertest.Transfer) {
			for _, id := range []string{tr.Source, tr.Destination} {
				if err := env.Ledger.CloseAccount(context.Background(), id); err != nil {
					t.Fatalf("CloseAccount: %v", err)
				}
			}
		}},
		{"source drained", func(t *testing.T, tr ledgertest.Transfer) {
			other := env.NewTransfer(t, tr.Source, tr.Destination, env.Balance(t, tr.Source), "USD")
			env.Post(t, other, ledger.Debit)
		}},
	}
	for _, kind := range ledger.Kinds {
		for _, ch := range changes {
			t.Run(fmt.Sprintf("%s/%s", kind, ch.name), func(t *testing.T) {
				tr := transferFixture(t, env)
				if kind != ledger.Debit {
					env.Post(t, tr, ledger.Debit)
				}
				first := env.Post(t, tr, kind)
				ch.change(t, tr)
				before := env.Snapshot(t)
				for range 2 {
					again, err := env.Ledger.Post(context.Background(), tr.Leg(kind))
					if err != nil {
						t.Fatalf("retry: %v", err)
					}
					if !sameEntry(again, first) || !again.Replayed {
						t.Errorf("retry = %+v, want the stored %+v, replayed", again, first)
					}
				}
				if d := before.Diff(env.Snapshot(t)); d != "" {
					t.Errorf("retry wrote:\n%s", d)
				}
			})
		}
	}
}

func TestPostConcurrentRetries(t *testing.T) {
	env := ledgertest.New(t)
	const workers = 20
	for _, kind := range ledger.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			tr := transferFixture(t, env)
			if kind != ledger.Debit {
				env.Post(t, tr, ledger.Debit)
			}
			src, dst := env.Account(t, tr.Source), env.Account(t, tr.Destination)
			var (
				wg      sync.WaitGroup
				entries = make([]ledger.Entry, workers)
				errs    = make([]error, workers)
				start   = make(chan struct{})
			)
			for i := range workers {
				wg.Go(func() {
					<-start
					entries[i], errs[i] = settle(ctx, env.Ledger, tr.Leg(kind))
				})
			}
			close(start)
			wg.Wait()
			committed := 0
			for i := range workers {
				if errs[i] != nil {
					t.Fatalf("worker %d: %v", i, errs[i])
				}
				if !sameEntry(entries[i], entries[0]) {
					t.Errorf("worker %d got %+v, worker 0 got %+v", i, entries[i], entries[0])
				}
				if !entries[i].Replayed {
					committed++
				}
			}
			if committed != 1 {
				t.Errorf("%d workers committed, want 1", committed)
			}
			wantSrc, wantDst := src.Balance, dst.Balance
			switch kind {
			case ledger.Debit:
				wantSrc -= tr.Amount
			case ledger.Credit:
				wantDst += tr.Amount
			case ledger.Refund:
				wantSrc += tr.Amount
			}
			gotSrc, gotDst := env.Account(t, tr.Source), env.Account(t, tr.Destination)
			if gotSrc.Balance != wantSrc || gotDst.Balance != wantDst {
				t.Errorf("balances = %d, %d; want %d, %d", gotSrc.Balance, gotDst.Balance, wantSrc, wantDst)
			}
			if moved := gotSrc.Version - src.Version + gotDst.Version - dst.Version; moved != 1 {
				t.Errorf("versions moved by %d, want 1", moved)
			}
		})
	}
}

func TestPostFenced(t *testing.T) {
	env := ledgertest.New(t)
	fences := []struct {
		name  string
		fence func(t *testing.T, tr ledgertest.Transfer)
		// allows lists the kinds the state does not fence.
		allows []ledger.Kind
	}{
		{name: "reserved", fence: func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusReserved, tr.ID)
		}},
		{name: "reconciling", allows: []ledger.Kind{ledger.Refund}, fence: func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusReconciling, tr.ID)
		}},
		{name: "completed", fence: func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusCompleted, tr.ID)
		}},
		{name: "failed", fence: func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusFailed, tr.ID)
		}},
		{name: "other transfer", fence: func(t *testing.T, tr ledgertest.Transfer) {
			env.SetRecord(t, tr.RecordKey, reservation.StatusInProgress, ledgertest.ID("tr"))
		}},
		{name: "missing", fence: func(t *testing.T, tr ledgertest.Transfer) { env.DeleteRecord(t, tr.RecordKey) }},
	}
	for _, kind := range ledger.Kinds {
		for _, f := range fences {
			t.Run(fmt.Sprintf("%s/%s", kind, f.name), func(t *testing.T) {
				tr := transferFixture(t, env)
				if kind != ledger.Debit {
					env.Post(t, tr, ledger.Debit)
				}
				f.fence(t, tr)
				before := env.Snapshot(t)
				e, err := env.Ledger.Post(context.Background(), tr.Leg(kind))
				after := env.Snapshot(t)
				for _, k := range f.allows {
					if k == kind {
						if err != nil {
							t.Fatalf("Post = %v, want success", err)
						}
						if d := before.Diff(after); d == "" {
							t.Errorf("allowed %s wrote nothing", kind)
						}
						return
					}
				}
				if !errors.Is(err, ledger.ErrFenced) || ledger.ClassOf(err) != ledger.ClassTerminal {
					t.Fatalf("Post = %+v, %v; want ErrFenced (terminal)", e, err)
				}
				wantPrefix := fmt.Sprintf("%s %s: ", strings.ToLower(string(kind)), tr.ID)
				if !strings.HasPrefix(err.Error(), wantPrefix) {
					t.Errorf("error %q does not start with %q", err, wantPrefix)
				}
				if d := before.Diff(after); d != "" {
					t.Errorf("fenced leg wrote:\n%s", d)
				}
			})
		}
	}
}

func TestPostBusinessFailures(t *testing.T) {
	env := ledgertest.New(t)
	cases := []struct {
		name string
		// setup returns the transfer and the leg to post; earlier legs
		// it needs are posted.
		setup func(t *testing.T) ledgertest.Transfer
		kind  ledger.Kind
		want  error
	}{
		{"debit insufficient funds", func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "USD", 299)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}, ledger.Debit, ledger.ErrInsufficientFunds},
		{"debit empty account", func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "USD", 0)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 1, "USD")
		}, ledger.Debit, ledger.ErrInsufficientFunds},
		{"debit unknown account", func(t *testing.T) ledgertest.Transfer {
			dst := ledgertest.ID("dst")
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, ledgertest.ID("ghost"), dst, 300, "USD")
		}, ledger.Debit, ledger.ErrAccountNotFound},
		{"debit currency mismatch", func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "EUR", 1000)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}, ledger.Debit, ledger.ErrCurrencyMismatch},
		{"debit currency mismatch and too poor", func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "EUR", 10)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}, ledger.Debit, ledger.ErrCurrencyMismatch},
		{"debit closed account", func(t *testing.T) ledgertest.Transfer {
			tr := transferFixture(t, env)
			closeAccount(t, env, tr.Source)
			return tr
		}, ledger.Debit, ledger.ErrAccountClosed},
		{"credit unknown account", func(t *testing.T) ledgertest.Transfer {
			src := ledgertest.ID("src")
			env.OpenAccount(t, src, "USD", 1000)
			tr := env.NewTransfer(t, src, ledgertest.ID("ghost"), 300, "USD")
			env.Post(t, tr, ledger.Debit)
			return tr
		}, ledger.Credit, ledger.ErrAccountNotFound},
		{"credit currency mismatch", func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccount(t, src, "USD", 1000)
			env.OpenAccount(t, dst, "GBP", 0)
			tr := env.NewTransfer(t, src, dst, 300, "USD")
			env.Post(t, tr, ledger.Debit)
			return tr
		}, ledger.Credit, ledger.ErrCurrencyMismatch},
		{"credit closed account", func(t *testing.T) ledgertest.Transfer {
			tr := transferFixture(t, env)
			env.Post(t, tr, ledger.Debit)
			closeAccount(t, env, tr.Destination)
			return tr
		}, ledger.Credit, ledger.ErrAccountClosed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.setup(t)
			before := env.Snapshot(t)
			e, err := env.Ledger.Post(context.Background(), tr.Leg(tc.kind))
			if !errors.Is(err, tc.want) || !ledger.IsBusiness(err) {
				t.Fatalf("Post = %+v, %v; want %v (business)", e, err, tc.want)
			}
			if d := before.Diff(env.Snapshot(t)); d != "" {
				t.Errorf("failed leg wrote:\n%s", d)
			}
		})
	}
}

func TestRefundToClosedAccount(t *testing.T) {
	env := ledgertest.New(t)
	tr := transferFixture(t, env)
	env.Post(t, tr, ledger.Debit)
	closeAccount(t, env, tr.Source)
	before, err := env.Ledger.Account(context.Background(), tr.Source)
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.Ledger.Post(context.Background(), tr.Leg(ledger.Refund))
	if err != nil {
		t.Fatalf("refund to a closed source account: %v", err)
	}
	after, err := env.Ledger.Account(context.Background(), tr.Source)
	if err != nil {
		t.Fatal(err)
	}
	if after.Balance-before.Balance != e.Amount || e.Amount <= 0 {
		t.Fatalf("balance %d -> %d with refund entry %+v", before.Balance, after.Balance, e)
	}
}

func closeAccount(t *testing.T, env *ledgertest.Env, id string) {
	t.Helper()
	if err := env.Ledger.CloseAccount(context.Background(), id); err != nil {
		t.Fatalf("CloseAccount(%s): %v", id, err)
	}
}

func TestPostLegOrder(t *testing.T) {
	env := ledgertest.New(t)
	cases := []struct {
		name  string
		prior []ledger.Kind
		// edit changes the transfer before the leg is posted.
		edit func(tr ledgertest.Transfer) ledgertest.Transfer
		kind ledger.Kind
		want error
	}{
		{name: "credit without debit", kind: ledger.Credit, want: ledger.ErrDebitMissing},
		{name: "credit after refund", prior: []ledger.Kind{ledger.Debit, ledger.Refund}, kind: ledger.Credit, want: ledger.ErrAlreadyRefunded},
		{name: "credit of another amount", prior: []ledger.Kind{ledger.Debit}, kind: ledger.Credit, want: ledger.ErrDebitMissing,
			edit: func(tr ledgertest.Transfer) ledgertest.Transfer { tr.Amount++; return tr }},
		{name: "credit to another account", prior: []ledger.Kind{ledger.Debit}, kind: ledger.Credit, want: ledger.ErrDebitMissing,
			edit: func(tr ledgertest.Transfer) ledgertest.Transfer { tr.Destination = "other"; return tr }},
		{name: "refund without debit", kind: ledger.Refund, want: ledger.ErrNothingToRefund},
		{name: "refund after credit", prior: []ledger.Kind{ledger.Debit, ledger.Credit}, kind: ledger.Refund, want: ledger.ErrAlreadyCredited},
		{name: "refund of another amount", prior: []ledger.Kind{ledger.Debit}, kind: ledger.Refund, want: ledger.ErrNothingToRefund,
			edit: func(tr ledgertest.Transfer) ledgertest.Transfer { tr.Amount--; return tr }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := transferFixture(t, env)
			for _, k := range tc.prior {
				env.Post(t, tr, k)
			}
			if tc.edit != nil {
				// The record names the edited payload, so the fence
				// lets the leg through to its check of the debit.
				tr = tc.edit(tr)
				env.SetPayload(t, tr)
				if _, err := env.Ledger.OpenAccount(context.Background(), tr.Destination, ledgertest.Owner, "USD", 0); err != nil {
					t.Fatalf("OpenAccount: %v", err)
				}
			}
			before := env.Snapshot(t)
			e, err := env.Ledger.Post(context.Background(), tr.Leg(tc.kind))
			if !errors.Is(err, tc.want) || ledger.ClassOf(err) != ledger.ClassTerminal {
				t.Fatalf("Post = %+v, %v; want %v (terminal)", e, err, tc.want)
			}
			if d := before.Diff(env.Snapshot(t)); d != "" {
				t.Errorf("rejected leg wrote:\n%s", d)
			}
		})
	}
}

func TestPostInvalidLeg(t *testing.T) {
	env := ledgertest.New(t)
	tr := transferFixture(t, env)
	valid := tr.Leg(ledger.Debit)
	cases := []struct {
		name  string
		edit  func(l *ledger.Leg)
		field string
	}{
		{"unknown kind", func(l *ledger.Leg) { l.Kind = "TRANSFER" }, "Kind"},
		{"lower-case kind", func(l *ledger.Leg) { l.Kind = "debit" }, "Kind"},
		{"no transfer id", func(l *ledger.Leg) { l.TransferID = "" }, "TransferID"},
		{"no record key", func(l *ledger.Leg) { l.RecordKey = "" }, "RecordKey"},
		{"no account", func(l *ledger.Leg) { l.AccountID = "" }, "AccountID"},
		{"control character in account", func(l *ledger.Leg) { l.AccountID = "a\nb" }, "AccountID"},
		{"long account id", func(l *ledger.Leg) { l.AccountID = strings.Repeat("a", 256) }, "AccountID"},
		{"no counterparty", func(l *ledger.Leg) { l.CounterpartyAccountID = "" }, "CounterpartyAccountID"},
		{"same account", func(l *ledger.Leg) { l.CounterpartyAccountID = l.AccountID }, "CounterpartyAccountID"},
		{"zero amount", func(l *ledger.Leg) { l.Amount = 0 }, "Amount"},
		{"negative amount", func(l *ledger.Leg) { l.Amount = -300 }, "Amount"},
		{"no currency", func(l *ledger.Leg) { l.Currency = "" }, "Currency"},
		{"lower-case currency", func(l *ledger.Leg) { l.Currency = "usd" }, "Currency"},
		{"long currency", func(l *ledger.Leg) { l.Currency = "USDT" }, "Currency"},
		{"digits in currency", func(l *ledger.Leg) { l.Currency = "U5D" }, "Currency"},
	}
	before := env.Snapshot(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leg := valid
			tc.edit(&leg)
			_, err := env.Ledger.Post(context.Background(), leg)
			var iv *ledger.InvalidInputError
			if !errors.As(err, &iv) || !errors.Is(err, ledger.ErrInvalidInput) || ledger.ClassOf(err) != ledger.ClassTerminal {
				t.Fatalf("Post = %v, want *InvalidInputError (terminal)", err)
			}
			if iv.Field != tc.field {
				t.Errorf("Field = %q, want %q", iv.Field, tc.field)
			}
		})
	}
	if d := before.Diff(env.Snapshot(t)); d != "" {
		t.Errorf("invalid legs wrote:\n%s", d)
	}
	if err := valid.Validate(); err != nil {
		t.Errorf("the unedited leg is invalid: %v", err)
	}
}

func TestPostUnavailable(t *testing.T) {
	env := ledgertest.New(t)
	tr := transferFixture(t, env)
	missingTables, err := ledger.New(env.Client, ledger.Config{LedgerTable: "no-such-ledger", IdempotencyTable: "no-such-records"})
	if err != nil {
		t.Fatal(err)
	}
	// A port nobody listens on: the SDK's retries fail to connect.
	closed := dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String("http://127.0.0.1:1"),
		Credentials:      env.Client.Options().Credentials,
		RetryMaxAttempts: 1,
	})
	unreachable, err := ledger.New(closed, ledger.Config{LedgerTable: env.LedgerTable, IdempotencyTable: env.IdempotencyTable})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name  string
		l     *ledger.Ledger
		ctx   context.Context
		check func(error) bool
	}{
		{"missing tables", missingTables, context.Background(), func(err error) bool {
			var rnf *types.ResourceNotFoundException
			return errors.As(err, &rnf)
		}},
		{"unreachable endpoint", unreachable, context.Background(), func(error) bool { return true }},
		{"cancelled context", env.Ledger, cancelled, func(err error) bool { return errors.Is(err, context.Canceled) }},
	}
	before := env.Snapshot(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.l.Post(tc.ctx, tr.Leg(ledger.Debit))
			if !errors.Is(err, ledger.ErrUnavailable) || ledger.ClassOf(err) != ledger.ClassTransient || !tc.check(err) {
				t.Fatalf("Post = %v, want ErrUnavailable (transient) wrapping the cause", err)
			}
		})
	}
	if d := before.Diff(env.Snapshot(t)); d != "" {
		t.Errorf("failed posts wrote:\n%s", d)
	}
}

// Entries are listed in the order their legs committed, numbered 1, 2,
// ... whatever the clocks that stamped them said: here each leg's clock is
// earlier than the one before.
func TestEntriesFollowCommitOrder(t *testing.T) {
	env := ledgertest.New(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var (
		mu   sync.Mutex
		tick int
	)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick++
		return base.Add(-time.Duration(tick) * time.Second)
	}
	l, err := ledger.New(env.Client, ledger.Config{LedgerTable: env.LedgerTable, IdempotencyTable: env.IdempotencyTable, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	src := ledgertest.ID("src")
	env.OpenAccount(t, src, "USD", 1000)
	var posted []ledger.Entry
	for i := range 3 {
		dst := ledgertest.ID("dst")
		env.OpenAccount(t, dst, "USD", 0)
		tr := env.NewTransfer(t, src, dst, 10, "USD")
		e, err := l.Post(context.Background(), tr.Leg(ledger.Debit))
		if err != nil {
			t.Fatalf("Post: %v", err)
		}
		if e.Sequence != int64(i+1) {
			t.Errorf("entry %d: Sequence = %d, want %d", i, e.Sequence, i+1)
		}
		posted = append(posted, e)
	}
	recent, err := env.Ledger.RecentEntries(context.Background(), src, 10)
	if err != nil {
		t.Fatalf("RecentEntries: %v", err)
	}
	if len(recent) != len(posted) {
		t.Fatalf("RecentEntries returned %d entries, want %d", len(recent), len(posted))
	}
	for i := range recent {
		if want := posted[len(posted)-1-i]; !sameEntry(recent[i], want) {
			t.Errorf("RecentEntries[%d] = %+v, want %+v", i, recent[i], want)
		}
	}
}

// Legs of one account posted at once all commit, each once, and take the
// sequences 1 to n between them: a leg that loses the race for the
// account's version takes the next one.
func TestConcurrentLegsTakeDistinctSequences(t *testing.T) {
	env := ledgertest.New(t)
	src := ledgertest.ID("src")
	const n = 12
	env.OpenAccount(t, src, "USD", 1000)
	legs := make([]ledger.Leg, n)
	for i := range legs {
		dst := ledgertest.ID("dst")
		env.OpenAccount(t, dst, "USD", 0)
		legs[i] = env.NewTransfer(t, src, dst, 10, "USD").Leg(ledger.Debit)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, leg := range legs {
		wg.Go(func() { _, errs[i] = settle(context.Background(), env.Ledger, leg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("leg %d: %v", i, err)
		}
	}
	entries, err := env.Ledger.RecentEntries(context.Background(), src, ledger.MaxRecentEntries)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Fatalf("%d entries, want %d", len(entries), n)
	}
	for i, e := range entries {
		if want := int64(n - i); e.Sequence != want {
			t.Errorf("entries[%d].Sequence = %d, want %d", i, e.Sequence, want)
		}
	}
	if a := env.Account(t, src); a.Balance != 1000-10*n || a.Version != n {
		t.Errorf("source: balance %d, version %d; want %d, %d", a.Balance, a.Version, 1000-10*n, n)
	}
}
