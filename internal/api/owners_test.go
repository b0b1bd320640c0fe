package api

import (
	"fmt"
	"testing"
	"time"
)

func TestOwnerCache(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		age  time.Duration
		// put are the accounts remembered, one a second from t0, each
		// owned by "owner-<account>".
		put       []string
		at        time.Duration // when get asks, after t0
		get       string
		wantOwner string
		wantOK    bool
	}{
		{name: "remembered", age: time.Minute, put: []string{"a"}, at: 30 * time.Second, get: "a", wantOwner: "owner-a", wantOK: true},
		{name: "past its age", age: time.Minute, put: []string{"a"}, at: time.Minute, get: "a"},
		{name: "never read", age: time.Minute, put: []string{"a"}, get: "b"},
		{name: "no owner is remembered too", age: time.Minute, put: []string{""}, at: time.Second, get: "", wantOwner: "owner-", wantOK: true},
		{name: "no age remembers nothing", put: []string{"a"}, get: "a"},
		{name: "full: the oldest past its age goes first", age: 3 * time.Second, put: []string{"a", "b", "c", "d", "e"}, at: 4 * time.Second, get: "d", wantOwner: "owner-d", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			c := newOwnerCache(tt.age, 4, func() time.Time { return now })
			for i, a := range tt.put {
				now = t0.Add(time.Duration(i) * time.Second)
				c.put(a, "owner-"+a, now)
			}
			now = t0.Add(tt.at)
			owner, ok := c.get(tt.get)
			if owner != tt.wantOwner || ok != tt.wantOK {
				t.Errorf("get(%q) = %q, %t; want %q, %t", tt.get, owner, ok, tt.wantOwner, tt.wantOK)
			}
			if n := len(c.entries); n > 4 {
				t.Errorf("%d entries, at most 4", n)
			}
		})
	}
	t.Run("never holds more than its size", func(t *testing.T) {
		now := t0
		c := newOwnerCache(time.Hour, 4, func() time.Time { return now })
		for i := range 100 {
			c.put(fmt.Sprint(i), "o", now)
			if n := len(c.entries); n > 4 {
				t.Fatalf("%d entries after %d puts, at most 4", n, i+1)
			}
		}
		if owner, ok := c.get("99"); !ok || owner != "o" {
			t.Errorf("the latest is not remembered: %q, %t", owner, ok)
		}
	})
}
