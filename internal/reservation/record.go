package reservation

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// Status is the state of an idempotency record.
type Status string

// Record states. RESERVED: the key is taken and the operation may not have
// started. IN_PROGRESS: the operation confirmed it started. RECONCILING: a
// reconciler fenced the record; no step of the operation may commit.
// COMPLETED and FAILED are terminal and carry the final response.
const (
	StatusReserved    Status = "RESERVED"
	StatusInProgress  Status = "IN_PROGRESS"
	StatusReconciling Status = "RECONCILING"
	StatusCompleted   Status = "COMPLETED"
	StatusFailed      Status = "FAILED"
)

// Terminal reports whether s is a final state.
func (s Status) Terminal() bool { return s == StatusCompleted || s == StatusFailed }

// Attribute names of a record in the table. The table's partition key is
// AttrKey; AttrResourceID is the hash key of the ByResourceId index and
// AttrPending of the sparse Pending index; AttrExpiresAt is the TTL
// attribute. AttrSweepAt is the sort key of the Pending index.
const (
	AttrKey         = "pk"
	AttrScope       = "scope"
	AttrStatus      = "status"
	AttrResourceID  = "resourceId"
	AttrPending     = "pending"
	AttrCreatedAt   = "createdAt"
	AttrExpiresAt   = "expiresAt"
	AttrFingerprint = "fingerprint"
	AttrResponse    = "response"
	AttrAttempt     = "attempt"
	AttrSweepAt     = "sweepAt"
)

// Index names of the table.
const (
	IndexByResourceID = "ByResourceId"
	IndexPending      = "Pending"
)

// Record is one idempotency record.
type Record struct {
	Key         string `dynamodbav:"pk"`
	Scope       string `dynamodbav:"scope"`
	Status      Status `dynamodbav:"status"`
	Fingerprint string `dynamodbav:"fingerprint"`
	// ResourceID names what the operation creates (a transfer's id).
	ResourceID string `dynamodbav:"resourceId"`
	// Request is the canonical request the operation runs from, so every
	// retry rebuilds byte-identical input.
	Request string `dynamodbav:"request"`
	// CreatedAt is RFC 3339 with milliseconds, UTC.
	CreatedAt string `dynamodbav:"createdAt"`
	// ExpiresAt is epoch seconds: the key may be reused after it. It is
	// also the table's TTL attribute, so only a terminal record carries
	// it: whoever settles the record sets it to the settlement time plus
	// RetentionSeconds. A record without it never expires and DynamoDB
	// never deletes it.
	ExpiresAt int64 `dynamodbav:"expiresAt,omitempty"`
	// RetentionSeconds is how long the record is kept once settled,
	// fixed when the key is reserved.
	RetentionSeconds int64 `dynamodbav:"retentionSeconds,omitempty"`
	// Pending mirrors Status while the record is not terminal (the sparse
	// Pending index); removed on completion.
	Pending string `dynamodbav:"pending,omitempty"`
	// Response is the final response (JSON), set when terminal.
	Response     string `dynamodbav:"response,omitempty"`
	ExecutionArn string `dynamodbav:"executionArn,omitempty"`
	UpdatedAt    string `dynamodbav:"updatedAt,omitempty"`
	// Attempt counts the times the operation was resumed after its run
	// died: 0 for the first run. Every step of the operation is fenced to
	// the current attempt, so a run of an earlier attempt that is still
	// going can commit nothing.
	Attempt int64 `dynamodbav:"attempt"`
	// SweepAt is the sort key of the Pending index: the time from which a
	// sweep measures how long the record has been pending. It is the
	// creation time, moved forward when the record is resumed or when a
	// sweep defers it, so that a sweep reads only records that are due.
	SweepAt string `dynamodbav:"sweepAt,omitempty"`
	// SettleCode and SettleDetail say why a reconciler fenced the record
	// (RECONCILING) to settle it: the failure stored if no money moved or
	// the debit is refunded. The first fence's reason stands, so a
	// reconciler that resumes another's work stores the same outcome.
	SettleCode   string `dynamodbav:"settleCode,omitempty"`
	SettleDetail string `dynamodbav:"settleDetail,omitempty"`
}

// Expired reports whether the record's retention has passed at now. A
// record without an expiry (one that is not settled) never expires.
func (r Record) Expired(now time.Time) bool { return r.ExpiresAt > 0 && now.Unix() >= r.ExpiresAt }

// Retention is how long the record is kept once settled: its
// RetentionSeconds, or DefaultRetention for a record stored without one.
func (r Record) Retention() time.Duration {
	if r.RetentionSeconds <= 0 {
		return DefaultRetention
	}
	return time.Duration(r.RetentionSeconds) * time.Second
}

// Reusable reports whether a new request may take the record's key at now:
// the record is terminal and past its expiry.
func (r Record) Reusable(now time.Time) bool { return r.Status.Terminal() && r.Expired(now) }

// TimeFormat is the layout of CreatedAt and UpdatedAt.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// AttemptIs is the condition that a record is on attempt n (Record.Attempt).
// A record stored before attempts were counted has no attribute and is on
// its first.
func AttemptIs(n int64) expression.ConditionBuilder {
	c := expression.Name(AttrAttempt).Equal(expression.Value(n))
	if n == 0 {
		c = c.Or(expression.AttributeNotExists(expression.Name(AttrAttempt)))
	}
	return c
}
