// Lead day cells: per anchor, key and day, the counts by confidence and the sorted lead records the stats read.

package memory

import (
	"cmp"
	"slices"
	"sort"
)

// leadDayAggs are exact per-day aggregates of one anchor's leads of one key.
type leadDayAggs struct {
	days []int32 // ascending
	// at[i] is the index of days[i]'s cell (cell(i)). Cells are held by
	// value, in the order their days first came: most cells hold a single
	// lead, and a cell per allocation would be most of a lead write's
	// garbage; a new day then moves the 4-byte entries of days and at,
	// not the 72-byte cells with their pointers (which moved under write
	// barriers while the collector ran: most of a lead write's copying).
	// Days are never removed: a cell whose leads are gone counts 0.
	//
	// The first cellBlock cells are in cells, which grows as a slice;
	// the cells after them are in blocks of cellBlock, each allocated
	// whole: a key of thousands of days (a state's) takes a new day
	// without copying its cells into a new array twice their size. In a
	// live serve, where a large key's cells were loaded at their exact
	// length, that first growth of each was 5.6% of the live lead
	// phase's samples (docs/kafka-history.md, "Eighty-fifth session").
	at     []int32
	cells  []leadDayCell
	blocks []*[cellBlock]leadDayCell
	null   leadDayCell // leads without a date
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
	n    int64
	conf [3]int64 // high, medium, low
	// sp, the cell's counts per city, zip and county, is kept once the
	// cell has held sparseMin records: below that, reading the records
	// costs no more than reading the counts, and most cells hold one lead.
	sp   *cellSparse
	recs cellRecs
}

// cellSparse are a day cell's lead counts per interned city, zip and
// county.
type cellSparse struct {
	cities, zips, counties sparseCounts
}

// sparseMin is the record count from which a day cell keeps its sparse
// counts.
var sparseMin = 8

func leadConfBucket(r *leadRec) int { return cellConfBucket(r.hasConf, r.conf) }

// cellConfBucket is the index in leadDayCell.conf of a lead with
// hasConf and conf.
func cellConfBucket(hasConf bool, conf float64) int {
	switch {
	case hasConf && conf >= 0.75:
		return 0
	case hasConf && conf >= 0.5:
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
			d.at = slices.Insert(d.at, i, d.newCell(leadDayCell{}))
		}
		c = d.cell(i)
	}
	if delta > 0 {
		c.recs.insert(r)
	} else {
		c.recs.remove(r)
	}
	c.addLead(r, delta)
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

// cell is the cell of days[i].
func (d *leadDayAggs) cell(i int) *leadDayCell {
	j := d.at[i]
	if j < cellBlock {
		return &d.cells[j]
	}
	j -= cellBlock
	return &d.blocks[j>>cellBlockBits][j&(cellBlock-1)]
}

// cellBlock is the number of cells kept in cells, and in each block
// after them.
const (
	cellBlockBits = 6
	cellBlock     = 1 << cellBlockBits
)

// newCell stores c as the next cell and returns its index, for at:
// each day has one cell, so the cells so far are len(at).
func (d *leadDayAggs) newCell(c leadDayCell) int32 {
	n := len(d.at)
	if n < cellBlock {
		d.cells = append(d.cells, c)
		return int32(n)
	}
	j := n - cellBlock
	if j&(cellBlock-1) == 0 {
		d.blocks = append(d.blocks, new([cellBlock]leadDayCell))
	}
	d.blocks[j>>cellBlockBits][j&(cellBlock-1)] = c
	return int32(n)
}

func (c *leadDayCell) addLead(r *leadRec, delta int64) {
	c.n += delta
	c.conf[leadConfBucket(r)] += delta
	switch {
	case c.sp != nil:
		c.sp.add(recIDs(r), delta)
	case len(c.recs.r) >= sparseMin: // the records hold r already
		c.sp = &cellSparse{}
		for _, e := range c.recs.r {
			c.sp.add(e.ids, 1)
		}
	}
}

func (sp *cellSparse) add(ids leadIDs, delta int64) {
	sp.cities.add(ids.city, delta)
	sp.zips.add(ids.zip, delta)
	sp.counties.add(ids.county, delta)
}

// count is the number of dated leads in [lo, hi].
func (d *leadDayAggs) count(lo, hi int32) int64 {
	i, _ := slices.BinarySearch(d.days, lo)
	var n int64
	for ; i < len(d.days) && d.days[i] <= hi; i++ {
		n += d.cell(i).n
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

// cellRecs are one day cell's leads as stats records, in one slice (a
// cell of one lead, the common case, is one small allocation): r[:nc] are
// the leads with a confidence, in (confidence descending, ids ascending)
// order; r[nc:] are the leads with null confidence (conf 0), ids
// ascending. Records with equal fields are interchangeable, so no lead id
// is kept.
type cellRecs struct {
	r  []cellRec
	nc int
}

// cellRec is one lead of a day cell: 24 bytes, no pointers.
type cellRec struct {
	conf float64
	ids  leadIDs
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
	nc := c.nc
	if !hasConf {
		i, ok := slices.BinarySearchFunc(c.r[nc:], ids, func(e cellRec, ids leadIDs) int { return cmpIDs(e.ids, ids) })
		return nc + i, ok
	}
	i := sort.Search(nc, func(i int) bool {
		if c.r[i].conf != conf {
			return c.r[i].conf < conf
		}
		return cmpIDs(c.r[i].ids, ids) >= 0
	})
	return i, i < nc && c.r[i].conf == conf && c.r[i].ids == ids
}

func (c *cellRecs) insert(r *leadRec) {
	e := cellRec{ids: recIDs(r)}
	if r.hasConf {
		e.conf = r.conf
	}
	i, _ := c.search(r.hasConf, r.conf, e.ids)
	c.r = slices.Insert(c.r, i, e)
	if r.hasConf {
		c.nc++
	}
}

func (c *cellRecs) remove(r *leadRec) {
	i, ok := c.search(r.hasConf, r.conf, recIDs(r))
	if !ok {
		return
	}
	c.r = slices.Delete(c.r, i, i+1)
	if r.hasConf {
		c.nc--
	}
}

// atLeast is the number of records with a confidence >= f: a prefix.
func (c *cellRecs) atLeast(f float64) int {
	return sort.Search(c.nc, func(i int) bool { return c.r[i].conf < f })
}

// passing is the length of the prefix of c's records the floor keeps.
func (c *leadDayCell) passing(minConf *float64) int {
	if minConf == nil {
		return len(c.recs.r)
	}
	return c.recs.atLeast(*minConf)
}

// sparseLen is the number of the cell's sparse counts; without them, as
// many as reading its records costs.
func (c *leadDayCell) sparseLen() int {
	if c.sp == nil {
		return 3 * len(c.recs.r)
	}
	return len(c.sp.cities) + len(c.sp.zips) + len(c.sp.counties)
}
