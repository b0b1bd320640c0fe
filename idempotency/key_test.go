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

// TestRecordKeyGolden pins RecordKey and Fingerprint to the values the
// records already stored carry: the SHA-256 of the scope's length, ":",
// the scope and the key.
func TestRecordKeyGolden(t *testing.T) {
	for _, c := range []struct{ scope, key, want string }{
		{"alice", "k1", "bfe2bc5152202f95c6236e0fe5a134d42f2a50cd9149561a707f1071815fbc26"},
		{"", "", "ba768b331fd86cec803be04e56ab2b3d4c0e98ef4ee4fcd4e72ad7cce61a1d1f"},
		{"arn:aws:iam::123456789012:user/alice", "order-42", "f4c24336c8f639b6a91ec00e6e817ccd28bce0fb78475afa427ac0e4e7e05f4e"},
		{strings.Repeat("s", 150), strings.Repeat("k", 255), "b947525b5b4e1006641398c4b80decede191e33a9c542f2f513bb68d3140844c"},
	} {
		if got := RecordKey(c.scope, c.key); got != c.want {
			t.Errorf("RecordKey(%.20q, %.20q) = %s, want %s", c.scope, c.key, got, c.want)
		}
	}
	if got, want := Fingerprint([]byte(`{"amount":100}`)), "4d4bbe59c6aad22442cde199a6a8a5f034405fcd78fb5a81c24ef249de1c45f1"; got != want {
		t.Errorf("Fingerprint = %s, want %s", got, want)
	}
}
