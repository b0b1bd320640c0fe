package idempotency

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want error
	}{
		{"uuid", "4f1c2a9e-7d3b-4f8e-9a51-0c6e2b7d9f10", nil},
		{"one character", "k", nil},
		{"printable punctuation and space", "order 42/#!~", nil},
		{"255 characters", strings.Repeat("a", 255), nil},
		{"empty", "", ErrKeyMissing},
		{"256 characters", strings.Repeat("a", 256), ErrKeyMalformed},
		{"tab", "a\tb", ErrKeyMalformed},
		{"newline", "a\nb", ErrKeyMalformed},
		{"delete", "a\x7fb", ErrKeyMalformed},
		{"non-ASCII", "clé", ErrKeyMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateKey(tt.key); !errors.Is(err, tt.want) {
				t.Fatalf("ValidateKey(%q) = %v, want %v", tt.key, err, tt.want)
			}
		})
	}
}

func TestRecordKeySeparatesScopes(t *testing.T) {
	keys := map[string]string{}
	for _, c := range []struct{ scope, key string }{
		{"alice", "k1"}, {"bob", "k1"}, {"alice", "k2"},
		// Concatenation alone would make these two equal.
		{"ab", "c"}, {"a", "bc"},
	} {
		k := RecordKey(c.scope, c.key)
		if prev, ok := keys[k]; ok {
			t.Fatalf("RecordKey(%q, %q) collides with %s", c.scope, c.key, prev)
		}
		keys[k] = c.scope + "/" + c.key
		if RecordKey(c.scope, c.key) != k {
			t.Fatalf("RecordKey(%q, %q) is not stable", c.scope, c.key)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a, b := Fingerprint([]byte(`{"amount":1}`)), Fingerprint([]byte(`{"amount":2}`))
	if a == b || len(a) != 64 {
		t.Fatalf("fingerprints %s and %s: want 64 hex characters, distinct", a, b)
	}
}
