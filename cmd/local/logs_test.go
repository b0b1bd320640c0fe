package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestQuietFunctions(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(quietFunctions{next: slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), functionLevel: slog.LevelWarn})
	fn := log.With("function", "OrchestratorFunction")
	tests := []struct {
		name  string
		log   func()
		shown bool
	}{
		{"the runtime's INFO", func() { log.Info("runtime info") }, true},
		{"the runtime's DEBUG", func() { log.Debug("runtime debug") }, false},
		{"a function's INFO", func() { fn.Info("function info") }, false},
		{"a function's INFO under a group", func() { fn.WithGroup("g").Info("grouped info") }, false},
		{"a function's WARN", func() { fn.Warn("function warn") }, true},
		{"a function's ERROR with more attributes", func() { fn.With("transferId", "t").Error("function error") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			tc.log()
			if got := strings.TrimSpace(buf.String()) != ""; got != tc.shown {
				t.Errorf("shown = %v, want %v (%q)", got, tc.shown, buf.String())
			}
		})
	}
}
