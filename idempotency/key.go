// Package idempotency makes an operation safe to retry behind an
// Idempotency-Key header, with DynamoDB as the store.
//
// A record is kept per (scope, key), where the scope is the authenticated
// caller, so two callers may use the same key without seeing each other's
// operations. The record is reserved with one conditional PutItem: the key
// is free, or its record is terminal and past its stored expiry. When the
// key is taken, the same call returns the existing record
// (ReturnValuesOnConditionCheckFailure = ALL_OLD), so a duplicate request
// costs one round trip and no read. A reservation may also require
// conditions on other items (Reservation.Require, an authorization, say):
// then the write is one TransactWriteItems of the record's Put and those
// checks, still one round trip, and a failed check reserves nothing
// (ErrPreconditionFailed).
//
// Records move RESERVED -> IN_PROGRESS -> COMPLETED | FAILED; a fencing
// status (RECONCILING) may stand between IN_PROGRESS and a terminal one.
// Expiry is judged from the stored expiresAt, never from whether DynamoDB's
// TTL has deleted the item yet.
//
// Do and Wrap are a generic API beside the Store: they make any function
// idempotent per (scope, key) on a Persistence (DynamoDBPersistence, or
// idemtest.MemoryStore in tests), with a lease per call that fences its
// settle and release (ErrFenced), stored permanent failures, and an
// optional local cache of settled records. Their records (Entry) carry a
// format attribute, and Do refuses a record of any other format by name.
package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
)

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
