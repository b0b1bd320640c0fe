package percentile_test

import (
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/percentile"
)

func TestOf(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name     string
		sorted   []time.Duration
		permille int
		want     time.Duration
	}{
		{"empty", nil, 500, 0},
		{"one value is every percentile", []time.Duration{7}, 999, 7},
		{"median of four is the second", []time.Duration{1, 2, 3, 4}, 500, 2},
		{"p99 of a hundred is the 99th", hundred, 990, 99 * time.Millisecond},
		{"p99.9 of a hundred is the maximum", hundred, 999, 100 * time.Millisecond},
		{"p0 is the minimum", hundred, 0, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile.Of(tt.sorted, tt.permille); got != tt.want {
				t.Errorf("Of(%d) = %v, want %v", tt.permille, got, tt.want)
			}
		})
	}
}

func TestRankIsExactAtPerMille(t *testing.T) {
	// 99.9 % of 1,000 values is the 999th (index 998), with no rounding
	// up to the maximum.
	if i := percentile.Rank(1000, 999); i != 998 {
		t.Errorf("Rank(1000, 999) = %d, want 998", i)
	}
	if i := percentile.Rank(1000, 990); i != 989 {
		t.Errorf("Rank(1000, 990) = %d, want 989", i)
	}
}
