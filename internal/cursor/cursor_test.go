package cursor_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/cursor"
)

func sealer(t *testing.T, key string) *cursor.Sealer {
	t.Helper()
	s, err := cursor.New([]byte(strings.Repeat(key, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenReturnsTheSealedPosition(t *testing.T) {
	s := sealer(t, "k")
	pos := map[string]string{"createdAt": "2026-05-04T09:08:07.654Z", "pk": "abc"}
	got, err := s.Open("list-a", s.Seal("list-a", pos))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["createdAt"] != pos["createdAt"] || got["pk"] != pos["pk"] {
		t.Fatalf("opened %v, want %v", got, pos)
	}
}

func TestOpenRefusesWhatItDidNotSeal(t *testing.T) {
	s := sealer(t, "k")
	good := s.Seal("list-a", map[string]string{"pk": "abc"})
	payload, mac, _ := strings.Cut(good, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"pk":"abd"}`)) + "." + mac
	tests := []struct {
		name, list, cursor string
	}{
		{"another list", "list-b", good},
		{"another key", "list-a", sealer(t, "x").Seal("list-a", map[string]string{"pk": "abc"})},
		{"altered position", "list-a", forged},
		{"altered mac", "list-a", payload + "." + strings.Repeat("A", len(mac))},
		{"no mac", "list-a", payload},
		{"empty", "list-a", ""},
		{"not base64", "list-a", "!!!.???"},
		{"too long", "list-a", good + strings.Repeat("A", cursor.MaxLength)},
		{"list boundary moved", "list-", s.Seal("list-a", map[string]string{"pk": "abc"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Open(tt.list, tt.cursor); !errors.Is(err, cursor.ErrInvalid) {
				t.Fatalf("Open = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestNewRefusesAShortKey(t *testing.T) {
	if _, err := cursor.New(make([]byte, cursor.MinKeyBytes-1)); err == nil {
		t.Fatal("a 31-byte key was accepted")
	}
}
