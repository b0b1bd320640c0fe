package e2e

import (
	"strings"
	"testing"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

func TestTerminalUpdate(t *testing.T) {
	const final = `{"TableName":"Idem","Key":{"pk":{"S":"k1"}},` +
		`"UpdateExpression":"SET #status = :final, #response = :response REMOVE #pending",` +
		`"ExpressionAttributeNames":{"#status":"status","#pending":"pending","#response":"response"},` +
		`"ExpressionAttributeValues":{":final":{"S":"%s"},":response":{"S":"{}"}}}`
	tests := []struct {
		name       string
		body       string
		wantKey    string
		wantStatus reservation.Status
		wantOK     bool
	}{
		{name: "completed", body: strings.Replace(final, "%s", "COMPLETED", 1), wantKey: "k1", wantStatus: reservation.StatusCompleted, wantOK: true},
		{name: "failed", body: strings.Replace(final, "%s", "FAILED", 1), wantKey: "k1", wantStatus: reservation.StatusFailed, wantOK: true},
		{name: "in progress", body: strings.Replace(final, "%s", "IN_PROGRESS", 1)},
		{
			name:    "status named directly",
			body:    `{"Key":{"pk":{"S":"k2"}},"UpdateExpression":"SET status = :s","ExpressionAttributeValues":{":s":{"S":"COMPLETED"}}}`,
			wantKey: "k2", wantStatus: reservation.StatusCompleted, wantOK: true,
		},
		{
			// A terminal value set on another attribute does not settle
			// the record.
			name: "terminal value on another attribute",
			body: `{"Key":{"pk":{"S":"k3"}},"UpdateExpression":"SET #s = :a, #o = :b","ExpressionAttributeNames":{"#s":"status","#o":"other"},` +
				`"ExpressionAttributeValues":{":a":{"S":"IN_PROGRESS"},":b":{"S":"COMPLETED"}}}`,
		},
		{
			name: "status only removed",
			body: `{"Key":{"pk":{"S":"k4"}},"UpdateExpression":"SET x = :v REMOVE #s","ExpressionAttributeNames":{"#s":"status"},"ExpressionAttributeValues":{":v":{"S":"COMPLETED"}}}`,
		},
		{name: "another key", body: `{"Key":{"pk":{"S":"a"},"sk":{"S":"b"}},"UpdateExpression":"SET status = :s","ExpressionAttributeValues":{":s":{"S":"COMPLETED"}}}`},
		{name: "not JSON", body: `COMPLETED`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, status, ok := terminalUpdate([]byte(tt.body))
			if key != tt.wantKey || status != tt.wantStatus || ok != tt.wantOK {
				t.Errorf("terminalUpdate = %q, %q, %v; want %q, %q, %v", key, status, ok, tt.wantKey, tt.wantStatus, tt.wantOK)
			}
		})
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{name: "qualified", body: `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`, want: "ConditionalCheckFailedException"},
		{name: "cancelled transaction", body: `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed"}]}`,
			want: "TransactionCanceledException[None ConditionalCheckFailed]"},
		{name: "conflict", body: `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"TransactionConflict"},{"Code":"None"}]}`,
			want: "TransactionCanceledException[TransactionConflict None]"},
		{name: "not an error document", body: `Bad Gateway`, want: "unreadable error: Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorCode([]byte(tt.body)); got != tt.want {
				t.Errorf("errorCode = %q, want %q", got, tt.want)
			}
			if tt.want != "" && strings.Contains(tt.want, "ConditionalCheckFailed") != isConditionFailure(tt.want) {
				t.Errorf("isConditionFailure(%q) = %v", tt.want, isConditionFailure(tt.want))
			}
		})
	}
}

// Wiring a probe twice (the options of its own options) records each
// call once.
func TestProbeMiddlewareIsAddedOnce(t *testing.T) {
	p := NewProbe()
	opts := p.Options(p.Options(stack.Options{}))
	s := middleware.NewStack("test", smithyhttp.NewStackRequest)
	for _, fn := range opts.APIOptions {
		if err := fn(s); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, id := range s.Finalize.List() {
		if id == captureID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d %s middlewares in %v, want 1", n, captureID, s.Finalize.List())
	}
}

func TestConfigDefaultsAndLimits(t *testing.T) {
	pairs := []Pair{{Source: "a", Destination: "b"}}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "count only", cfg: Config{Count: 1, Pairs: pairs}},
		{name: "duration only", cfg: Config{Duration: 1, Pairs: pairs}},
		{name: "neither", cfg: Config{Pairs: pairs}, wantErr: "Duration or a Count"},
		{name: "negative warm-up", cfg: Config{Count: 1, Warmup: -1, Pairs: pairs}, wantErr: "negative"},
		{name: "negative clients", cfg: Config{Count: 1, Clients: -2, Pairs: pairs}, wantErr: "clients"},
		{name: "no pairs", cfg: Config{Count: 1}, wantErr: "no account pairs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Clients != 1 || got.Caller != DefaultCaller || got.Amount != 1 || got.Currency != DefaultCurrency || got.Timeout != DefaultTimeout {
				t.Errorf("defaults not applied: %+v", got)
			}
		})
	}
}
