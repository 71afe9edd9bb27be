package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// leadTreeModel drives a leadTree and a sorted slice with the same
// operations and compares them, with the tree's structure checked
// after each step.
type leadTreeModel struct {
	t      *testing.T
	x      *leadIndex
	rng    *rand.Rand
	tree   *leadTree
	model  []leadItem
	byConf bool
	n      int // ids made
}

func newLeadTreeModel(t *testing.T, seed uint64, byConf bool) *leadTreeModel {
	m := &leadTreeModel{t: t, x: newLeadIndex(), rng: rand.New(rand.NewPCG(seed, 85)), byConf: byConf}
	m.tree = newLeadTree(m.x, byConf)
	return m
}

func (m *leadTreeModel) cmp(a, b leadItem) int {
	if m.byConf {
		return m.x.itemConfCmp(a, b)
	}
	return m.x.itemDateCmp(a, b)
}

// rec places a new record: few dates and confidences, so that items tie
// on their search keys, and ids that often share their abbreviation, so
// that comparisons read records by slot.
func (m *leadTreeModel) rec() *leadRec {
	r := m.x.placed()
	slot := r.slot
	*r = leadRec{slot: slot, date: int32(m.rng.IntN(6)), hasConf: m.rng.IntN(5) > 0}
	switch m.rng.IntN(12) {
	case 0:
		r.date = noDate
	case 1:
		r.date = math.MaxInt32
	case 2:
		r.date = -5
	}
	if r.hasConf {
		r.conf = float64(m.rng.IntN(5)) / 4
		if m.rng.IntN(10) == 0 {
			r.conf = math.Copysign(0, -1)
		}
		if m.rng.IntN(10) == 0 {
			r.conf = 0.5 + 1e-12 // ties 0.5 in the date order's key
		}
	}
	m.n++
	switch m.rng.IntN(3) {
	case 0:
		r.lead.LeadID = fmt.Sprintf("lead_abcdefgh%06d", m.n)
	case 1:
		r.lead.LeadID = fmt.Sprintf("lead_%08x", m.rng.Uint32())
	default: // after the prefix "lead_"
		r.lead.LeadID = fmt.Sprintf("x%d", m.n)
	}
	return r
}

func (m *leadTreeModel) pos(it leadItem) (int, bool) {
	return slices.BinarySearchFunc(m.model, it, m.cmp)
}

func (m *leadTreeModel) add() {
	it := itemOf(m.rec())
	m.tree.Set(it)
	i, found := m.pos(it)
	if found {
		m.t.Fatalf("a new item %+v equals one held", it)
	}
	m.model = slices.Insert(m.model, i, it)
}

// remove takes a random item out, and drops its record, so that its
// slot is reused by the next record placed.
func (m *leadTreeModel) remove() {
	if len(m.model) == 0 {
		return
	}
	i := m.rng.IntN(len(m.model))
	it := m.model[i]
	m.tree.Delete(it)
	m.model = slices.Delete(m.model, i, i+1)
	m.x.drop(m.x.recs[it.slot])
}

// replace sets an item already held again.
func (m *leadTreeModel) replace() {
	if len(m.model) == 0 {
		return
	}
	m.tree.Set(m.model[m.rng.IntN(len(m.model))])
}

func (m *leadTreeModel) check(step string) {
	t := m.t
	t.Helper()
	var got []leadItem
	m.tree.Scan(func(it leadItem) bool { got = append(got, it); return true })
	if !slices.Equal(got, m.model) {
		t.Fatalf("%s: the tree holds %d items, the model %d, or in another order", step, len(got), len(m.model))
	}
	if m.tree.Len() != len(m.model) {
		t.Fatalf("%s: Len %d, want %d", step, m.tree.Len(), len(m.model))
	}
	m.checkNodes(step)
	// Seeks: to every held item and to seek keys of new records, from
	// the model's lower bound to the end.
	for range 8 {
		var key leadItem
		if len(m.model) > 0 && m.rng.IntN(2) == 0 {
			key = m.model[m.rng.IntN(len(m.model))]
		} else {
			// A seek key comes before every item it ties with on its
			// fields (idCmp), which is one place in the order when its
			// id has events.LeadID's prefix and the other ids sort
			// after that prefix ("x…"), as here.
			r := m.rec()
			r.lead.LeadID = fmt.Sprintf("lead_abcdefg%d", m.rng.IntN(30))
			key = seekItem(r)
			m.x.drop(r)
		}
		i, _ := m.pos(key)
		it := m.tree.Iter()
		ok := it.Seek(key)
		for j := i; j < len(m.model); j++ {
			if !ok || it.Item() != m.model[j] {
				t.Fatalf("%s: seek to %+v: place %d of %d is not the model's", step, key, j-i, len(m.model)-i)
			}
			ok = it.Next()
		}
		if ok {
			t.Fatalf("%s: seek to %+v yields more than the model", step, key)
		}
		it.Release()
	}
}

// checkNodes checks each node's keys, order, separators, fill and the
// leaves' links.
func (m *leadTreeModel) checkNodes(step string) {
	t := m.t
	tr := m.tree
	if tr.root == nil {
		return
	}
	var leaves []*leadNode
	var walk func(n *leadNode, lo, hi *leadItem, root bool, depth int) int
	walk = func(n *leadNode, lo, hi *leadItem, root bool, depth int) int {
		if len(n.keys) != len(n.items) {
			t.Fatalf("%s: %d keys for %d items", step, len(n.keys), len(n.items))
		}
		for i, it := range n.items {
			if n.keys[i] != tr.prefix(it) {
				t.Fatalf("%s: a key is not its item's", step)
			}
			if i > 0 && m.cmp(n.items[i-1], it) >= 0 {
				t.Fatalf("%s: a node's items out of order", step)
			}
			if lo != nil && m.cmp(it, *lo) < 0 || hi != nil && m.cmp(it, *hi) >= 0 {
				t.Fatalf("%s: an item outside its separators", step)
			}
			if m.x.recs[it.slot] == nil {
				t.Fatalf("%s: an item (a separator?) names a dropped record's slot %d", step, it.slot)
			}
		}
		if n.kids == nil {
			if !root && len(n.items) == 0 {
				t.Fatalf("%s: an empty leaf below the root", step)
			}
			if len(n.items) > leafMax {
				t.Fatalf("%s: a leaf of %d items", step, len(n.items))
			}
			leaves = append(leaves, n)
			return depth
		}
		if len(n.kids) != len(n.items)+1 || len(n.kids) < 2 || len(n.kids) > innerMax {
			t.Fatalf("%s: an inner node of %d children and %d separators", step, len(n.kids), len(n.items))
		}
		d := -1
		for i, c := range n.kids {
			clo, chi := lo, hi
			if i > 0 {
				clo = &n.items[i-1]
			}
			if i < len(n.items) {
				chi = &n.items[i]
			}
			if cd := walk(c, clo, chi, false, depth+1); d >= 0 && cd != d {
				t.Fatalf("%s: leaves at depths %d and %d", step, d, cd)
			} else {
				d = cd
			}
		}
		return d
	}
	walk(tr.root, nil, nil, true, 0)
	for i, l := range leaves {
		var prev, next *leadNode
		if i > 0 {
			prev = leaves[i-1]
		}
		if i+1 < len(leaves) {
			next = leaves[i+1]
		}
		if l.prev != prev || l.next != next {
			t.Fatalf("%s: leaf %d of %d is linked out of order", step, i, len(leaves))
		}
	}
}

// TestLeadTreeMatchesSortedSlice runs random inserts, replaces and
// removes (each removed record's slot reused at once) through a tree of
// each order and a sorted slice, growing the trees to several levels
// and shrinking them to empty.
func TestLeadTreeMatchesSortedSlice(t *testing.T) {
	for _, byConf := range []bool{false, true} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("conf=%v/seed=%d", byConf, seed), func(t *testing.T) {
				m := newLeadTreeModel(t, seed, byConf)
				for phase, size := range []int{40, 3000, 300, 9000, 0} {
					for step := 0; len(m.model) != size || step < 400; step++ {
						switch r := m.rng.IntN(10); {
						case len(m.model) < size && r < 7 || len(m.model) >= size && r < 3:
							m.add()
						case r == 9:
							m.replace()
						default:
							m.remove()
						}
						if step%97 == 0 {
							m.check(fmt.Sprintf("phase %d step %d", phase, step))
						}
						if step > 100000 {
							t.Fatalf("phase %d did not reach %d items", phase, size)
						}
					}
					m.check(fmt.Sprintf("end of phase %d", phase))
				}
			})
		}
	}
}

// TestLeadTreeLoad builds trees from sorted items at the sizes where
// leaves and levels fill, then writes to them.
func TestLeadTreeLoad(t *testing.T) {
	for _, byConf := range []bool{false, true} {
		for _, n := range []int{0, 1, leafMax - 1, leafMax, leafMax + 1, 2 * leafMax, leafMax * innerMax, leafMax*innerMax + 1, leafMax*innerMax + leafMax + 1, 3 * leafMax * innerMax} {
			t.Run(fmt.Sprintf("conf=%v/n=%d", byConf, n), func(t *testing.T) {
				m := newLeadTreeModel(t, uint64(n), byConf)
				for range n {
					m.model = append(m.model, itemOf(m.rec()))
				}
				slices.SortFunc(m.model, m.cmp)
				m.tree.load(slices.Clone(m.model))
				m.check("loaded")
				for step := range 2000 {
					if m.rng.IntN(2) == 0 {
						m.add()
					} else {
						m.remove()
					}
					if step%251 == 0 {
						m.check(fmt.Sprintf("step %d", step))
					}
				}
				m.check("end")
			})
		}
	}
}

// TestLeadTreePrefixOrders checks that the search keys never order two
// items against the tree's order: on confidences whose keys' upper
// halves tie, -0,
// null, infinities and the dates at the ends of their range.
func TestLeadTreePrefixOrders(t *testing.T) {
	x := newLeadIndex()
	confs := []float64{math.Inf(-1), -1, math.Copysign(0, -1), 0, 1e-300, 0.25, 0.5, 0.5 + 1e-12, 0.5 - 1e-12, math.Nextafter(0.5, 1), 1, math.Inf(1)}
	dates := []int32{noDate, math.MinInt32 + 1, -1, 0, 1, 20000, math.MaxInt32}
	var items []leadItem
	for _, d := range dates {
		for _, c := range confs {
			items = append(items, leadItem{date: d, hasConf: true, conf: c, lp: true, abbr: 1})
		}
		items = append(items, leadItem{date: d, lp: true, abbr: 1})
	}
	for _, byConf := range []bool{false, true} {
		cmp := x.itemDateCmp
		if byConf {
			cmp = x.itemConfCmp
		}
		tr := newLeadTree(x, byConf)
		for _, a := range items {
			for _, b := range items {
				pa, pb := tr.prefix(a), tr.prefix(b)
				c := cmp(a, b)
				if pa < pb && c >= 0 || pa > pb && c <= 0 {
					t.Fatalf("conf order %v: keys %x, %x order %+v and %+v against their order %d", byConf, pa, pb, a, b, c)
				}
			}
		}
	}
}

// TestLeadTreeEndsFillLeaves writes items that each arrive at the
// tree's front (a date tree's newest) or at its end: the leaves left
// behind are full, not half full, and the tree is as the model.
func TestLeadTreeEndsFillLeaves(t *testing.T) {
	for _, front := range []bool{true, false} {
		t.Run(fmt.Sprintf("front=%v", front), func(t *testing.T) {
			m := newLeadTreeModel(t, 5, false)
			var items []leadItem
			for range 10_000 {
				items = append(items, itemOf(m.rec()))
			}
			slices.SortFunc(items, m.cmp)
			if front {
				slices.Reverse(items)
			}
			for i, it := range items {
				m.tree.Set(it)
				if front {
					m.model = slices.Insert(m.model, 0, it)
				} else {
					m.model = append(m.model, it)
				}
				if i%997 == 0 {
					m.check(fmt.Sprintf("item %d", i))
				}
			}
			m.check("end")
			n := m.tree.root
			for n.kids != nil {
				n = n.kids[0]
			}
			leaves := 0
			for ; n != nil; n = n.next {
				leaves++
			}
			if want := len(items)/leafMax + 2; leaves > want {
				t.Fatalf("%d leaves for %d items: want at most %d", leaves, len(items), want)
			}
		})
	}
}

// Scan calls fn (the tests' walk of a tree) with every item in order until it returns false.
func (t *leadTree) Scan(fn func(leadItem) bool) {
	it := t.Iter()
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Item()) {
			return
		}
	}
}
