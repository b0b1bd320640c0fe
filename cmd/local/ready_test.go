//go:build integration && linux

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestAPIOpensOnlyWhenReady: make local opens the API port only once the
// stack is ready (tables created, demo accounts opened, state machine
// loaded), so the first request sent as soon as the port accepts a
// connection finds the demo accounts. A script that waits for the port
// needs nothing else.
func TestAPIOpensOnlyWhenReady(t *testing.T) {
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startLocal(t, port, t.TempDir())

	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API port %d did not open within 90s: %v", port, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, path := range []string{"/accounts/demo-alice", "/accounts/demo-bob"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s right after the port opened: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s right after the port opened: %d %s, want 200 (the demo account)", path, resp.StatusCode, body)
		}
	}
}
