package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestConstructorsCheckTheirEnvironment(t *testing.T) {
	full := map[string]string{
		"IDEMPOTENCY_TABLE": "idem", "LEDGER_TABLE": "ledger",
		"STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:T",
		"CURSOR_KEY":        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		fn      string
		env     map[string]string
		wantErr string
	}{
		{"orchestrator", "orchestrator", full, ""},
		{"orchestrator without table", "orchestrator", with("IDEMPOTENCY_TABLE", ""), "IDEMPOTENCY_TABLE"},
		{"orchestrator without state machine", "orchestrator", with("STATE_MACHINE_ARN", ""), "STATE_MACHINE_ARN"},
		{"orchestrator with bad retention", "orchestrator", with("RETENTION_HOURS", "0"), "RETENTION_HOURS"},
		{"orchestrator without cursor key", "orchestrator", with("CURSOR_KEY", ""), "CURSOR_KEY"},
		{"orchestrator with a short cursor key", "orchestrator", with("CURSOR_KEY", "short"), "CURSOR_KEY"},
		{"orchestrator with bad cap", "orchestrator", with("MAX_TRANSFER_AMOUNT", "ten"), "MAX_TRANSFER_AMOUNT"},
		{"orchestrator with ownership off", "orchestrator", with("ACCOUNT_OWNERSHIP", "off"), ""},
		{"orchestrator with bad ownership", "orchestrator", with("ACCOUNT_OWNERSHIP", "on"), "ACCOUNT_OWNERSHIP"},
		{"orchestrator scoped by session", "orchestrator", with("SCOPE_BY_SESSION", "true"), ""},
		{"orchestrator with bad session scoping", "orchestrator", with("SCOPE_BY_SESSION", "yes"), "SCOPE_BY_SESSION"},
		{"debit", "debit", full, ""},
		{"debit with ownership off", "debit", with("ACCOUNT_OWNERSHIP", "off"), ""},
		{"debit with bad ownership", "debit", with("ACCOUNT_OWNERSHIP", "Enforce"), "ACCOUNT_OWNERSHIP"},
		{"credit without ledger table", "credit", with("LEDGER_TABLE", ""), "LEDGER_TABLE"},
		{"refund", "refund", full, ""},
		{"reaper", "reaper", full, ""},
		{"reaper without state machine", "reaper", with("STATE_MACHINE_ARN", ""), "STATE_MACHINE_ARN"},
	}
	constructors := map[string]Constructor{"orchestrator": Orchestrator, "debit": Debit, "credit": Credit, "refund": Refund, "reaper": Reaper}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build, ok := constructors[tt.fn]
			if !ok {
				t.Fatalf("no constructor for %s", tt.fn)
			}
			env := tt.env
			h, err := build(context.Background(), func(k string) string { return env[k] }, AWS{Config: aws.Config{Region: "us-east-1"}}, slog.New(slog.DiscardHandler))
			switch {
			case tt.wantErr == "" && (err != nil || h == nil):
				t.Fatalf("build = %v, %v", h, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}
