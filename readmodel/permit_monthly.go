package readmodel

import (
	"context"
	"slices"
)

// MonthlyQuery aggregates the permits SearchPermits would page for Geo,
// Filter and the issue-date window [FromDate, ToDate] (both required,
// YYYY-MM-DD) per calendar month of issue_date.
type MonthlyQuery struct {
	Geo      GeoRef
	Filter   PermitFilter
	FromDate string
	ToDate   string
}

// MonthBucket is one month of a series. Months run from FromDate's month
// to ToDate's, every month present (zeros when empty).
type MonthBucket struct {
	Month string // YYYY-MM
	Count int64
	// TotalValuation sums the known valuations (0 when none);
	// MedianValuation is the median of the known valuations (the mean of
	// the two middle ones for an even count), nil when none is known.
	TotalValuation  float64
	MedianValuation *float64
}

// PermitMonthlyReader is implemented by backends that aggregate permits
// per month; the API answers NOT_IMPLEMENTED for a backend without it.
type PermitMonthlyReader interface {
	// PermitMonthly returns one bucket per month of the window, oldest
	// first. Unknown Geo: ErrNotFound.
	PermitMonthly(ctx context.Context, q MonthlyQuery) ([]MonthBucket, error)
}

// MonthsOf lists the months YYYY-MM from from's month to to's (dates
// YYYY-MM-DD, from <= to).
func MonthsOf(from, to string) []string {
	y, m := atoi(from[:4]), atoi(from[5:7])
	ty, tm := atoi(to[:4]), atoi(to[5:7])
	var out []string
	for y < ty || y == ty && m <= tm {
		out = append(out, itoa4(y)+"-"+itoa2(m))
		if m++; m > 12 {
			y, m = y+1, 1
		}
	}
	return out
}

// Median is the median of vs (sorted in place); nil for none.
func Median(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	slices.Sort(vs)
	n := len(vs)
	m := vs[n/2]
	if n%2 == 0 {
		m = (vs[n/2-1] + vs[n/2]) / 2
	}
	return &m
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func itoa4(n int) string {
	return string([]byte{byte('0' + n/1000%10), byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)})
}

func itoa2(n int) string { return string([]byte{byte('0' + n/10%10), byte('0' + n%10)}) }
