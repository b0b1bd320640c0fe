// Package percentile is the one nearest-rank percentile the project's
// load generator, benchmark and plots report, so that a figure printed
// by one agrees with the same figure drawn or checked by another.
package percentile

import "time"

// Rank is the index, in n sorted values (n > 0), of the nearest-rank
// percentile at permille per mille: the smallest value with at least that
// share of the values at or below it. Integer arithmetic, so 99.9 % of
// 1,000 values is exactly the 999th.
func Rank(n, permille int) int {
	return min(max((permille*n+999)/1000-1, 0), n-1)
}

// Of is the nearest-rank percentile of sorted at permille per mille; 0
// when sorted is empty.
func Of(sorted []time.Duration, permille int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[Rank(len(sorted), permille)]
}
