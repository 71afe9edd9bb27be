// Lead day cells: per anchor, key and day, the counts by confidence and the sorted lead records the stats read.

package memory

import (
	"cmp"
	"slices"
	"sort"
)

// leadDayAggs are exact per-day aggregates of one anchor's leads of one key.
type leadDayAggs struct {
	days  []int32 // ascending
	cells []*leadDayCell
	null  leadDayCell // leads without a date
	// Roll-ups (rollup.go): every lead, each year's and each month's.
	// The year and month roll-ups start (periods) once the key holds
	// rollMin leads: below that none of them could keep a tree, and a
	// roll-up without one is never read, so most (anchor, key) pairs, a
	// zip's or a small city's, keep none.
	allRoll rollup
	periods bool
	years   []*rollup // ascending
	months  []*rollup // ascending
}

type leadDayCell struct {
	n                      int64
	conf                   [3]int64 // high, medium, low
	cities, zips, counties sparseCounts
	recs                   cellRecs
}

func leadConfBucket(r *leadRec) int {
	switch {
	case r.hasConf && r.conf >= 0.75:
		return 0
	case r.hasConf && r.conf >= 0.5:
		return 1
	}
	return 2
}

func (d *leadDayAggs) add(r *leadRec, delta int64) {
	var c *leadDayCell
	if r.date == noDate {
		c = &d.null
	} else {
		i, ok := slices.BinarySearch(d.days, r.date)
		if !ok {
			d.days = slices.Insert(d.days, i, r.date)
			d.cells = slices.Insert(d.cells, i, &leadDayCell{})
		}
		c = d.cells[i]
	}
	c.addLead(r, delta)
	if delta > 0 {
		c.recs.insert(r)
	} else {
		c.recs.remove(r)
	}
	d.allRoll.all = true
	d.roll(&d.allRoll, r, delta)
	switch {
	case d.periods:
		if r.date != noDate {
			d.roll(d.year(r.date), r, delta)
			d.roll(d.month(r.date), r, delta)
		}
	case d.allRoll.n >= rollMin:
		d.startPeriods()
	}
}

func (c *leadDayCell) addLead(r *leadRec, delta int64) {
	c.n += delta
	c.conf[leadConfBucket(r)] += delta
	c.cities.add(r.city, delta)
	c.zips.add(r.zip, delta)
	c.counties.add(r.county, delta)
}

// count is the number of dated leads in [lo, hi].
func (d *leadDayAggs) count(lo, hi int32) int64 {
	i, _ := slices.BinarySearch(d.days, lo)
	var n int64
	for ; i < len(d.days) && d.days[i] <= hi; i++ {
		n += d.cells[i].n
	}
	return n
}

// sparseCounts counts per interned id, sorted by id; id 0 (no value) is not
// kept.
type sparseCounts []idCountPair

type idCountPair struct {
	id uint32
	n  int32 // 8 bytes a pair: a cell counts far fewer than 2^31 leads
}

func (s *sparseCounts) add(id uint32, delta int64) {
	if id == 0 {
		return
	}
	// A hand-written search: this runs a few dozen times per lead write.
	v := *s
	i, j := 0, len(v)
	for i < j {
		h := int(uint(i+j) >> 1)
		if v[h].id < id {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == len(v) || v[i].id != id {
		*s = slices.Insert(v, i, idCountPair{id: id})
	}
	(*s)[i].n += int32(delta)
	if (*s)[i].n == 0 {
		*s = slices.Delete(*s, i, i+1)
	}
}

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
