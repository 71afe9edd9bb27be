package memory

import (
	"cmp"
	"slices"
)

// Deferred day cells and roll-ups. A key not built yet (lead_bulk.go)
// defers its day cells and roll-ups with its trees: nobody reads those
// either before the key's build, which builds them from its pending
// records in one pass (load). Added one lead at a time
// they cost a search and an insert into a sorted slice for the lead's
// day, its cell record, its cell's sparse counts and, in each roll-up
// it counts in, for its city, zip and county in each Fenwick node above
// its bucket; loaded, the records are sorted once by day and record
// order, each cell's records are a piece of one array, and a roll-up's
// tree is built from per-bucket counts (fenBuilder).

// pendRec is a pending lead as its day cell keeps it.
type pendRec struct {
	day     int32
	hasConf bool
	e       cellRec
}

// cmpPend orders pending leads by day, then in their cell's record
// order (cellRecs: confidences descending, null last; ids ascending).
func cmpPend(a, b pendRec) int {
	if a.day != b.day {
		return cmp.Compare(a.day, b.day)
	}
	if c := confFirst(a.hasConf, a.e.conf, b.hasConf, b.e.conf); c != 0 {
		return c
	}
	return cmpIDs(a.e.ids, b.e.ids)
}

// load adds recs (a key's pending records) to d, holding what d.add of
// each would. d is empty: a deferring key's cells are written first here
// (leadIndex.add skips them, and a remove builds every key before it).
func (d *leadDayAggs) load(recs []*leadRec) {
	if len(recs) == 0 {
		return
	}
	ps := make([]pendRec, len(recs))
	for i, r := range recs {
		ps[i] = pendRec{day: r.date, hasConf: r.hasConf, e: cellRec{ids: recIDs(r)}}
		if r.hasConf {
			ps[i].e.conf = r.conf
		}
	}
	slices.SortFunc(ps, cmpPend)
	all := make([]cellRec, len(ps))
	days := 0
	for i := range ps {
		all[i] = ps[i].e
		if ps[i].day != noDate && (i == 0 || ps[i].day != ps[i-1].day) {
			days++
		}
	}
	d.days = make([]int32, 0, days)
	d.at = make([]int32, 0, days)
	d.cells, d.blocks = make([]leadDayCell, 0, min(days, cellBlock)), nil
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].day == ps[i].day {
			j++
		}
		// A cell's records end at their capacity: an insert into one
		// moves it to its own array, never over the next cell's.
		c := leadDayCell{n: int64(j - i), recs: cellRecs{r: all[i:j:j]}}
		for _, p := range ps[i:j] {
			if p.hasConf {
				c.recs.nc++
			}
			c.conf[cellConfBucket(p.hasConf, p.e.conf)]++
		}
		if j-i >= sparseMin {
			c.sp = &cellSparse{}
			for _, e := range c.recs.r {
				c.sp.add(e.ids, 1)
			}
		}
		if ps[i].day == noDate {
			d.null = c
		} else {
			d.days = append(d.days, ps[i].day)
			d.at = append(d.at, d.newCell(c))
		}
		i = j
	}
	// What add's roll calls reach once the last lead is in: a tree for
	// every roll-up of rollMin leads, the year and month roll-ups once
	// the key holds rollMin.
	d.allRoll.all = true
	d.allRoll.n = int64(len(ps))
	if d.allRoll.n >= rollMin {
		d.buildFen(&d.allRoll)
		d.startPeriods()
	}
}

// fenBuilder collects leads by confidence bucket and builds the confFen
// that adding each of them would (build): each bucket's packed keys
// sorted and counted once, then each Fenwick node's counts merged into
// its parent's.
type fenBuilder struct {
	cnt     [confBuckets + 1]int64
	ids     [confBuckets + 1][]uint32 // packed keys, one per lead and kind
	null    int64
	nullIDs []uint32
}

func (b *fenBuilder) add(hasConf bool, conf float64, ids leadIDs) {
	if !hasConf {
		b.null++
		b.nullIDs = appendPacked(b.nullIDs, ids)
		return
	}
	i := confBuckets - confBucket(conf)
	b.cnt[i]++
	b.ids[i] = appendPacked(b.ids[i], ids)
}

func appendPacked(keys []uint32, ids leadIDs) []uint32 {
	p, n := packIDs(ids)
	return append(keys, p[:n]...)
}

func (b *fenBuilder) build() *confFen {
	f := &confFen{null: b.null, nullIDs: countKeys(b.nullIDs)}
	for i := 1; i <= confBuckets; i++ {
		f.cnt[i] += b.cnt[i]
		if own := countKeys(b.ids[i]); len(f.ids[i]) == 0 {
			f.ids[i] = own
		} else {
			f.ids[i] = mergeCounts(f.ids[i], own)
		}
		if j := i + i&-i; j <= confBuckets {
			f.cnt[j] += f.cnt[i]
			f.ids[j] = mergeCounts(f.ids[j], f.ids[i])
		}
	}
	return f
}

// countKeys sorts keys and counts each (nil when there are none).
func countKeys(keys []uint32) sparseCounts {
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	n := 1
	for i := 1; i < len(keys); i++ {
		if keys[i] != keys[i-1] {
			n++
		}
	}
	s := make(sparseCounts, 0, n)
	for i, k := range keys {
		if i > 0 && k == keys[i-1] {
			s[len(s)-1].n++
			continue
		}
		s = append(s, idCountPair{id: k, n: 1})
	}
	return s
}

// mergeCounts returns the sum of a and b (sorted, no zero counts) in a
// new slice: no two nodes share an array (sparseCounts.add inserts in
// place when it has room).
func mergeCounts(a, b sparseCounts) sparseCounts {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return slices.Clone(b)
	}
	s := make(sparseCounts, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].id < b[j].id:
			s = append(s, a[i])
			i++
		case a[i].id > b[j].id:
			s = append(s, b[j])
			j++
		default:
			s = append(s, idCountPair{id: a[i].id, n: a[i].n + b[j].n})
			i, j = i+1, j+1
		}
	}
	s = append(s, a[i:]...)
	return append(s, b[j:]...)
}
