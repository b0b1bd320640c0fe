// Package idempotency makes any Go function safe to retry under an
// idempotency key, with DynamoDB (DynamoDBPersistence), Redis (the
// redisstore module) or any Persistence as the store.
//
// Do and Wrap run a function at most once per (scope, key), where the
// scope is the caller or the operation, so two callers may use the same
// key without seeing each other's calls. The record is acquired with one
// conditional write that returns the existing record when the key is
// taken, so a duplicate costs one round trip and no read. Each call holds
// its record under a lease (an id and a counter that only rises) that
// fences its settle and release (ErrFenced). A permanent failure is
// stored and replayed; a transient one releases the key. An optional
// local cache serves settled records without a call. Expiry is judged
// from the stored expiry, never from whether DynamoDB's Time to Live has
// deleted the item yet.
//
// Records (Entry) move IN_PROGRESS -> COMPLETED | FAILED, or back to
// RELEASED for a retry; they carry a format attribute, and a record of
// any other format is refused by name (*FormatError).
package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// DefaultRetention is how long a settled outcome is kept and replayed
// when no retention is set (Config.Retention).
const DefaultRetention = 24 * time.Hour

// ErrKeyReused reports a key presented again with a different payload.
var ErrKeyReused = errors.New("idempotency key was already used with a different request")

// ErrNotFound reports that no record matches.
var ErrNotFound = errors.New("idempotency record not found")

// MaxKeyLength is the longest accepted Idempotency-Key.
const MaxKeyLength = 255

// Errors reported by ValidateKey.
var (
	ErrKeyMissing   = errors.New("idempotency key is missing")
	ErrKeyMalformed = errors.New("idempotency key must be 1-255 printable ASCII characters")
)

// ValidateKey checks an Idempotency-Key: 1 to 255 printable ASCII
// characters (space through tilde), no control characters.
func ValidateKey(key string) error {
	if key == "" {
		return ErrKeyMissing
	}
	if len(key) > MaxKeyLength {
		return ErrKeyMalformed
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return ErrKeyMalformed
		}
	}
	return nil
}

// RecordKey is the table key of the record for key within scope: the hex
// SHA-256 of the length-prefixed scope and key, so keys of any caller never
// collide and neither value is stored in the partition key in clear.
func RecordKey(scope, key string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(scope))))
	h.Write([]byte{':'})
	h.Write([]byte(scope))
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// Fingerprint is the hex SHA-256 of a canonical request. Two requests under
// one key are the same request exactly when their fingerprints are equal.
func Fingerprint(canonicalRequest []byte) string {
	sum := sha256.Sum256(canonicalRequest)
	return hex.EncodeToString(sum[:])
}
