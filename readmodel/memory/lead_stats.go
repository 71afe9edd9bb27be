package memory

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/permitd/permitd/readmodel"
)

// Lead stats.
//
// PermitStats must equal what paging PermitLeads yields for the same
// filter, for any filter, and answer a state geo (~10^6 leads) within a
// few milliseconds. The filter is a day range, a set of signal keys and
// an arbitrary confidence floor, so precomputed buckets of confidence
// cannot be exact. The design:
//
//   - Every (anchor, key, day) cell keeps its aggregates (count,
//     confidence buckets, sparse counts per city, zip and county) and its
//     leads as inline records (cellRecs: confidence plus three interned
//     ids, 20 bytes, no pointers), confidence descending with null
//     confidence last. A confidence floor keeps a prefix of each cell,
//     found by binary search.
//   - Count, by-signal, confidence and freshness buckets follow from that
//     prefix length and two more binary searches (0.75, 0.5): O(log n)
//     per cell, never per lead.
//   - The top lists need exact counts per city, zip and county. A set of
//     records is added either directly (three counter increments per
//     lead) or as its cell's sparse totals minus the other records,
//     whichever is cheaper; and a key's whole window is added either cell
//     by cell or as the key's running total minus the cells outside the
//     window minus the failing records inside it, again whichever touches
//     fewer counters. The choice is made from exact costs computed in a
//     first pass, so the answer is the same either way and the work is at
//     most about half the leads of the window (a floor at the median),
//     and far less for floors near either end or windows near either end.
//
// Rejected: a per-anchor Fenwick tree over (day, confidence) answers
// counts in O(log^2) but not the exact per-city/zip/county top lists
// without one tree per id; sorted arrays with prefix sparse counts per
// position cost O(n x ids) memory. Walking the B-trees (the previous
// approach) chases a pointer per lead: ~20-60 ms for the state geo.
//
// Memory: one 20-byte record per lead per anchor (about 5 anchors per
// lead), kept in step by leadDayAggs.add.

// leadIDs are a lead's interned city, zip and county (0 when empty).
type leadIDs struct{ city, zip, county uint32 }

// cellRecs are one day cell's leads as stats records: ids[:len(conf)] are
// the leads with a confidence, in (confidence descending, ids ascending)
// order, conf aligned with them; ids[len(conf):] are the leads with null
// confidence, ids ascending. Records with equal fields are
// interchangeable, so no lead id is kept.
type cellRecs struct {
	conf []float64
	ids  []leadIDs
}

func recIDs(r *leadRec) leadIDs { return leadIDs{city: r.city, zip: r.zip, county: r.county} }

func cmpIDs(a, b leadIDs) int {
	switch {
	case a.city != b.city:
		return cmp.Compare(a.city, b.city)
	case a.zip != b.zip:
		return cmp.Compare(a.zip, b.zip)
	}
	return cmp.Compare(a.county, b.county)
}

// search returns the position of (hasConf, conf, ids) in the record
// order and whether a record with those fields is there.
func (c *cellRecs) search(hasConf bool, conf float64, ids leadIDs) (int, bool) {
	nc := len(c.conf)
	if !hasConf {
		i, ok := slices.BinarySearchFunc(c.ids[nc:], ids, cmpIDs)
		return nc + i, ok
	}
	i := sort.Search(nc, func(i int) bool {
		if c.conf[i] != conf {
			return c.conf[i] < conf
		}
		return cmpIDs(c.ids[i], ids) >= 0
	})
	return i, i < nc && c.conf[i] == conf && c.ids[i] == ids
}

func (c *cellRecs) insert(r *leadRec) {
	ids := recIDs(r)
	i, _ := c.search(r.hasConf, r.conf, ids)
	c.ids = slices.Insert(c.ids, i, ids)
	if r.hasConf {
		c.conf = slices.Insert(c.conf, i, r.conf)
	}
}

func (c *cellRecs) remove(r *leadRec) {
	i, ok := c.search(r.hasConf, r.conf, recIDs(r))
	if !ok {
		return
	}
	c.ids = slices.Delete(c.ids, i, i+1)
	if r.hasConf {
		c.conf = slices.Delete(c.conf, i, i+1)
	}
}

// atLeast is the number of records with a confidence >= f: a prefix.
func (c *cellRecs) atLeast(f float64) int {
	return sort.Search(len(c.conf), func(i int) bool { return c.conf[i] < f })
}

// passing is the length of the prefix of c's records the floor keeps.
func (c *leadDayCell) passing(minConf *float64) int {
	if minConf == nil {
		return len(c.recs.ids)
	}
	return c.recs.atLeast(*minConf)
}

func (c *leadDayCell) sparseLen() int { return len(c.cities) + len(c.zips) + len(c.counties) }

// idCost is the number of counter updates that add k of c's n records
// (a prefix or the complementary suffix) to the top-list counters: k
// records directly, or the cell's sparse totals and the other n-k records.
func (c *leadDayCell) idCost(k int) int {
	n := len(c.recs.ids)
	switch k {
	case 0:
		return 0
	case n:
		return c.sparseLen()
	}
	return min(3*k, c.sparseLen()+3*(n-k))
}

// leadStatsAcc accumulates PermitStats.
type leadStatsAcc struct {
	today    int32
	minConf  *float64
	bySignal map[string]int64
	total    int64
	conf     [3]int64
	fresh    [4]int64
	cities   idCounter
	zips     idCounter
	counties idCounter
	pass     []int // per window cell of the current key: passing prefix length
}

// idCounter is a dense count per interned id that remembers which ids it
// touched (possibly more than once).
type idCounter struct {
	n       []int64
	touched []uint32
}

func (c *idCounter) add(id uint32, n int64) {
	if id == 0 || n == 0 {
		return
	}
	if c.n[id] == 0 {
		c.touched = append(c.touched, id)
	}
	c.n[id] += n
}

func leadFreshBucket(lag int32) int {
	switch {
	case lag <= 7:
		return 0
	case lag <= 14:
		return 1
	case lag <= 30:
		return 2
	}
	return 3
}

// scalars adds the first p records of c (dated day) to every count but
// the top lists.
func (s *leadStatsAcc) scalars(c *leadDayCell, day int32, p int) {
	if p == 0 {
		return
	}
	s.total += int64(p)
	if day == noDate {
		s.fresh[3] += int64(p)
	} else {
		s.fresh[leadFreshBucket(max(s.today-day, 0))] += int64(p)
	}
	if s.minConf == nil {
		for i := range c.conf {
			s.conf[i] += c.conf[i]
		}
		return
	}
	high := min(p, c.recs.atLeast(0.75))
	medium := min(p, c.recs.atLeast(0.5)) - high
	s.conf[0] += int64(high)
	s.conf[1] += int64(medium)
	s.conf[2] += int64(p - high - medium)
}

// sparse adds sign times c's sparse totals to the top-list counters.
func (s *leadStatsAcc) sparse(c *leadDayCell, sign int64) {
	for _, e := range c.cities {
		s.cities.add(e.id, sign*e.n)
	}
	for _, e := range c.zips {
		s.zips.add(e.id, sign*e.n)
	}
	for _, e := range c.counties {
		s.counties.add(e.id, sign*e.n)
	}
}

// records adds sign once per record to the top-list counters.
func (s *leadStatsAcc) records(ids []leadIDs, sign int64) {
	for _, r := range ids {
		s.cities.add(r.city, sign)
		s.zips.add(r.zip, sign)
		s.counties.add(r.county, sign)
	}
}

// part adds sign times records [from, to) of c, a prefix or a suffix, to
// the top-list counters the cheaper way (see idCost).
func (s *leadStatsAcc) part(c *leadDayCell, from, to int, sign int64) {
	n := len(c.recs.ids)
	k := to - from
	switch {
	case k == 0:
	case k == n:
		s.sparse(c, sign)
	case 3*k <= c.sparseLen()+3*(n-k):
		s.records(c.recs.ids[from:to], sign)
	default:
		s.sparse(c, sign)
		s.records(c.recs.ids[:from], -sign)
		s.records(c.recs.ids[to:], -sign)
	}
}

// key adds the leads of one signal key that pass the window and floor.
func (s *leadStatsAcc) key(key string, d *leadDayAggs, w leadWindow) {
	i0, _ := slices.BinarySearch(d.days, w.lo)
	i1 := i0 + sort.Search(len(d.days)-i0, func(j int) bool { return d.days[i0+j] > w.hi })
	withNull := !w.bounded
	// Pass 1: scalar counts, and the exact cost of both ways to add the
	// top-list counts.
	s.pass = s.pass[:0]
	direct, kept := 0, int64(0)
	for i := i0; i < i1; i++ {
		c := d.cells[i]
		p := c.passing(s.minConf)
		s.pass = append(s.pass, p)
		s.scalars(c, d.days[i], p)
		direct += c.idCost(p)
		kept += int64(p)
	}
	nullPass := 0
	if withNull {
		nullPass = d.null.passing(s.minConf)
		s.scalars(&d.null, noDate, nullPass)
		direct += d.null.idCost(nullPass)
		kept += int64(nullPass)
	}
	if kept == 0 {
		return
	}
	s.bySignal[key] += kept
	// The complement: the key's total minus the cells outside the window
	// minus the failing records inside. Costed only while it can win.
	comp := d.all.sparseLen()
	for i := 0; i < i0 && comp < direct; i++ {
		comp += d.cells[i].sparseLen()
	}
	for i := i1; i < len(d.cells) && comp < direct; i++ {
		comp += d.cells[i].sparseLen()
	}
	for i := i0; i < i1 && comp < direct; i++ {
		c := d.cells[i]
		comp += c.idCost(len(c.recs.ids) - s.pass[i-i0])
	}
	if withNull {
		comp += d.null.idCost(len(d.null.recs.ids) - nullPass)
	} else {
		comp += d.null.sparseLen()
	}
	if direct <= comp {
		for i := i0; i < i1; i++ {
			s.part(d.cells[i], 0, s.pass[i-i0], 1)
		}
		if withNull {
			s.part(&d.null, 0, nullPass, 1)
		}
		return
	}
	s.sparse(&d.all, 1)
	for i, c := range d.cells {
		if i >= i0 && i < i1 {
			s.part(c, s.pass[i-i0], len(c.recs.ids), -1)
		} else {
			s.sparse(c, -1)
		}
	}
	if withNull {
		s.part(&d.null, nullPass, len(d.null.recs.ids), -1)
	} else {
		s.sparse(&d.null, -1)
	}
}

// stats aggregates the leads PermitLeads pages for the same filter, from
// the day cells alone (see the comment at the top of this file).
func (x *leadIndex) stats(q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	w, err := leadWindowOf(q.Filter)
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	today := parseDay(q.Today)
	if today == noDate {
		return readmodel.PermitStats{}, fmt.Errorf("%w: stats need Today", readmodel.ErrInvalidQuery)
	}
	n := len(x.names.strs)
	acc := leadStatsAcc{
		today:    today,
		minConf:  w.minConf,
		bySignal: map[string]int64{},
		cities:   idCounter{n: make([]int64, n)},
		zips:     idCounter{n: make([]int64, n)},
		counties: idCounter{n: make([]int64, n)},
	}
	for _, k := range x.anchors[q.Filter.GeoID].selected(q.Filter.SignalKeys) {
		acc.key(k.key, &k.days, w)
	}
	st := readmodel.PermitStats{
		Total:            acc.total,
		ConfidenceHigh:   acc.conf[0],
		ConfidenceMedium: acc.conf[1],
		ConfidenceLow:    acc.conf[2],
		Fresh0to7:        acc.fresh[0],
		Fresh8to14:       acc.fresh[1],
		Fresh15to30:      acc.fresh[2],
		Fresh31Plus:      acc.fresh[3],
		TopCounties:      x.top(&acc.counties, q.TopN),
		TopCities:        x.top(&acc.cities, q.TopN),
		TopZips:          x.top(&acc.zips, q.TopN),
	}
	for k, n := range acc.bySignal {
		if n > 0 {
			st.BySignal = append(st.BySignal, readmodel.ValueCount{Value: k, Count: n})
		}
	}
	sortValueCounts(st.BySignal)
	return st, nil
}

// top lists the counter's positive counts, count descending then value
// ascending, at most n (all when n < 0). It consumes the counter.
func (x *leadIndex) top(c *idCounter, n int) []readmodel.ValueCount {
	out := make([]readmodel.ValueCount, 0, len(c.touched))
	for _, id := range c.touched {
		if c.n[id] > 0 {
			out = append(out, readmodel.ValueCount{Value: x.names.str(id), Count: c.n[id]})
			c.n[id] = 0 // an id touched twice is listed once
		}
	}
	sortValueCounts(out)
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

func sortValueCounts(v []readmodel.ValueCount) {
	sort.Slice(v, func(i, j int) bool {
		if v[i].Count != v[j].Count {
			return v[i].Count > v[j].Count
		}
		return v[i].Value < v[j].Value
	})
}
