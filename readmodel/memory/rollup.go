package memory

import (
	"math"
	"slices"
	"time"
)

// Roll-ups: stats whose cost does not grow with the days of the window.
//
// Each (anchor, key) keeps, besides its day cells, a roll-up over all its
// leads, one per calendar year and one per calendar month. A roll-up holds its lead count and,
// once it holds rollMin leads (smaller ones are cheaper to read day by
// day), a confFen: counts and city/zip/county counts by confidence bucket
// (64 buckets of 1/64, so 0.5 and 0.75 are bucket edges), in a Fenwick
// tree over the buckets from the top, so "every bucket above b" is the sum
// of at most 7 nodes. A confidence floor f then reads the buckets above
// f's bucket from the tree and only the leads of f's own bucket one by one,
// from the key's confidence B-tree (the smaller side of f within the
// bucket, found by walking both sides in step).
//
// A window is a signed sum of roll-ups and day cells: the whole years it
// covers, then the whole months, plus its edge days (at most about two
// months of them), or everything minus the null dates minus the years,
// months and days outside it, whichever is cheaper. Freshness buckets only
// split the last 30 days (and any future ones): roll-ups count as 31+ and
// the day cells from today-30 on move their leads to the right bucket.
//
// So a window's cost does not grow with its days: at most 2 x 11 month
// roll-ups, its whole years and about 60 edge day cells per key (a month
// roll-up without a tree, under rollMin leads, is read as its at most
// rollMin leads' cells).
//
// Memory: a confFen holds 64 nodes of sparse counts over the anchor's
// distinct cities, zips and counties (a lead counts in at most 7 nodes);
// only large anchors (state, counties, large cities) reach rollMin per
// year or month.

const confBuckets = 64

// rollMin is the lead count from which a roll-up keeps a confFen (a
// variable so tests can exercise small ones).
var rollMin int64 = 256

// confBucket is the bucket of a confidence: [b/64, (b+1)/64), the first
// and last open-ended.
func confBucket(c float64) int {
	b := math.Floor(c * confBuckets)
	switch {
	case !(b >= 0): // also NaN
		return 0
	case b >= confBuckets-1:
		return confBuckets - 1
	}
	return int(b)
}

// Packed top-list keys: the kind in the top two bits, the interned id
// below.
const (
	kindCity   uint32 = 0 << 30
	kindZip    uint32 = 1 << 30
	kindCounty uint32 = 2 << 30
	kindMask   uint32 = 3 << 30
)

// confFen is a Fenwick tree over confidence buckets, top bucket first:
// node i (1-based) covers buckets [64-i, 64-i+lowbit(i)).
//
// In a large tree the top-list counts are logged rather than searched
// (rollup_log.go): ids[i] and nullIDs then lack the changes in log, which
// every read adds.
type confFen struct {
	cnt     [confBuckets + 1]int64
	ids     [confBuckets + 1]sparseCounts // packed keys
	null    int64                         // leads with null confidence
	nullIDs sparseCounts
	log     []fenChange // top-list changes not in ids and nullIDs yet
}

func (f *confFen) add(hasConf bool, conf float64, ids leadIDs, delta int64) {
	first := 0 // the node the change starts at; 0: null confidence
	if hasConf {
		first = confBuckets - confBucket(conf)
		for i := first; i <= confBuckets; i += i & -i {
			f.cnt[i] += delta
		}
	} else {
		f.null += delta
	}
	if f.logs() {
		f.logIDs(first, ids, delta)
		return
	}
	if first == 0 {
		addPacked(&f.nullIDs, ids, delta)
		return
	}
	for i := first; i <= confBuckets; i += i & -i {
		addPacked(&f.ids[i], ids, delta)
	}
}

func addPacked(s *sparseCounts, ids leadIDs, delta int64) {
	p, n := packIDs(ids)
	for _, k := range p[:n] {
		s.add(k, delta)
	}
}

// packIDs returns the packed top-list keys of a lead's non-empty city,
// zip and county, in that order: p[:n].
func packIDs(ids leadIDs) (p [3]uint32, n int) {
	for _, k := range [3]uint32{ids.city | kindCity, ids.zip | kindZip, ids.county | kindCounty} {
		if k&^kindMask != 0 {
			p[n] = k
			n++
		}
	}
	return p, n
}

// atLeast is the number of leads in buckets >= b (b = 64: none).
func (f *confFen) atLeast(b int) int64 {
	var n int64
	for i := confBuckets - b; i > 0; i -= i & -i {
		n += f.cnt[i]
	}
	return n
}

// idsAtLeast adds sign times the top-list counts of buckets >= b.
func (f *confFen) idsAtLeast(b int, acc *leadStatsAcc, sign int64) {
	for i := confBuckets - b; i > 0; i -= i & -i {
		acc.packed(f.ids[i], sign)
	}
	if len(f.log) > 0 && b < confBuckets {
		f.loggedAtMost(confBuckets-b, acc, sign)
	}
}

// idsOfBucket adds sign times the top-list counts of bucket b alone (b <
// confBuckets): the lists of buckets >= b less those of buckets > b, and
// the log's entries of b in one pass.
func (f *confFen) idsOfBucket(b int, acc *leadStatsAcc, sign int64) {
	for i := confBuckets - b; i > 0; i -= i & -i {
		acc.packed(f.ids[i], sign)
	}
	for i := confBuckets - b - 1; i > 0; i -= i & -i {
		acc.packed(f.ids[i], -sign)
	}
	if len(f.log) > 0 {
		f.loggedAt(confBuckets-b, acc, sign)
	}
}

// nullIDsInto adds sign times the top-list counts of the leads with null
// confidence.
func (f *confFen) nullIDsInto(acc *leadStatsAcc, sign int64) {
	acc.packed(f.nullIDs, sign)
	if len(f.log) > 0 {
		f.loggedAt(0, acc, sign) // null confidence
	}
}

// cost is about the counter updates one read of the tree makes.
func (f *confFen) cost() int {
	n := len(f.nullIDs) + len(f.log)
	for i := confBuckets; i > 0; i -= i & -i {
		n += len(f.ids[i])
	}
	return 2*n + 16
}

// rollup is a roll-up of one (anchor, key): every lead (all) or the leads
// of one year [lo, hi].
type rollup struct {
	all    bool
	lo, hi int32
	n      int64
	fen    *confFen
}

func (ru *rollup) contains(day int32) bool {
	if ru.all {
		return true
	}
	return day != noDate && day >= ru.lo && day <= ru.hi
}

// yearBounds are the first and last day of the year of day.
func yearBounds(day int32) (lo, hi int32) {
	y := time.Unix(int64(day)*86400, 0).UTC().Year()
	lo = int32(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	hi = int32(time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()/86400) - 1
	return lo, hi
}

// monthBounds are the first and last day of the calendar month of day.
func monthBounds(day int32) (lo, hi int32) {
	t := time.Unix(int64(day)*86400, 0).UTC()
	lo = int32(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	hi = int32(time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC).Unix()/86400) - 1
	return lo, hi
}

// period returns the roll-up of rolls (ascending, disjoint) that holds
// day, creating it with bounds.
func period(rolls *[]*rollup, day int32, bounds func(int32) (int32, int32)) *rollup {
	i, ok := slices.BinarySearchFunc(*rolls, day, func(r *rollup, day int32) int {
		switch {
		case r.hi < day:
			return -1
		case r.lo > day:
			return 1
		}
		return 0
	})
	if ok {
		return (*rolls)[i]
	}
	lo, hi := bounds(day)
	r := &rollup{lo: lo, hi: hi}
	*rolls = slices.Insert(*rolls, i, r)
	return r
}

// year returns the roll-up of day's year, creating it.
func (d *leadDayAggs) year(day int32) *rollup { return period(&d.years, day, yearBounds) }

// month returns the roll-up of day's month, creating it.
func (d *leadDayAggs) month(day int32) *rollup { return period(&d.months, day, monthBounds) }

// roll keeps a roll-up in step with one lead added or removed (the day
// cells already are).
func (d *leadDayAggs) roll(ru *rollup, r *leadRec, delta int64) {
	ru.n += delta
	if ru.fen != nil {
		ru.fen.add(r.hasConf, r.conf, recIDs(r), delta)
		return
	}
	if ru.n >= rollMin {
		d.buildFen(ru)
	}
}

// startPeriods makes the year and month roll-ups from the day cells (which
// hold every lead written so far), with a tree for those that hold rollMin
// leads, as roll would have kept them had they existed from the first
// lead; from then on add keeps them in step.
func (d *leadDayAggs) startPeriods() {
	d.periods = true
	for i, day := range d.days {
		if n := d.cell(i).n; n != 0 {
			d.year(day).n += n
			d.month(day).n += n
		}
	}
	for _, rolls := range [2][]*rollup{d.years, d.months} {
		for _, ru := range rolls {
			if ru.n >= rollMin {
				d.buildFen(ru)
			}
		}
	}
}

// buildFen gives ru its tree, from the day cells in its bounds.
func (d *leadDayAggs) buildFen(ru *rollup) {
	var b fenBuilder
	addCell := func(c *leadDayCell) {
		for i, e := range c.recs.r {
			b.add(i < c.recs.nc, e.conf, e.ids)
		}
	}
	lo, hi := int32(noDate+1), int32(math.MaxInt32)
	if !ru.all {
		lo, hi = ru.lo, ru.hi
	} else {
		addCell(&d.null)
	}
	i, _ := slices.BinarySearch(d.days, lo)
	for ; i < len(d.days) && d.days[i] <= hi; i++ {
		addCell(d.cell(i))
	}
	ru.fen = b.build()
}

// statsPlan is a window as a signed sum of roll-ups and day cells.
type statsPlan struct {
	rolls []signedRoll
	cells []signedCell
	cost  int
}

type signedRoll struct {
	ru   *rollup
	sign int64
}

type signedCell struct {
	c    *leadDayCell
	day  int32 // noDate for the null cell
	sign int64
}

func cellCost(c *leadDayCell) int { return 4 + len(c.recs.r) }

func (p *statsPlan) addCell(c *leadDayCell, day int32, sign int64) {
	p.cells = append(p.cells, signedCell{c, day, sign})
	p.cost += cellCost(c)
}

func (p *statsPlan) addRoll(ru *rollup, sign int64) {
	p.rolls = append(p.rolls, signedRoll{ru, sign})
	p.cost += ru.fen.cost()
}

// plan returns the cheaper of two ways to sum the window (through the
// roll-ups that have a tree; the others are read day by day), reusing the
// buffers of a and b.
func (d *leadDayAggs) plan(w leadWindow, a, b *statsPlan) *statsPlan {
	a.rolls, a.cells, a.cost = a.rolls[:0], a.cells[:0], 0
	b.rolls, b.cells, b.cost = b.rolls[:0], b.cells[:0], 0
	i0, _ := slices.BinarySearch(d.days, w.lo)
	i1 := i0
	for i1 < len(d.days) && d.days[i1] <= w.hi {
		i1++
	}
	if !w.bounded {
		if d.allRoll.fen != nil {
			a.addRoll(&d.allRoll, 1)
			return a
		}
		for i := i0; i < i1; i++ {
			a.addCell(d.cell(i), d.days[i], 1)
		}
		a.addCell(&d.null, noDate, 1)
		return a
	}
	// Direct: the whole years inside the window, and its other days.
	d.sumDays(a, i0, i1, 1, func(ru *rollup) bool { return ru.lo >= w.lo && ru.hi <= w.hi })
	if d.allRoll.fen == nil || a.cost <= d.allRoll.fen.cost() {
		return a
	}
	// Complement: everything, less null dates and what lies outside.
	b.addRoll(&d.allRoll, 1)
	b.addCell(&d.null, noDate, -1)
	outside := func(ru *rollup) bool { return ru.hi < w.lo || ru.lo > w.hi }
	d.sumDays(b, 0, i0, -1, outside)
	d.sumDays(b, i1, len(d.days), -1, outside)
	if b.cost < a.cost {
		return b
	}
	return a
}

// sumDays adds the day cells [i0, i1) to p with sign, replacing the days
// of a year, else of a month, by its roll-up when the roll-up has a tree
// and use accepts it. The roll-ups it adds are disjoint and ascending.
func (d *leadDayAggs) sumDays(p *statsPlan, i0, i1 int, sign int64, use func(*rollup) bool) {
	y, m := 0, 0
	for i := i0; i < i1; {
		day := d.days[i]
		ru := nextRoll(d.years, &y, day, use)
		if ru == nil {
			ru = nextRoll(d.months, &m, day, use)
		}
		if ru != nil {
			p.addRoll(ru, sign)
			for i < i1 && d.days[i] <= ru.hi {
				i++
			}
			continue
		}
		p.addCell(d.cell(i), day, sign)
		i++
	}
}

// nextRoll moves *at along rolls (ascending) to the first one not before
// day and returns it when it holds day, has a tree and use accepts it.
func nextRoll(rolls []*rollup, at *int, day int32, use func(*rollup) bool) *rollup {
	for *at < len(rolls) && rolls[*at].hi < day {
		*at++
	}
	if *at == len(rolls) {
		return nil
	}
	if ru := rolls[*at]; ru.fen != nil && ru.contains(day) && use(ru) {
		return ru
	}
	return nil
}
