package snapshot

import "github.com/permitd/permitd/readmodel"

// Lending (LoadLent). A load with the collector off (LoadGCPercent)
// allocates every byte it decodes in memory the process has never
// touched, and in a process started afresh every page of it costs a page
// fault: at 1M permits the load allocated 2.6 GB before the store was
// ready (about 630,000 faults, 2 s of system time of its 10 s of CPU). The
// batches' permit and property arrays and their geo link arrays are
// about a gigabyte of it, and a destination that copies what it keeps
// of them (memory.(*Import).AddLent) can give them back once it has: the
// next batches are decoded into them, and the load touches a few
// batches' worth of that memory instead of the whole gigabyte.

// lent is what one batch of a LoadLent borrows: its arrays, and the
// link arrays its documents' links are cut from.
type lent struct {
	b     readmodel.Batch
	links [][]readmodel.GeoLink // given out, in order
	spare [][]readmodel.GeoLink // given back, not given out again yet
}

// linkArray is an empty link array of capacity n at least: a spare one
// when it is large enough, else a new one. A nil l (no lending) always
// makes a new one.
func (l *lent) linkArray(n uint64) []readmodel.GeoLink {
	if l == nil {
		return make([]readmodel.GeoLink, 0, n)
	}
	var a []readmodel.GeoLink
	if k := len(l.spare); k > 0 && uint64(cap(l.spare[k-1])) >= n {
		a, l.spare = l.spare[k-1][:0], l.spare[:k-1] // every link is written before it is read (geoLinks)
	} else {
		a = make([]readmodel.GeoLink, 0, n)
	}
	l.links = append(l.links, a)
	return a
}

// keep records the arrays b was decoded into (new ones when l's were
// too small) and leaves nil what b has none of, as a batch decoded
// without lending has.
func (l *lent) keep(b *readmodel.Batch) {
	if cap(b.Permits) > cap(l.b.Permits) {
		l.b.Permits = b.Permits[:0]
	}
	if cap(b.Properties) > cap(l.b.Properties) {
		l.b.Properties = b.Properties[:0]
	}
	if len(b.Permits) == 0 {
		b.Permits = nil
	}
	if len(b.Properties) == 0 {
		b.Properties = nil
	}
}

// batch is the batch to decode into: l's arrays, empty, and nothing else.
func (l *lent) batch() readmodel.Batch {
	return readmodel.Batch{Permits: l.b.Permits[:0], Properties: l.b.Properties[:0]}
}

// giveBack makes l's link arrays spare again: the batch decoded into it
// is the destination's no more.
func (l *lent) giveBack() {
	l.spare = append(l.spare, l.links...)
	clear(l.links)
	l.links = l.links[:0]
}
