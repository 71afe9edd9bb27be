package memory

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// Monthly series (readmodel.PermitMonthlyReader). Per (geo_id, month of
// issue) the side keeps the count of permits and an order-statistics
// multiset of their known valuations (count, median by rank, sum in cents),
// so an unfiltered series costs one lookup per month. A filtered series
// walks the filter's candidate set over the window.

type monthStats struct {
	count int64
	cents int64 // sum of known valuations, in cents
	vals  valSet
}

// monthIndex is a side's month stats by geo, then month: a permit's
// write looks each of its geos up once in a map of geos, then searches
// that geo's months (a few hundred at most). It was one map keyed by
// (geo, month): in a store of 5M permits millions of entries, where a
// state's months lay scattered and each lookup was a cache miss. In
// profiles of the round into that store (BenchmarkIngestMixFullStore)
// the lookups took 0.47 of 14.54 CPU-seconds before, 0.34 of 15.51
// after (the geo's map lookup and its months' search, which also
// inserts a new month); the stats sit in the geo's slice, not behind
// a pointer each.
type monthIndex map[uint32]*geoMonths

// geoMonths is one geo's month stats: months ascending (year*12 +
// month-1), stats aligned with them, none with a count of zero.
type geoMonths struct {
	months []int32
	stats  []monthStats
}

// get is geo's stats of month m, nil when it has none.
func (x monthIndex) get(geo uint32, m int32) *monthStats { return x[geo].get(m) }

// count is the number of (geo, month) stats.
func (x monthIndex) count() int {
	n := 0
	for _, g := range x {
		n += len(g.months)
	}
	return n
}

// get is the stats of month m, nil when there are none (or g is nil).
func (g *geoMonths) get(m int32) *monthStats {
	if g == nil {
		return nil
	}
	if i, ok := g.index(m); ok {
		return &g.stats[i]
	}
	return nil
}

// index is the place of month m in g.months and whether it is there
// (else where it goes). A geo whose months run without a gap, as a big
// geo's do (a state's, a county's: a permit every month), holds m at
// m - months[0], checked with one load; the others are searched. In
// the round into a store of 5M permits the search was the month stats'
// second cost after their valuations (0.35 of 11.97 CPU-seconds).
func (g *geoMonths) index(m int32) (int, bool) {
	if n := len(g.months); n > 0 {
		if i := int(m) - int(g.months[0]); i >= 0 && i < n && g.months[i] == m {
			return i, true
		}
	}
	return slices.BinarySearch(g.months, m)
}

// drop removes the stats of month m.
func (g *geoMonths) drop(m int32) {
	if i, ok := g.index(m); ok {
		g.months = slices.Delete(g.months, i, i+1)
		g.stats = slices.Delete(g.stats, i, i+1)
	}
}

// valSet is a month's known valuations in ascending order, as a
// multiset: reads use the values alone (at: the median), so equal ones
// need not be told apart, and a version's valuation is removed as one
// of its value. It is a sorted slice while it holds at most valBlockMax
// (most geo-months hold a few permits), then sorted blocks of at most
// valBlockMax values, found by their last values (valBlocks: a
// two-level B+tree, as the permit sets are: permit_blocks.go).
//
// It was an order-statistics B-tree of 16-byte keys (the valuation and
// the permit's slot). In the round into a store of 5M permits
// (BenchmarkIngestMixFullStore) its inserts took 2.2 CPU-seconds against
// 0.4 in the round into an empty one: each a chain of cache misses
// through a cold tree's nodes, for each of a permit's geos.
type valSet struct {
	small []float64
	big   *valBlocks
}

// valBlocks is a large valSet: blocks[i] sorted, not empty, and each
// value of blocks[i] <= each of blocks[i+1]; last[i] is blocks[i]'s last.
type valBlocks struct {
	blocks [][]float64
	last   []float64
	n      int
}

// valBlockMax is the most values a block holds (1 KiB), and the most a
// small valSet holds; valBlockFill is what a block is given when a set
// is loaded in order (an Import's), leaving room for the inserts after
// a restart (as blockFill does).
const (
	valBlockMax  = 128
	valBlockFill = valBlockMax - valBlockMax/16
)

// set adds x.
func (v *valSet) set(x float64) {
	if v.big != nil {
		v.big.set(x)
		return
	}
	i, _ := slices.BinarySearch(v.small, x)
	if len(v.small) < valBlockMax {
		v.small = slices.Insert(v.small, i, x)
		return
	}
	// Full: two blocks of halves, x in its own.
	h := valBlockMax / 2
	lo, hi := make([]float64, h, valBlockMax), make([]float64, valBlockMax-h, valBlockMax)
	copy(lo, v.small[:h])
	copy(hi, v.small[h:])
	if i <= h {
		lo = slices.Insert(lo, i, x)
	} else {
		hi = slices.Insert(hi, i-h, x)
	}
	v.big = &valBlocks{blocks: [][]float64{lo, hi}, last: []float64{lo[len(lo)-1], hi[len(hi)-1]}, n: valBlockMax + 1}
	v.small = nil
}

// load adds x, which is >= every value held (an Import's, in order).
func (v *valSet) load(x float64) {
	if v.big == nil && len(v.small) < valBlockFill {
		v.small = append(v.small, x)
		return
	}
	if v.big == nil {
		v.big = &valBlocks{blocks: [][]float64{v.small}, last: []float64{v.small[len(v.small)-1]}, n: len(v.small)}
		v.small = nil
	}
	b := v.big
	if n := len(b.blocks); len(b.blocks[n-1]) < valBlockFill {
		b.blocks[n-1] = append(b.blocks[n-1], x)
		b.last[n-1] = x
	} else {
		blk := make([]float64, 1, valBlockMax)
		blk[0] = x
		b.blocks, b.last = append(b.blocks, blk), append(b.last, x)
	}
	b.n++
}

// del removes one value equal to x, if any.
func (v *valSet) del(x float64) {
	if v.big != nil {
		if v.big.del(x); v.big.n == 0 {
			v.big = nil
		}
		return
	}
	if i, found := slices.BinarySearch(v.small, x); found {
		v.small = slices.Delete(v.small, i, i+1)
	}
}

func (v *valSet) len() int {
	if v.big != nil {
		return v.big.n
	}
	return len(v.small)
}

// at is the i-th value, 0 <= i < len.
func (v *valSet) at(i int) float64 {
	if v.big == nil {
		return v.small[i]
	}
	for _, b := range v.big.blocks {
		if i < len(b) {
			return b[i]
		}
		i -= len(b)
	}
	panic("memory: valSet.at out of range")
}

// set adds x to the first block whose last value is >= x (the last
// block when none is), splitting the block in halves when it is full.
func (b *valBlocks) set(x float64) {
	bi, _ := slices.BinarySearch(b.last, x)
	bi = min(bi, len(b.blocks)-1)
	i, _ := slices.BinarySearch(b.blocks[bi], x)
	b.insertAt(bi, i, x)
}

// insertAt puts x at index i of block bi, the place set finds for it.
func (b *valBlocks) insertAt(bi, i int, x float64) {
	blk := b.blocks[bi]
	b.n++
	if len(blk) < valBlockMax {
		blk = slices.Insert(blk, i, x)
		b.blocks[bi], b.last[bi] = blk, blk[len(blk)-1]
		return
	}
	h := valBlockMax / 2
	right := make([]float64, valBlockMax-h, valBlockMax)
	copy(right, blk[h:])
	left := blk[:h]
	if i <= h {
		left = slices.Insert(left, i, x)
	} else {
		right = slices.Insert(right, i-h, x)
	}
	b.blocks[bi], b.last[bi] = left, left[len(left)-1]
	b.blocks = slices.Insert(b.blocks, bi+1, right)
	b.last = slices.Insert(b.last, bi+1, right[len(right)-1])
}

// del removes one value equal to x, if any; a block left empty goes, and
// one under a quarter full joins a neighbour with room.
func (b *valBlocks) del(x float64) {
	bi, _ := slices.BinarySearch(b.last, x)
	if bi == len(b.blocks) {
		return
	}
	blk := b.blocks[bi]
	i, found := slices.BinarySearch(blk, x)
	if !found {
		return
	}
	b.n--
	blk = slices.Delete(blk, i, i+1)
	b.blocks[bi] = blk
	switch {
	case len(blk) == 0:
		b.remove(bi)
	case len(blk) < valBlockMax/4:
		b.last[bi] = blk[len(blk)-1]
		if bi > 0 && len(b.blocks[bi-1])+len(blk) <= valBlockMax {
			b.blocks[bi-1] = append(b.blocks[bi-1], blk...)
			b.last[bi-1] = b.last[bi]
			b.remove(bi)
		} else if bi+1 < len(b.blocks) && len(b.blocks[bi+1])+len(blk) <= valBlockMax {
			b.blocks[bi] = append(blk, b.blocks[bi+1]...)
			b.last[bi] = b.last[bi+1]
			b.remove(bi + 1)
		}
	default:
		b.last[bi] = blk[len(blk)-1]
	}
}

func (b *valBlocks) remove(bi int) {
	b.blocks = slices.Delete(b.blocks, bi, bi+1)
	b.last = slices.Delete(b.last, bi, bi+1)
}

// valSetMany is the most sets setAll seeks in lock step at a time.
const valSetMany = 16

// setAll adds x (not NaN) to every set of bs (distinct sets: each is
// searched before any is written), as set does one by one,
// with the sets' searches in lock step: the blocks' last values of every
// set, then the blocks. A permit's valuation goes into the month stats of
// each of its geos, and in a big store each set's search is a chain of
// cache misses (its last values, its block); one set after another,
// each chain waited for the one before it.
func setAll(bs []*valBlocks, x float64) {
	for len(bs) > valSetMany {
		setAll(bs[:valSetMany], x)
		bs = bs[valSetMany:]
	}
	n := len(bs)
	var vals [valSetMany][]float64
	var lo, hi, bi [valSetMany]int
	for j, b := range bs {
		vals[j], lo[j], hi[j] = b.last, 0, len(b.last)
	}
	searchAll(n, &vals, &lo, &hi, x)
	for j, b := range bs {
		bi[j] = min(lo[j], len(b.blocks)-1)
		vals[j] = b.blocks[bi[j]]
		lo[j], hi[j] = 0, len(vals[j])
	}
	searchAll(n, &vals, &lo, &hi, x)
	for j, b := range bs {
		b.insertAt(bi[j], lo[j], x)
	}
}

// searchAll runs n binary searches for x, of vals[j] in [lo[j], hi[j]),
// a step of each at a time: lo[j] ends at the first value >= x, where
// slices.BinarySearch ends for an x that is not NaN.
func searchAll(n int, vals *[valSetMany][]float64, lo, hi *[valSetMany]int, x float64) {
	for {
		more := false
		for j := range n {
			if l, h := lo[j], hi[j]; l < h {
				m := int(uint(l+h) >> 1)
				if vals[j][m] < x {
					lo[j] = m + 1
				} else {
					hi[j] = m
				}
				more = true
			}
		}
		if !more {
			return
		}
	}
}

func monthOfIK(ik int32) int32 {
	t := time.Unix(int64(-ik)*86400, 0).UTC()
	return int32(t.Year()*12 + int(t.Month()) - 1)
}

func cents(v float64) int64 { return int64(math.Round(v * 100)) }

// indexMonthly adds c to (add) or removes it from its geos' stats of
// its month. Every geo's months are looked up first, then written: each
// lookup into the large map of a big store may be a cache miss, and none
// waits on another (as lanePostings does). So are, on an add, the
// geos' months found and the valuation's places in their large sets
// (addMonthly).
func (s *side) indexMonthly(c *cpermit, add bool) {
	if c.ik == undated || s.lean { // a lean side has none (permit_bulk.go)
		return
	}
	m := monthOfIK(c.ik)
	var gbuf [16]uint32
	geos := gbuf[:0] // once each: c may link twice to one geo, and the Import's build counts it once
	for _, l := range s.pi.links.get(c.links) {
		if l.geo != selfProperty && !slices.Contains(geos, l.geo) {
			geos = append(geos, l.geo)
		}
	}
	var mbuf [16]*geoMonths
	gms := mbuf[:0]
	for _, g := range geos {
		gms = append(gms, s.pf.months[g]) // nil: none
	}
	if add {
		s.addMonthly(geos, gms, m, c.valuation)
		return
	}
	for i, gm := range gms {
		st := gm.get(m)
		if st == nil {
			continue
		}
		st.count--
		if !math.IsNaN(c.valuation) {
			st.cents -= cents(c.valuation)
			st.vals.del(c.valuation)
		}
		if st.count == 0 {
			if gm.drop(m); len(gm.months) == 0 {
				delete(s.pf.months, geos[i])
			}
		}
	}
}

// addMonthly adds a permit of month m valued v (NaN: unknown) to the
// stats of geos, whose months are gms (nil: none yet), in stages over
// all the geos: their months' places, then the stats, then the
// valuation into the small sets and, in lock step, the large ones
// (setAll).
func (s *side) addMonthly(geos []uint32, gms []*geoMonths, m int32, v float64) {
	var ibuf [16]int
	var obuf [16]bool
	idx, found := ibuf[:0], obuf[:0]
	for i, gm := range gms {
		if gm == nil {
			gm = &geoMonths{}
			s.pf.months[geos[i]] = gm
			gms[i] = gm
		}
		at, ok := gm.index(m)
		idx, found = append(idx, at), append(found, ok)
	}
	known := !math.IsNaN(v)
	var bbuf [16]*valBlocks
	bigs := bbuf[:0]
	for i, gm := range gms {
		at := idx[i]
		if !found[i] {
			gm.months = slices.Insert(gm.months, at, m)
			gm.stats = slices.Insert(gm.stats, at, monthStats{})
		}
		st := &gm.stats[at]
		st.count++
		if !known {
			continue
		}
		st.cents += cents(v)
		if st.vals.big != nil {
			bigs = append(bigs, st.vals.big)
		} else {
			st.vals.set(v)
		}
	}
	setAll(bigs, v)
}

func (st *monthStats) median() *float64 {
	n := st.vals.len()
	if n == 0 {
		return nil
	}
	m := st.vals.at(n / 2)
	if n%2 == 0 {
		m = (m + st.vals.at(n/2-1)) / 2
	}
	return &m
}

// PermitMonthly implements readmodel.PermitMonthlyReader.
func (s *side) PermitMonthly(_ context.Context, q readmodel.MonthlyQuery) ([]readmodel.MonthBucket, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	from, to := parseDay(q.FromDate), parseDay(q.ToDate)
	months := readmodel.MonthsOf(q.FromDate, q.ToDate)
	out := make([]readmodel.MonthBucket, len(months))
	for i, m := range months {
		out[i].Month = m
	}
	first := monthOfIK(-from)
	set, geo, err := s.geoSet(q.Geo)
	if err != nil {
		return nil, err
	}
	if set == nil {
		return out, nil
	}
	// Whole months of an unfiltered series come from the month stats.
	whole := func(i int) bool {
		if !q.Filter.IsZero() || geo == selfProperty || s.lean { // a lean side has no month stats (permit_bulk.go)
			return false
		}
		m := first + int32(i)
		y, mo := int(m/12), time.Month(m%12+1)
		start := int32(time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
		end := int32(time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Unix() / 86400)
		return start >= from && end <= to
	}
	vals := make([][]float64, len(months))
	scanLo, scanHi := to, from // the days left to scan
	gm := s.pf.months[geo]
	for i := range months {
		if whole(i) {
			if st := gm.get(first + int32(i)); st != nil {
				out[i].Count, out[i].TotalValuation, out[i].MedianValuation = st.count, float64(st.cents)/100, st.median()
			}
			continue
		}
		m := first + int32(i)
		y, mo := int(m/12), time.Month(m%12+1)
		start := max(from, int32(time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC).Unix()/86400))
		end := min(to, int32(time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Unix()/86400))
		scanLo, scanHi = min(scanLo, start), max(scanHi, end)
	}
	if scanLo <= scanHi {
		fs := s.filteredSet(geo, set, &q.Filter)
		cents := make([]int64, len(months))
		fs.ascend(&cpermit{ik: -scanHi}, func(c *cpermit) bool {
			if c.ik > -scanLo || c.ik == undated {
				return false
			}
			i := int(monthOfIK(c.ik) - first)
			if whole(i) {
				return true
			}
			out[i].Count++
			if !math.IsNaN(c.valuation) {
				cents[i] += int64(math.Round(c.valuation * 100))
				vals[i] = append(vals[i], c.valuation)
			}
			return true
		})
		for i := range months {
			if !whole(i) {
				out[i].TotalValuation = float64(cents[i]) / 100
				out[i].MedianValuation = readmodel.Median(vals[i])
			}
		}
	}
	return out, nil
}

// PermitMonthly implements readmodel.PermitMonthlyReader.
func (s *Store) PermitMonthly(ctx context.Context, q readmodel.MonthlyQuery) ([]readmodel.MonthBucket, error) {
	return read(s, func(d *side) ([]readmodel.MonthBucket, error) { return d.PermitMonthly(ctx, q) })
}
