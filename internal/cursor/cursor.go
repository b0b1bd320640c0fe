// Package cursor seals a list's position into an opaque, tamper-evident
// page cursor: the position's fields, then an HMAC-SHA256 over them and
// the list they belong to. A cursor altered, made up, signed with another
// key, or presented to another list (another caller's, another account's)
// fails Open with ErrInvalid.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MinKeyBytes is the shortest key New accepts.
const MinKeyBytes = 32

// MaxLength is the longest cursor Open reads.
const MaxLength = 2048

// ErrInvalid reports a cursor that this key did not seal for this list.
var ErrInvalid = errors.New("cursor: not a cursor of this list")

// Sealer seals and opens cursors with one key.
type Sealer struct {
	key []byte
}

// New returns a Sealer with key, at least MinKeyBytes long.
func New(key []byte) (*Sealer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("cursor: the key is %d bytes, at least %d are needed", len(key), MinKeyBytes)
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// Seal returns the cursor of position pos in the list named by list (say,
// the caller's scope and the route).
func (s *Sealer) Seal(list string, pos map[string]string) string {
	payload, _ := json.Marshal(pos) // a map of strings always marshals
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(s.mac(list, payload))
}

// Open returns the position sealed in cursor for list, or ErrInvalid.
func (s *Sealer) Open(list, cursor string) (map[string]string, error) {
	if len(cursor) > MaxLength {
		return nil, ErrInvalid
	}
	p, m, ok := strings.Cut(cursor, ".")
	if !ok {
		return nil, ErrInvalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return nil, ErrInvalid
	}
	mac, err := base64.RawURLEncoding.DecodeString(m)
	if err != nil || !hmac.Equal(mac, s.mac(list, payload)) {
		return nil, ErrInvalid
	}
	var pos map[string]string
	if err := json.Unmarshal(payload, &pos); err != nil {
		return nil, ErrInvalid
	}
	return pos, nil
}

func (s *Sealer) mac(list string, payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	// The list's length first: no (list, payload) pair reads as another.
	fmt.Fprintf(h, "%d:%s", len(list), list)
	h.Write(payload)
	return h.Sum(nil)
}
