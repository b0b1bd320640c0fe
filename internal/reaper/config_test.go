package reaper_test

import (
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reaper"
)

func TestConfigFromEnv(t *testing.T) {
	full := map[string]string{
		"IDEMPOTENCY_TABLE": "idem",
		"LEDGER_TABLE":      "ledger",
		"STATE_MACHINE_ARN": "arn:aws:states:eu-west-1:111122223333:stateMachine:Transfer",
	}
	with := func(k, v string) map[string]string {
		m := maps.Clone(full)
		m[k] = v
		return m
	}
	tests := []struct {
		name       string
		env        map[string]string
		wantErr    bool
		stuckAfter time.Duration
		grace      time.Duration
		window     time.Duration
	}{
		{"defaults", full, false, 0, 0, 0},
		{"stuck after", with("STUCK_AFTER_SECONDS", "30"), false, 30 * time.Second, 0, 0},
		{"grace", with("NOT_FOUND_GRACE_SECONDS", "5"), false, 0, 5 * time.Second, 0},
		{"completion window", with("COMPLETE_WITHIN_SECONDS", "7200"), false, 0, 0, 2 * time.Hour},
		{"missing table", with("IDEMPOTENCY_TABLE", ""), true, 0, 0, 0},
		{"missing ledger table", with("LEDGER_TABLE", ""), true, 0, 0, 0},
		{"missing state machine", with("STATE_MACHINE_ARN", ""), true, 0, 0, 0},
		{"stuck after zero", with("STUCK_AFTER_SECONDS", "0"), true, 0, 0, 0},
		{"stuck after not a number", with("STUCK_AFTER_SECONDS", "15m"), true, 0, 0, 0},
		{"grace negative", with("NOT_FOUND_GRACE_SECONDS", "-1"), true, 0, 0, 0},
		{"completion window zero", with("COMPLETE_WITHIN_SECONDS", "0"), true, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := reaper.ConfigFromEnv(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr {
				t.Fatalf("ConfigFromEnv = %+v, %v; want an error: %t", cfg, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := reaper.Config{IdempotencyTable: "idem", LedgerTable: "ledger", StateMachineARN: full["STATE_MACHINE_ARN"], StuckAfter: tc.stuckAfter,
				NotFoundGrace: tc.grace, CompleteWithin: tc.window}
			if cfg.IdempotencyTable != want.IdempotencyTable || cfg.LedgerTable != want.LedgerTable ||
				cfg.StateMachineARN != want.StateMachineARN || cfg.StuckAfter != want.StuckAfter || cfg.NotFoundGrace != want.NotFoundGrace ||
				cfg.CompleteWithin != want.CompleteWithin {
				t.Errorf("ConfigFromEnv = %+v; want %+v", cfg, want)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	client := sfn.New(sfn.Options{Region: "us-east-1"})
	l, err := ledger.New(db, ledger.Config{LedgerTable: "ledger", IdempotencyTable: "idem"})
	if err != nil {
		t.Fatal(err)
	}
	valid := reaper.Config{IdempotencyTable: "idem", StateMachineARN: "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"}
	tests := []struct {
		name    string
		edit    func(*reaper.Config)
		wantErr bool
	}{
		{"valid", func(*reaper.Config) {}, false},
		{"other partition", func(c *reaper.Config) {
			c.StateMachineARN = "arn:aws-cn:states:cn-north-1:123456789012:stateMachine:Transfer"
		}, false},
		{"no table", func(c *reaper.Config) { c.IdempotencyTable = "" }, true},
		{"execution ARN", func(c *reaper.Config) {
			c.StateMachineARN = "arn:aws:states:us-east-1:123456789012:execution:Transfer:t-1"
		}, true},
		{"state machine version ARN", func(c *reaper.Config) { c.StateMachineARN += ":1" }, true},
		{"not an ARN", func(c *reaper.Config) { c.StateMachineARN = "Transfer" }, true},
		{"negative limit", func(c *reaper.Config) { c.SweepLimit = -1 }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.edit(&cfg)
			_, err := reaper.New(cfg, db, client, l, slog.New(slog.DiscardHandler))
			if (err != nil) != tc.wantErr {
				t.Errorf("New = %v; want an error: %t", err, tc.wantErr)
			}
		})
	}
}
