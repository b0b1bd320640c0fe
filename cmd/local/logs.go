package main

import (
	"context"
	"log/slog"
)

// quietFunctions is a slog.Handler that passes the functions' records
// (loggers carrying a "function" attribute, as the local stack gives each
// function) only from functionLevel up, and every other record as next
// does. Without -v, make local thus shows the runtime's lines and the
// functions' warnings and errors, not a line per request of each function.
type quietFunctions struct {
	next          slog.Handler
	functionLevel slog.Level
	function      bool // records come from a function's logger
}

var _ slog.Handler = quietFunctions{}

func (h quietFunctions) Enabled(ctx context.Context, l slog.Level) bool {
	if h.function && l < h.functionLevel {
		return false
	}
	return h.next.Enabled(ctx, l)
}

func (h quietFunctions) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h quietFunctions) WithAttrs(attrs []slog.Attr) slog.Handler {
	fn := h.function
	for _, a := range attrs {
		fn = fn || a.Key == "function"
	}
	return quietFunctions{next: h.next.WithAttrs(attrs), functionLevel: h.functionLevel, function: fn}
}

func (h quietFunctions) WithGroup(name string) slog.Handler {
	return quietFunctions{next: h.next.WithGroup(name), functionLevel: h.functionLevel, function: h.function}
}
