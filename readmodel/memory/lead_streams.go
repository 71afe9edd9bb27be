// Lead streams: the per-key lead lists read in date or confidence order, merged across keys for a page or a top list.

package memory

import (
	"math"
	"sort"
)

// streamDateLess and streamConfLess order lead streams by their current
// leads (dateLess, confLess): the merge orders of the two lead sorts.
func streamDateLess(a, b *leadStream) bool { return dateLess(a.cur, b.cur) }

func streamConfLess(a, b *leadStream) bool { return confLess(a.cur, b.cur) }

// leadStream yields one key's leads of a page in the page's order: from a
// B-tree iterator (filtered as it goes on the items' fields, stopping at
// the window's far edge), or from a short list already in order.
type leadStream struct {
	cur  *leadRec
	it   leadItem // cur's item, from the iterator
	iter leadIter
	x    *leadIndex // whose recs iter's items name
	live bool       // iter is in use
	// started: the iterator is positioned on its first candidate.
	started bool
	// items: cur is left nil, the caller reading it (confTop).
	items  bool
	accept func(it leadItem) (take, more bool)
	list   []*leadRec
}

// advance moves to the next lead of the stream; false at its end.
func (st *leadStream) advance() bool {
	if !st.live {
		if len(st.list) == 0 {
			return false
		}
		st.cur, st.list = st.list[0], st.list[1:]
		return true
	}
	for {
		var ok bool
		if st.started {
			ok = st.iter.Next()
		} else {
			ok, st.started = st.seek(), true
		}
		if !ok {
			return false
		}
		it := st.iter.Item()
		take, more := st.accept(it)
		if take {
			st.it = it
			if !st.items {
				st.cur = st.x.rec(it)
			}
			return true
		}
		if !more {
			return false
		}
	}
}

func (st *leadStream) seek() bool {
	if st.cur != nil { // the seek key
		k := st.cur
		st.cur = nil
		return st.iter.Seek(seekItem(k))
	}
	return st.iter.First()
}

func (st *leadStream) release() {
	if st.live {
		st.iter.Release()
	}
}

// dateStream streams the leads of the window after `after` in event-date
// order: it seeks to the later of the cursor and the window's upper bound
// and stops at the lower bound.
func (k *keyLeads) dateStream(st *leadStream, w leadWindow, after *leadRec) {
	var start *leadRec
	if w.hi != math.MaxInt32 {
		start = &leadRec{date: w.hi, hasConf: true, conf: math.Inf(1)}
	}
	if after != nil && (start == nil || dateLess(start, after)) {
		start = after
	}
	st.iter, st.live, st.cur, st.x = k.byDate.Iter(), true, start, k.x
	ai := cursorItem(after)
	st.accept = func(it leadItem) (bool, bool) {
		if after != nil && !k.x.afterInDate(after, ai, it) {
			return false, true // the cursor's own item
		}
		if it.date == noDate {
			if w.bounded {
				return false, false
			}
		} else if it.date < w.lo {
			return false, false
		}
		return w.passes(it), true
	}
}

// confStream streams the leads of the window after `after` in confidence
// order. When the date window holds few leads of this key (by the day
// aggregates), its best `want` come from one walk of the window in the
// date tree, kept in order as they are found (at most `want` held);
// otherwise the confidence tree is walked from the cursor, skipping leads
// outside the window and stopping below the confidence floor.
func (k *keyLeads) confStream(st *leadStream, w leadWindow, after *leadRec, want int) {
	if w.bounded {
		if n := k.days.count(w.lo, w.hi); n <= 4096 || n*8 < int64(k.byConf.Len()) {
			st.list = k.confTop(w, after, want)
			return
		}
	}
	st.iter, st.live, st.cur, st.x = k.byConf.Iter(), true, after, k.x
	ai := cursorItem(after)
	st.accept = func(it leadItem) (bool, bool) {
		if after != nil && !k.x.afterInConf(after, ai, it) {
			return false, true
		}
		if w.minConf != nil && (!it.hasConf || it.conf < *w.minConf) {
			return false, false // confidence only falls from here
		}
		return w.passes(it), true
	}
}

// cursorItem is the item of the cursor c, the zero item for none.
func cursorItem(c *leadRec) leadItem {
	if c == nil {
		return leadItem{}
	}
	return itemOf(c)
}

// confTop is the best `want` leads of a bounded window after `after`, in
// confidence order. It keeps items, not records: a record is read only
// when two items tie on all their fields, and for the leads returned.
func (k *keyLeads) confTop(w leadWindow, after *leadRec, want int) []*leadRec {
	var top []leadItem
	var st leadStream
	k.dateStream(&st, w, nil)
	st.items = true
	defer st.release()
	x := k.x
	ai := cursorItem(after)
	for st.advance() {
		it := st.it
		if after != nil && !x.afterInConf(after, ai, it) {
			continue
		}
		if len(top) == want { // not before the last kept: the fields first, inline
			last := &top[want-1]
			if c := confOrder(it.date, it.hasConf, it.conf, last.date, last.hasConf, last.conf); c > 0 || c == 0 && x.idCmp(it, *last) >= 0 {
				continue
			}
		}
		i := sort.Search(len(top), func(i int) bool { return x.itemConfCmp(it, top[i]) < 0 })
		if len(top) < want {
			top = append(top, leadItem{})
		}
		copy(top[i+1:], top[i:])
		top[i] = it
	}
	out := make([]*leadRec, len(top))
	for i, it := range top {
		out[i] = x.rec(it)
	}
	return out
}
