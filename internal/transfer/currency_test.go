package transfer

import (
	"strings"
	"testing"

	"github.com/bojanz/currency"
)

// The generated table (go generate ./internal/transfer) is the maintained
// one: the same minor unit for every accepted currency, and nothing else.
func TestMinorUnitsMatchTheMaintainedTable(t *testing.T) {
	codes := Currencies()
	if len(minorUnits) != len(codes) {
		t.Errorf("minorunits.go has %d currencies, %d are accepted: run go generate ./internal/transfer", len(minorUnits), len(codes))
	}
	for _, code := range codes {
		want, ok := currency.GetDigits(code)
		got, have := MinorUnits(code)
		if !ok || !have || got != int(want) {
			t.Errorf("%s: minorunits.go says %d (%t), github.com/bojanz/currency %d (%t): run go generate ./internal/transfer", code, got, have, want, ok)
		}
	}
}

// Every accepted currency has its minor unit in the maintained table.
func TestEveryCurrencyHasMinorUnits(t *testing.T) {
	for _, code := range strings.Fields(iso4217) {
		if _, ok := MinorUnits(code); !ok {
			t.Errorf("%s: no minor unit", code)
		}
	}
}

// The refusal of an amount gives an example in the currency sent, in its
// own minor units.
func TestInvalidAmountSpeaksTheCurrency(t *testing.T) {
	tests := []struct {
		currency string
		want     string
	}{
		{"EUR", "1050 is EUR 10.50"},
		{"JPY", "1050 is JPY 1050"},
		{"KWD", "1050 is KWD 1.050"},
		{"CLP", "1050 is CLP 1050"},
		{"BHD", "1050 is BHD 1.050"},
		{"ZZZ", "1050 is EUR 10.50"},
		{"", "1050 is EUR 10.50"},
	}
	for _, tt := range tests {
		t.Run(tt.currency, func(t *testing.T) {
			body := `{"sourceAccountId":"a","destinationAccountId":"b","amount":10.5,"currency":"` + tt.currency + `"}`
			verr := refusal(t, body)
			for _, f := range verr.Fields {
				if f.Field == "amount" {
					if f.Code != "invalid_amount" || !strings.HasSuffix(f.Detail, tt.want) {
						t.Errorf("amount: %s %q, want invalid_amount ending %q", f.Code, f.Detail, tt.want)
					}
					return
				}
			}
			t.Fatalf("no amount error in %+v", verr.Fields)
		})
	}
}
