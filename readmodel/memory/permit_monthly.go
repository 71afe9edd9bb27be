package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// Monthly series (readmodel.PermitMonthlyReader). Per (geo_id, month of
// issue) the side keeps the count of permits and an order-statistics
// B-tree of their known valuations (count, median by rank, sum in cents),
// so an unfiltered series costs one lookup per month. A filtered series
// walks the filter's candidate set over the window.

type monthKey struct {
	geo   uint32
	month int32 // year*12 + month-1
}

type monthStats struct {
	count int64
	cents int64 // sum of known valuations, in cents
	vals  valSet
}

// valKey is a known valuation and, to tell equal ones apart, the
// permit's slot (permit_slab.go: a permit keeps it across versions, so a
// version's key is removed as it was added). Reads use v alone (at), so
// the order of equal values is nobody's business; 16 bytes and no
// pointer.
type valKey struct {
	v    float64
	slot uint32
}

func valKeyLess(a, b valKey) bool {
	if a.v != b.v {
		return a.v < b.v
	}
	return a.slot < b.slot
}

// valSet is a month's known valuations in valKeyLess order: a sorted
// slice while small (most geo-months hold a few permits, and a B-tree
// each cost them an allocation or two per insert), a B-tree from
// smallVals on, for good.
type valSet struct {
	small []valKey
	tree  *btree.BTreeG[valKey]
}

// smallVals is the size up to which a valSet is a slice.
const smallVals = 64

func cmpValKey(a, b valKey) int {
	switch {
	case a.v < b.v:
		return -1
	case a.v > b.v:
		return 1
	}
	return cmp.Compare(a.slot, b.slot)
}

// set adds k (replacing an equal key).
func (v *valSet) set(k valKey) {
	if v.tree != nil {
		v.tree.Set(k)
		return
	}
	i, found := slices.BinarySearchFunc(v.small, k, cmpValKey)
	if found {
		v.small[i] = k
		return
	}
	v.small = slices.Insert(v.small, i, k)
	v.grow()
}

// load adds k, which sorts after every key (an Import's, in order).
func (v *valSet) load(k valKey) {
	if v.tree != nil {
		v.tree.Load(k)
		return
	}
	v.small = append(v.small, k)
	v.grow()
}

// grow turns a slice past smallVals into a B-tree.
func (v *valSet) grow() {
	if len(v.small) <= smallVals {
		return
	}
	t := btree.NewBTreeGOptions(valKeyLess, btree.Options{NoLocks: true, Degree: 32})
	for _, x := range v.small {
		t.Load(x)
	}
	v.tree, v.small = t, nil
}

func (v *valSet) del(k valKey) {
	if v.tree != nil {
		v.tree.Delete(k)
		return
	}
	if i, found := slices.BinarySearchFunc(v.small, k, cmpValKey); found {
		v.small = slices.Delete(v.small, i, i+1)
	}
}

func (v *valSet) len() int {
	if v.tree != nil {
		return v.tree.Len()
	}
	return len(v.small)
}

// at is the i-th key, 0 <= i < len.
func (v *valSet) at(i int) valKey {
	if v.tree != nil {
		k, _ := v.tree.GetAt(i)
		return k
	}
	return v.small[i]
}

func monthOfIK(ik int32) int32 {
	t := time.Unix(int64(-ik)*86400, 0).UTC()
	return int32(t.Year()*12 + int(t.Month()) - 1)
}

func cents(v float64) int64 { return int64(math.Round(v * 100)) }

func (s *side) indexMonthly(c *cpermit, add bool) {
	if c.ik == undated || s.lean { // a lean side has none (permit_bulk.go)
		return
	}
	m := monthOfIK(c.ik)
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty {
			continue
		}
		k := monthKey{l.geo, m}
		st := s.pf.months[k]
		if st == nil {
			if !add {
				continue
			}
			st = &monthStats{}
			s.pf.months[k] = st
		}
		d := int64(1)
		if !add {
			d = -1
		}
		st.count += d
		if !math.IsNaN(c.valuation) {
			st.cents += d * cents(c.valuation)
			if add {
				st.vals.set(valKey{c.valuation, c.slot})
			} else {
				st.vals.del(valKey{c.valuation, c.slot})
			}
		}
		if st.count == 0 {
			delete(s.pf.months, k)
		}
	}
}

func (st *monthStats) median() *float64 {
	n := st.vals.len()
	if n == 0 {
		return nil
	}
	a := st.vals.at(n / 2)
	m := a.v
	if n%2 == 0 {
		b := st.vals.at(n/2 - 1)
		m = (a.v + b.v) / 2
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
	for i := range months {
		if whole(i) {
			if st := s.pf.months[monthKey{geo, first + int32(i)}]; st != nil {
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
