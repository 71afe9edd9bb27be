package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestPlanCostDoesNotGrowWithTheWindow: with a lead on every day of 15
// years and every roll-up holding a tree, any bounded window is summed
// from at most 2 x 11 month roll-ups, its whole years and at most about
// two months of edge days (the direct plan), or the complement's
// counterparts; never a day cell per day of the window.
func TestPlanCostDoesNotGrowWithTheWindow(t *testing.T) {
	defer SetRollMin(1)()
	var d leadDayAggs
	base := time.Date(2011, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(t time.Time) int32 { return int32(t.Unix() / 86400) }
	for i := range 15 * 366 {
		c := float64(i%100) / 100
		d.add(&leadRec{lead: readmodel.Lead{LeadID: fmt.Sprint(i)}, date: day(base.AddDate(0, 0, i)), hasConf: true, conf: c, city: uint32(1 + i%5)}, 1)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var a, b statsPlan
	for range 2000 {
		lo := base.AddDate(0, 0, r.IntN(15*366))
		hi := lo.AddDate(0, 0, r.IntN(5*366))
		w := leadWindow{lo: day(lo), hi: day(hi), bounded: true}
		p := d.plan(w, &a, &b)
		require.LessOrEqual(t, len(p.cells), 2*31+2, "window %s..%s", lo.Format(time.DateOnly), hi.Format(time.DateOnly))
		require.LessOrEqual(t, len(p.rolls), 2*11+2*16+1, "window %s..%s", lo.Format(time.DateOnly), hi.Format(time.DateOnly))
		// The plan's signed sum is the window's lead count.
		var n, want int64
		for _, c := range p.cells {
			n += c.sign * c.c.n
		}
		for _, ru := range p.rolls {
			n += ru.sign * ru.ru.n
		}
		for i, dd := range d.days {
			if dd >= w.lo && dd <= w.hi {
				want += d.cell(i).n
			}
		}
		require.Equal(t, want, n, "window %s..%s", lo.Format(time.DateOnly), hi.Format(time.DateOnly))
	}
}

func TestMonthBounds(t *testing.T) {
	day := func(s string) int32 { return parseDay(s) }
	for _, c := range []struct{ in, lo, hi string }{
		{"2024-02-10", "2024-02-01", "2024-02-29"},
		{"2023-02-28", "2023-02-01", "2023-02-28"},
		{"2025-12-31", "2025-12-01", "2025-12-31"},
		{"2026-01-01", "2026-01-01", "2026-01-31"},
	} {
		lo, hi := monthBounds(day(c.in))
		require.Equal(t, day(c.lo), lo, c.in)
		require.Equal(t, day(c.hi), hi, c.in)
	}
}
