package readmodel

import (
	"fmt"
	"time"
)

// Validate methods check a query struct's documented contract. The
// backends call them first thing instead of checking figures of their
// own, once per read; the API's parameter checks come before, so a
// failure reaching the API is a programming error, a 500. The API calls
// one itself only where it must know before answering starts (an
// export's stream). Every error wraps ErrInvalidQuery.

// IsDay reports whether s is a real calendar date written YYYY-MM-DD.
func IsDay(s string) bool {
	_, ok := DayNumber(s)
	return ok
}

// DayNumber is the number of days from 1970-01-01 to s, a real calendar
// date written YYYY-MM-DD (what time.Parse(time.DateOnly) accepts); ok
// is false for anything else. A scan of the digits: the indexer checks
// the dates of every event, the memory backend keeps them as numbers.
func DayNumber(s string) (day int32, ok bool) {
	if len(s) != len(time.DateOnly) || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	num := func(b string) int {
		n := 0
		for i := range len(b) {
			if b[i] < '0' || b[i] > '9' {
				return -1
			}
			n = n*10 + int(b[i]-'0')
		}
		return n
	}
	y, m, d := num(s[:4]), num(s[5:7]), num(s[8:])
	if y < 0 || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, false
	}
	if d > monthDays(y, m) {
		return 0, false
	}
	return civilDay(y, m, d), true
}

// monthDays is the number of days of month m (1 to 12) of year y, in
// the proleptic Gregorian calendar (time's).
func monthDays(y, m int) int {
	if m == 2 {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + (m+m/8)&1 // 31 for January, March, May, July, August, October, December
}

// civilDay is the number of days from 1970-01-01 to the date y-m-d (y
// 0 to 9999, a real date), as time.Date(y, m, d, 0, 0, 0, 0,
// time.UTC).Unix()/86400 counts them, by arithmetic: years from March,
// so that the leap day ends a year, in eras of 400 years (146,097 days).
// Each event's dates are counted: time.Date and Day were about 250
// instructions a date.
func civilDay(y, m, d int) int32 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400 // 0 to 399
	mp := m - 3        // the month from March, 0 to 11
	if m <= 2 {
		mp = m + 9
	}
	doy := (153*mp+2)/5 + d - 1 // the day of the year from March 1st
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468) // 719,468 days from 0000-03-01 to 1970-01-01
}

func invalidQuery(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidQuery}, args...)...)
}

func checkLimit(what string, n, hi int) error {
	if n < 1 || n > hi {
		return invalidQuery("%s limit %d is not in 1..%d", what, n, hi)
	}
	return nil
}

// checkDays: every non-empty date is YYYY-MM-DD.
func checkDays(what string, days ...string) error {
	for _, d := range days {
		if d != "" && !IsDay(d) {
			return invalidQuery("%s date %q is not YYYY-MM-DD", what, d)
		}
	}
	return nil
}

// Validate checks Limit (1..MaxMatchLimit).
func (q *ResolveQuery) Validate() error { return checkLimit("resolve", q.Limit, MaxMatchLimit) }

// Validate checks Limit (1..MaxMatchLimit).
func (q *PropertyQuery) Validate() error { return checkLimit("property", q.Limit, MaxMatchLimit) }

// Validate checks Limit (1..MaxPageLimit), the date bounds, the sort
// (SortDistance needs Filter.Near) and the cursor's issue date.
func (q *PermitQuery) Validate() error {
	if err := checkLimit("permit", q.Limit, MaxPageLimit); err != nil {
		return err
	}
	if err := checkDays("permit", q.FromDate, q.ToDate); err != nil {
		return err
	}
	switch q.Sort {
	case SortIssueDate, SortValuationDesc:
	case SortDistance:
		if q.Filter.Near == nil {
			return invalidQuery("distance order without near")
		}
	default:
		return invalidQuery("permit sort %q", q.Sort)
	}
	if q.After != nil {
		return checkDays("permit cursor", q.After.IssueDate)
	}
	return nil
}

// Validate checks Limit (1..MaxPageLimit).
func (q *GeoSignalQuery) Validate() error { return checkLimit("geo signal", q.Limit, MaxPageLimit) }

// Validate checks the filter's dates.
func (f *LeadFilter) Validate() error {
	return checkDays("lead", f.FromDate, f.ToDate, f.FreshSince)
}

// Validate checks Limit (1..MaxPageLimit), the sort, the filter and the
// cursor's event date.
func (q *LeadQuery) Validate() error {
	if err := checkLimit("lead", q.Limit, MaxPageLimit); err != nil {
		return err
	}
	if q.Sort != SortEventDateDesc && q.Sort != SortConfidenceDesc {
		return invalidQuery("lead sort %q", q.Sort)
	}
	if err := q.Filter.Validate(); err != nil {
		return err
	}
	if q.After != nil {
		return checkDays("lead cursor", q.After.EventDate)
	}
	return nil
}

// Validate checks the filter and Today (required).
func (q *StatsQuery) Validate() error {
	if !IsDay(q.Today) {
		return invalidQuery("stats need Today, got %q", q.Today)
	}
	return q.Filter.Validate()
}

// Validate checks the window: both dates YYYY-MM-DD, FromDate not after
// ToDate, at most MaxMonths months.
func (q *MonthlyQuery) Validate() error {
	if !IsDay(q.FromDate) || !IsDay(q.ToDate) || q.FromDate > q.ToDate {
		return invalidQuery("monthly window %q..%q", q.FromDate, q.ToDate)
	}
	if n := monthSpan(q.FromDate, q.ToDate); n > MaxMonths {
		return invalidQuery("monthly window of %d months; the most is %d", n, MaxMonths)
	}
	return nil
}

// monthSpan is len(MonthsOf(from, to)) without the list.
func monthSpan(from, to string) int {
	return (atoi(to[:4])-atoi(from[:4]))*12 + atoi(to[5:7]) - atoi(from[5:7]) + 1
}
