//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// cleanupWait bounds how long the clean-up waits for the run's transfers
// still in flight to settle before it leaves their accounts in place.
const cleanupWait = time.Minute

// runStarted is when this run began: the clean-up looks at the records
// created since (less a margin for clock skew).
var runStarted = time.Now()

// runWrites is what this run wrote to the stack's tables outside the API,
// to be removed by exact key when the run ends.
var runWrites = &ledgerNotes{}

// ledgerNotes are the ledger account ids the run generated and the
// idempotency records it wrote itself (holdInProgress).
type ledgerNotes struct {
	mu       sync.Mutex
	accounts []string
	held     []string
}

func (n *ledgerNotes) noteAccount(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.accounts = append(n.accounts, id)
}

func (n *ledgerNotes) noteHeld(recordKey string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held = append(n.held, recordKey)
}

// cleanUpAfter removes what the run left in the stack's tables, reports
// it on stderr, and returns the run's exit code: code, or 1 when the
// clean-up failed.
func cleanUpAfter(code int) int {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupWait+2*time.Minute)
	defer cancel()
	rep, err := tg.cleanUp(ctx)
	fmt.Fprint(os.Stderr, rep)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: clean-up: %v\n", err)
		return max(code, 1)
	}
	if tg.local {
		// The local stack's tables show whether the clean-up missed
		// anything: nothing of this run's accounts may be left but
		// what the report says it kept.
		if err := tg.checkCleanedUp(ctx, rep); err != nil {
			fmt.Fprintf(os.Stderr, "integration: clean-up: %v\n", err)
			return max(code, 1)
		}
	}
	return code
}

// cleanupReport says what the clean-up removed and what it left.
type cleanupReport struct {
	accounts, items int
	heldDeleted     int
	// kept are accounts left in place, with why.
	kept map[string]string
}

func (r cleanupReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "integration: clean-up: deleted %d items of %d test accounts (ids it-*-%s-*) and %d idempotency records the run wrote itself\n",
		r.items, r.accounts, runID, r.heldDeleted)
	for _, id := range slices.Sorted(maps.Keys(r.kept)) {
		fmt.Fprintf(&b, "integration: clean-up: kept account %s: %s\n", id, r.kept[id])
	}
	return b.String()
}

// cleanUp deletes, by exact key, the run's test accounts with every item
// the ledger holds under them (entries, void markers), and the
// idempotency records the run wrote itself while no workflow has taken
// them up. An account of a transfer that is still pending after
// cleanupWait is kept, so that no leg, refund or sweep ever finds its
// account gone. The idempotency records the API made are left to expire
// (the table's TTL, RetentionHours after they settled).
func (t *target) cleanUp(ctx context.Context) (cleanupReport, error) {
	rep := cleanupReport{kept: map[string]string{}}
	runWrites.mu.Lock()
	accounts := slices.Clone(runWrites.accounts)
	held := slices.Clone(runWrites.held)
	runWrites.mu.Unlock()

	for _, key := range held {
		deleted, err := t.deleteHeld(ctx, key)
		if err != nil {
			return rep, err
		}
		if deleted {
			rep.heldDeleted++
		}
	}

	pending, err := t.pendingTransfers(ctx, accounts)
	if err != nil {
		return rep, err
	}
	deadline := time.Now().Add(cleanupWait)
	for len(pending) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		for key := range pending {
			rec, err := t.records.GetByRecordKey(ctx, key)
			if errors.Is(err, idempotency.ErrNotFound) || err == nil && rec.Status.Terminal() {
				delete(pending, key)
			} else if err != nil {
				return rep, err
			}
		}
	}
	for _, p := range pending {
		for _, id := range []string{p.SourceAccountID, p.DestinationAccountID} {
			rep.kept[id] = fmt.Sprintf("transfer %s (record %s) is still %s after %v; the sweeper settles it", p.transferID, p.recordKey, p.status, cleanupWait)
		}
	}

	for _, id := range accounts {
		if _, ok := rep.kept[id]; ok {
			continue
		}
		n, err := t.deleteAccount(ctx, id)
		if err != nil {
			return rep, err
		}
		if n > 0 {
			rep.accounts++
			rep.items += n
		}
	}
	return rep, nil
}

// deleteHeld deletes a record holdInProgress wrote, on condition that it
// is as that left it: IN_PROGRESS on its first attempt, no execution
// ever marked it. A record the sweeper took up (resumed, so RESERVED on
// its next attempt, or marked by that attempt's execution) is left to it.
func (t *target) deleteHeld(ctx context.Context, recordKey string) (bool, error) {
	_, err := t.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(t.recordsTable),
		Key:                 map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: recordKey}},
		ConditionExpression: aws.String("#status = :inProgress AND attribute_not_exists(executionArn) AND #attempt = :first"),
		ExpressionAttributeNames: map[string]string{
			"#status": reservation.AttrStatus, "#attempt": reservation.AttrAttempt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inProgress": &types.AttributeValueMemberS{Value: string(reservation.StatusInProgress)},
			":first":      &types.AttributeValueMemberN{Value: "0"},
		},
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("delete the held record %s: %w", recordKey, err)
	}
	return true, nil
}

// pendingTransfer is a record of the run not yet settled.
type pendingTransfer struct {
	recordKey, transferID string
	status                reservation.Status
	SourceAccountID       string `json:"sourceAccountId"`
	DestinationAccountID  string `json:"destinationAccountId"`
}

// pendingTransfers lists the records of the run's callers created since
// the run began whose transfer touches one of accounts and is not
// settled, by record key.
func (t *target) pendingTransfers(ctx context.Context, accounts []string) (map[string]pendingTransfer, error) {
	ours := map[string]bool{}
	for _, id := range accounts {
		ours[id] = true
	}
	callers := []*caller{t.first}
	if second, _, err := t.second(ctx); err != nil {
		return nil, err
	} else if second != nil {
		callers = append(callers, second)
	}
	since := runStarted.Add(-5 * time.Minute).UTC().Format(reservation.TimeFormat)
	out := map[string]pendingTransfer{}
	for _, c := range callers {
		var after *reservation.Position
		for {
			recs, next, err := t.records.ListByScope(ctx, c.scope, 100, after)
			if err != nil {
				return nil, fmt.Errorf("list the records of %s: %w", c.name, err)
			}
			for _, rec := range recs {
				if rec.CreatedAt < since {
					next = nil
					break
				}
				var p pendingTransfer
				if err := json.Unmarshal([]byte(rec.Request), &p); err != nil {
					return nil, fmt.Errorf("record %s: request: %w", rec.Key, err)
				}
				if rec.Status.Terminal() || !ours[p.SourceAccountID] && !ours[p.DestinationAccountID] {
					continue
				}
				p.recordKey, p.transferID, p.status = rec.Key, rec.ResourceID, rec.Status
				out[rec.Key] = p
			}
			if next == nil {
				break
			}
			after = next
		}
	}
	return out, nil
}

// deleteAccount deletes every item under the account's partition key in
// the ledger table (the account, its entries and void markers) and
// returns how many there were.
func (t *target) deleteAccount(ctx context.Context, id string) (int, error) {
	pk := ledger.PartitionKey(id)
	n := 0
	pages := dynamodb.NewQueryPaginator(t.db, &dynamodb.QueryInput{
		TableName:                aws.String(t.ledgerTable),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		ProjectionExpression:     aws.String("#pk, #sk"),
		ExpressionAttributeNames: map[string]string{"#pk": "pk", "#sk": "sk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
		},
		ConsistentRead: aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return n, fmt.Errorf("read the items of account %s: %w", id, err)
		}
		for _, item := range page.Items {
			if _, err := t.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(t.ledgerTable),
				Key:       map[string]types.AttributeValue{"pk": item["pk"], "sk": item["sk"]},
			}); err != nil {
				return n, fmt.Errorf("delete an item of account %s: %w", id, err)
			}
			n++
		}
	}
	return n, nil
}

// checkCleanedUp scans the local stack's ledger table for items of this
// run's accounts that the clean-up neither deleted nor reported kept.
func (t *target) checkCleanedUp(ctx context.Context, rep cleanupReport) error {
	var left []string
	pages := dynamodb.NewScanPaginator(t.db, &dynamodb.ScanInput{
		TableName:                 aws.String(t.ledgerTable),
		FilterExpression:          aws.String("contains(#pk, :run)"),
		ExpressionAttributeNames:  map[string]string{"#pk": "pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":run": &types.AttributeValueMemberS{Value: "-" + runID + "-"}},
		ConsistentRead:            aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("scan the ledger: %w", err)
		}
		for _, item := range page.Items {
			pk, _ := item["pk"].(*types.AttributeValueMemberS)
			sk, _ := item["sk"].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil {
				continue
			}
			id := strings.TrimPrefix(pk.Value, ledger.PartitionKey(""))
			if _, kept := rep.kept[id]; !kept {
				left = append(left, pk.Value+" "+sk.Value)
			}
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		return fmt.Errorf("%d items of this run's accounts are still in the ledger: %s", len(left), strings.Join(left, ", "))
	}
	return nil
}
