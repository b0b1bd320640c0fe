package idempotency

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// keySeeds are the keys of TestValidateKey.
var keySeeds = []string{
	"4f1c2a9e-7d3b-4f8e-9a51-0c6e2b7d9f10", "k", "order 42/#!~", strings.Repeat("a", 255),
	"", strings.Repeat("a", 256), "a\tb", "a\nb", "a\x7fb", "clé", " ", "~", "\x00",
}

// FuzzValidateKey: ValidateKey never panics and accepts exactly the keys of
// 1 to 255 bytes, each printable ASCII (space through tilde).
func FuzzValidateKey(f *testing.F) {
	for _, k := range keySeeds {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidateKey(key)
		printable := true
		for _, c := range []byte(key) {
			if c < ' ' || c > '~' {
				printable = false
			}
		}
		switch {
		case key == "":
			if !errors.Is(err, ErrKeyMissing) {
				t.Fatalf("ValidateKey(%q) = %v, want %v", key, err, ErrKeyMissing)
			}
		case len(key) <= MaxKeyLength && printable:
			if err != nil {
				t.Fatalf("ValidateKey(%q) = %v, want nil", key, err)
			}
		default:
			if !errors.Is(err, ErrKeyMalformed) {
				t.Fatalf("ValidateKey(%q) = %v, want %v", key, err, ErrKeyMalformed)
			}
		}
	})
}

// FuzzRecordKey: RecordKey is a 64-digit hex string, the same for the same
// (scope, key), and different when the scope or the key differs, however
// the two split one string between them.
func FuzzRecordKey(f *testing.F) {
	f.Add("alice", "k1", "bob", "k1")
	f.Add("alice", "k1", "alice", "k2")
	f.Add("ab", "c", "a", "bc")
	f.Add("1:a", "b", "1", ":ab")
	f.Add("", "5:abcde", "5:abcde", "")
	f.Add("alice", "k1", "alice", "k1")
	f.Fuzz(func(t *testing.T, scope1, key1, scope2, key2 string) {
		a, b := RecordKey(scope1, key1), RecordKey(scope2, key2)
		if raw, err := hex.DecodeString(a); err != nil || len(raw) != 32 || strings.ToLower(a) != a {
			t.Fatalf("RecordKey(%q, %q) = %q, want 64 lower-case hex digits", scope1, key1, a)
		}
		if again := RecordKey(scope1, key1); again != a {
			t.Fatalf("RecordKey(%q, %q) = %s, then %s", scope1, key1, a, again)
		}
		same := scope1 == scope2 && key1 == key2
		if (a == b) != same {
			t.Fatalf("RecordKey(%q, %q) = %s, RecordKey(%q, %q) = %s: equal %v, want %v",
				scope1, key1, a, scope2, key2, b, a == b, same)
		}
	})
}
