// Package ttl emulates DynamoDB's Time to Live on DynamoDB Local, whose
// own deletion job removes the expired items of a table without secondary
// indexes within seconds but leaves those of a table with global
// secondary indexes (as this project's are): an Emulator scans the tables with TTL
// enabled and deletes the items whose TTL attribute, a Number of epoch
// seconds, is at least Lag in the past. As on DynamoDB, an item without the
// attribute, or whose attribute is not a Number, or whose expiry is more
// than five years in the past, is never deleted, and a
// deletion is conditional on the attribute still holding the value read,
// so a concurrent update that moved or removed it wins.
package ttl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB is the part of the DynamoDB API the emulator uses.
type DynamoDB interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Table is a table with TTL enabled and its TTL attribute.
type Table struct {
	Name      string
	Attribute string
}

// Options configure an Emulator.
type Options struct {
	// Lag is how long after its expiry an item becomes deletable; DynamoDB
	// deletes expired items within days, so a test may pick any lag.
	Lag time.Duration
	// Interval is the time between runs of Start's loop; 0 means Start
	// runs no loop (call RunNow).
	Interval time.Duration
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Emulator deletes expired items. It is safe for concurrent use.
type Emulator struct {
	client DynamoDB
	tables []Table
	opts   Options
	log    *slog.Logger

	runMu  sync.Mutex // one run at a time
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	keys   map[string][]string // table -> key attribute names
}

// New returns an emulator for tables; Start runs it periodically.
func New(client DynamoDB, tables []Table, opts Options) *Emulator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Emulator{client: client, tables: append([]Table(nil), tables...), opts: opts, log: log, keys: map[string][]string{}}
}

// Start runs RunNow every Interval in the background until Close. It does
// nothing when Interval is 0 or it already runs.
func (e *Emulator) Start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opts.Interval <= 0 || e.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		t := time.NewTicker(e.opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := e.RunNow(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("TTL deletion run failed", "deleted", n, "error", err)
			} else if n > 0 {
				e.log.Debug("TTL deleted expired items", "deleted", n)
			}
		}
	}()
}

// Close stops the loop Start started and waits for a run in progress.
func (e *Emulator) Close() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.cancel = nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// RunNow scans every table once and deletes the items expired by at least
// Lag, returning how many it deleted. An item changed between the scan and
// the delete is left alone.
func (e *Emulator) RunNow(ctx context.Context) (deleted int, err error) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	now := e.opts.Now()
	cutoff := expiry{from: now.AddDate(-5, 0, 0), to: now.Add(-e.opts.Lag)}
	var errs []error
	for _, t := range e.tables {
		n, err := e.runTable(ctx, t, cutoff)
		deleted += n
		if err != nil {
			errs = append(errs, fmt.Errorf("ttl: table %s: %w", t.Name, err))
		}
	}
	return deleted, errors.Join(errs...)
}

func (e *Emulator) runTable(ctx context.Context, t Table, cutoff expiry) (int, error) {
	keys, err := e.keySchema(ctx, t.Name)
	if err != nil {
		return 0, err
	}
	deleted := 0
	in := &dynamodb.ScanInput{
		TableName:                aws.String(t.Name),
		ConsistentRead:           aws.Bool(true),
		FilterExpression:         aws.String("attribute_type(#ttl, :n)"),
		ExpressionAttributeNames: map[string]string{"#ttl": t.Attribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberS{Value: "N"},
		},
	}
	for {
		out, err := e.client.Scan(ctx, in)
		if err != nil {
			return deleted, fmt.Errorf("scan: %w", err)
		}
		for _, item := range out.Items {
			v, ok := item[t.Attribute].(*types.AttributeValueMemberN)
			if !ok || !expired(v.Value, cutoff) {
				continue
			}
			key := make(map[string]types.AttributeValue, len(keys))
			for _, k := range keys {
				key[k] = item[k]
			}
			_, err := e.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName:                 aws.String(t.Name),
				Key:                       key,
				ConditionExpression:       aws.String("#ttl = :v"),
				ExpressionAttributeNames:  map[string]string{"#ttl": t.Attribute},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
			})
			if _, changed := errors.AsType[*types.ConditionalCheckFailedException](err); changed {
				continue // updated or deleted since the scan: it wins
			}
			if err != nil {
				return deleted, fmt.Errorf("delete expired item: %w", err)
			}
			deleted++
		}
		if len(out.LastEvaluatedKey) == 0 {
			return deleted, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// expiry is the window of deletable expiry times: DynamoDB ignores values
// more than five years in the past.
type expiry struct{ from, to time.Time }

// expired reports whether a TTL value (epoch seconds, possibly fractional)
// is in the window.
func expired(value string, w expiry) bool {
	secs, err := strconv.ParseFloat(value, 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
		return false
	}
	return secs >= float64(w.from.Unix()) && secs <= float64(w.to.UnixNano())/1e9
}

// keySchema returns the key attribute names of a table, cached.
func (e *Emulator) keySchema(ctx context.Context, table string) ([]string, error) {
	e.mu.Lock()
	keys, ok := e.keys[table]
	e.mu.Unlock()
	if ok {
		return keys, nil
	}
	out, err := e.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("describe table: %w", err)
	}
	for _, k := range out.Table.KeySchema {
		keys = append(keys, aws.ToString(k.AttributeName))
	}
	e.mu.Lock()
	e.keys[table] = keys
	e.mu.Unlock()
	return keys, nil
}
