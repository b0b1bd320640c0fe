// Package reservation is the transfer service's store of idempotency
// records: one per (caller, Idempotency-Key), each naming the transfer it
// created, in the table the SAM template declares.
//
// A record is reserved with one conditional PutItem: the key is free, or
// its record is terminal and past its stored expiry. When the key is
// taken, the same call returns the existing record
// (ReturnValuesOnConditionCheckFailure = ALL_OLD), so a duplicate request
// costs one round trip and no read. A reservation may also require
// conditions on other items (Reservation.Require, an account's owner,
// say): then the write is one TransactWriteItems of the record's Put and
// those checks, still one round trip, and a failed check reserves nothing
// (ErrPreconditionFailed).
//
// Records move RESERVED -> IN_PROGRESS -> COMPLETED | FAILED; a fencing
// status (RECONCILING) may stand between IN_PROGRESS and a terminal one.
// The workflow's own steps settle them (the state machine's DynamoDB
// tasks), fenced to the record's attempt (AttemptIs) and execution. Expiry
// is judged from the stored expiresAt, never from whether DynamoDB's Time
// to Live has deleted the item yet.
//
// The record keys, fingerprints and key rules are the idempotency
// library's (idempotency.RecordKey, idempotency.Fingerprint,
// idempotency.ValidateKey), and so are its errors (ErrKeyReused,
// ErrNotFound, *idempotency.PreconditionError). Its records carry no
// format attribute, so should the library's Do ever meet one under its
// own table key, it refuses it by name (*idempotency.FormatError) and
// leaves it as it is.
package reservation
