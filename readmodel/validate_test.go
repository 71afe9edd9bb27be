package readmodel

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	near := &GeoPoint{Lat: 47.6, Lon: -122.3}
	for _, tc := range []struct {
		name string
		q    interface{ Validate() error }
		ok   bool
	}{
		{"resolve limit", &ResolveQuery{Limit: MaxMatchLimit}, true},
		{"resolve limit 0", &ResolveQuery{}, false},
		{"resolve limit over", &ResolveQuery{Limit: MaxMatchLimit + 1}, false},
		{"property limit over", &PropertyQuery{Limit: MaxMatchLimit + 1}, false},
		{"permits", &PermitQuery{Limit: MaxPageLimit, FromDate: "2024-02-29", ToDate: "2024-03-01"}, true},
		{"permits limit over", &PermitQuery{Limit: MaxPageLimit + 1}, false},
		{"permits bad date", &PermitQuery{Limit: 1, FromDate: "2023-02-29"}, false},
		{"permits unknown sort", &PermitQuery{Limit: 1, Sort: "size"}, false},
		{"permits distance without near", &PermitQuery{Limit: 1, Sort: SortDistance}, false},
		{"permits distance", &PermitQuery{Limit: 1, Sort: SortDistance, Filter: PermitFilter{Near: near, RadiusM: 10}}, true},
		{"permits cursor date", &PermitQuery{Limit: 1, After: &PermitKey{IssueDate: "24-01-01", PermitID: "p"}}, false},
		{"geo signals limit 0", &GeoSignalQuery{}, false},
		{"leads", &LeadQuery{Limit: 1, Sort: SortConfidenceDesc}, true},
		{"leads sort", &LeadQuery{Limit: 1}, false},
		{"leads fresh date", &LeadQuery{Limit: 1, Sort: SortEventDateDesc, Filter: LeadFilter{FreshSince: "2024-13-01"}}, false},
		{"stats", &StatsQuery{Today: "2026-01-15", TopN: -1}, true},
		{"stats without today", &StatsQuery{TopN: StatsTopN}, false},
		{"monthly", &MonthlyQuery{FromDate: "2016-01-01", ToDate: "2025-12-31"}, true},
		{"monthly reversed", &MonthlyQuery{FromDate: "2025-02-01", ToDate: "2025-01-31"}, false},
		{"monthly too long", &MonthlyQuery{FromDate: "2016-01-01", ToDate: "2026-01-01"}, false},
		{"monthly open", &MonthlyQuery{FromDate: "2025-01-01"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.q.Validate()
			if tc.ok && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("Validate() = %v, want ErrInvalidQuery", err)
			}
		})
	}
}

func TestExportRowCap(t *testing.T) {
	for plan, want := range map[string]int{"free": 10_000, "standard": 250_000, "enterprise": 5_000_000, "development": 5_000_000, "other": 10_000} {
		if got := ExportRowCap(plan); got != want {
			t.Errorf("ExportRowCap(%q) = %d, want %d", plan, got, want)
		}
	}
}

// IsDay and DayNumber accept exactly what time.Parse(time.DateOnly)
// accepts, over every month and day of a leap and a common year and
// malformed strings, and DayNumber counts the days as time does.
func TestDayNumberIsTimeParse(t *testing.T) {
	cases := []string{"", "2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "0000-01-01", "9999-12-31", "1970-01-01", "1969-12-31",
		"2024-2-09", "2024-02-9", "24-02-09", "2024/02/09", "2024-02-09T00:00:00Z", "2024-02-09 ", " 2024-02-09",
		"2024-00-10", "2024-13-01", "2024-01-00", "2024-01-32", "2024-04-31", "2024-06-30", "abcd-ef-gh", "2024-0a-01",
		"+024-01-01", "-024-01-01", "2024-01-1\x00", "２０２４-01-01"}
	for _, y := range []int{2023, 2024} {
		for m := 0; m <= 13; m++ {
			for d := 0; d <= 32; d++ {
				cases = append(cases, fmt.Sprintf("%04d-%02d-%02d", y, m, d))
			}
		}
	}
	for _, s := range cases {
		tm, err := time.Parse(time.DateOnly, s)
		day, ok := DayNumber(s)
		if ok != (err == nil) || IsDay(s) != ok {
			t.Errorf("DayNumber(%q) ok = %v, IsDay %v, time.Parse says %v", s, ok, IsDay(s), err == nil)
			continue
		}
		if ok && int64(day) != tm.Unix()/86400 {
			t.Errorf("DayNumber(%q) = %d, time says %d", s, day, tm.Unix()/86400)
		}
	}
}

// civilDay and monthDays agree with time over every year DayNumber
// reads (0000 to 9999): each month's length (a day past it normalises
// into the next month in time.Date), and each month's first and last
// day counted as time counts them; every day of 1900 to 2100 through
// DayNumber.
func TestCivilDayIsTime(t *testing.T) {
	for y := 0; y <= 9999; y++ {
		for m := 1; m <= 12; m++ {
			n := monthDays(y, m)
			if last := time.Date(y, time.Month(m), n, 0, 0, 0, 0, time.UTC); last.Day() != n || time.Date(y, time.Month(m), n+1, 0, 0, 0, 0, time.UTC).Day() == n+1 {
				t.Fatalf("monthDays(%d, %d) = %d, time disagrees", y, m, n)
			}
			for _, d := range []int{1, n} {
				if got, want := int64(civilDay(y, m, d)), time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix()/86400; got != want {
					t.Fatalf("civilDay(%d, %d, %d) = %d, time says %d", y, m, d, got, want)
				}
			}
		}
	}
	for tm := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC); tm.Year() <= 2100; tm = tm.AddDate(0, 0, 1) {
		if day, ok := DayNumber(tm.Format(time.DateOnly)); !ok || int64(day) != tm.Unix()/86400 {
			t.Fatalf("DayNumber(%s) = %d, %v; want %d", tm.Format(time.DateOnly), day, ok, tm.Unix()/86400)
		}
	}
}
