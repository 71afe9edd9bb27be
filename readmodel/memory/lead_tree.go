// Lead trees: a key's leads in date or confidence order, a B+ tree of
// fixed-size leaves whose search keys sit in an array of their own.

package memory

import (
	"math"
	"slices"
)

// leadTree holds one key's items in one order (itemDateCmp or
// itemConfCmp). It replaces the B-tree library for the keys' trees, for
// two measured costs on the live path (docs/kafka-history.md,
// "Eighty-fourth session"):
//
//   - the library leaves both halves of a split node at their full
//     length in a slice of that length, so the next insert into either
//     copies it into a new array: 6% of a live serve's samples were the
//     first touch of those copies. Here a split leaf's halves each get a
//     leaf of full capacity, and an insert into a leaf never allocates
//     once it is full size;
//   - a search compares whole items through the order's function. Here
//     each node keeps beside its items an array of uint64 search keys
//     (prefix), ordered as the items are but coarser: a search compares
//     keys, and calls the order's function only where they tie.
//
// Only the side's writer changes a tree, and readers read it only while
// no writer is on their side (store.go), so a tree has no lock.
type leadTree struct {
	root   *leadNode
	count  int
	x      *leadIndex // whose records the items name
	byConf bool       // itemConfCmp's order, else itemDateCmp's
}

// Node sizes: a full leaf holds leafMax items, an inner node innerMax
// children. A node under a quarter full after a remove is merged with a
// neighbour or takes items from it (rebalance).
const (
	leafMax  = 64
	innerMax = 64
)

// leadNode is a leaf (kids nil) or an inner node. A leaf's keys and
// items are its items and their search keys; an inner node's are its
// separators: items[i] is above every item of kids[i] and at most every
// item of kids[i+1]. A separator is always a copy of an item the tree
// holds (set, delete).
type leadNode struct {
	keys       []uint64
	items      []leadItem
	kids       []*leadNode
	next, prev *leadNode // leaves in order
}

// newLeadTree returns an empty tree of x's items, in confidence order
// when byConf is set, else in date order.
func newLeadTree(x *leadIndex, byConf bool) *leadTree {
	return &leadTree{x: x, byConf: byConf}
}

// cmp is the tree's order.
func (t *leadTree) cmp(a, b leadItem) int {
	if t.byConf {
		return t.x.itemConfCmp(a, b)
	}
	return t.x.itemDateCmp(a, b)
}

// prefix is it's search key: when prefix(a) < prefix(b), cmp(a, b) < 0.
// The date order's key is the date descending and then the upper half
// of the confidence's key; the confidence order's is the confidence
// descending with null last. -0 is 0, as the orders' comparisons have
// it.
func (t *leadTree) prefix(it leadItem) uint64 {
	if t.byConf {
		if !it.hasConf {
			return math.MaxUint64
		}
		return confKey(it.conf)
	}
	dk := uint64(int64(math.MaxInt32) - int64(it.date))
	ck := uint64(math.MaxUint32)
	if it.hasConf {
		ck = confKey(it.conf) >> 32 // coarser, in the same order
	}
	return dk<<32 | ck
}

// confKey orders confidences descending, below MaxUint64 (null).
func confKey(c float64) uint64 {
	if c == 0 {
		c = 0 // -0
	}
	u := math.Float64bits(c)
	if u>>63 == 0 {
		u |= 1 << 63
	} else {
		u = ^u
	}
	k := ^u
	if k == math.MaxUint64 { // a NaN's: never a validated lead's
		k--
	}
	return k
}

// Len is the number of items.
func (t *leadTree) Len() int { return t.count }

// search returns the first position in n of an item at or after x (pk
// its key), and whether the item there equals x.
func (t *leadTree) search(n *leadNode, x leadItem, pk uint64) (int, bool) {
	keys := n.keys
	lo, hi := 0, len(keys)
	eq := false
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		c := 0
		switch k := keys[h]; {
		case k < pk:
			c = -1
		case k > pk:
			c = 1
		default:
			c = t.cmp(n.items[h], x)
		}
		if c < 0 {
			lo = h + 1
		} else {
			hi = h
			eq = c == 0
		}
	}
	return lo, eq && lo < len(keys)
}

// child returns the index of the child of inner node n that holds x:
// after every separator at or before x.
func (t *leadTree) child(n *leadNode, x leadItem, pk uint64) int {
	i, eq := t.search(n, x, pk)
	if eq {
		i++
	}
	return i
}

// Set puts it in the tree, in place of an item equal to it.
func (t *leadTree) Set(it leadItem) {
	pk := t.prefix(it)
	if t.root == nil {
		t.root = &leadNode{keys: make([]uint64, 0, 1), items: make([]leadItem, 0, 1)}
	}
	var sp leadSplit
	if !t.set(t.root, it, pk, &sp) {
		t.count++
	}
	if sp.right != nil {
		t.root = &leadNode{
			keys:  append(make([]uint64, 0, innerMax), sp.key),
			items: append(make([]leadItem, 0, innerMax), sp.sep),
			kids:  append(make([]*leadNode, 0, innerMax+1), t.root, sp.right),
		}
	}
}

// leadSplit is what set hands up: the node a split made (nil for none)
// and the separator before it, or the item replaced.
type leadSplit struct {
	right *leadNode
	sep   leadItem
	key   uint64
	old   leadItem
}

// set puts it in the subtree n, reporting whether it replaced an item
// (sp.old). When n splits, sp holds the new right node and its
// separator.
//
// A separator is a copy of an item, and comparing one may read its
// record by slot (idCmp): so a separator never outlives its item's
// place in the tree, or a reused slot would move it. An item replaced
// is replaced in the separator that copies it, and a removed one's
// separator takes the next item (delete).
func (t *leadTree) set(n *leadNode, it leadItem, pk uint64, sp *leadSplit) (replaced bool) {
	if n.kids == nil {
		i, eq := t.search(n, it, pk)
		if eq {
			sp.old, n.items[i] = n.items[i], it
			return true
		}
		if len(n.items) < leafMax {
			if len(n.items) == cap(n.items) { // a small root leaf grows
				c := min(2*cap(n.items), leafMax)
				n.keys = append(make([]uint64, 0, c), n.keys...)
				n.items = append(make([]leadItem, 0, c), n.items...)
			}
			leafInsert(n, i, pk, it)
			return false
		}
		// A full leaf splits in halves, but at the tree's two ends the
		// new item goes alone into a leaf of its own, and the full one
		// stays full: leads that keep arriving at one end (a date
		// tree's front: the newest dates) leave full leaves behind.
		m := len(n.items) / 2
		switch {
		case i == 0 && n.prev == nil:
			m = 0
		case i == len(n.items) && n.next == nil:
			m = len(n.items)
		}
		right := t.splitLeaf(n, m)
		if i < m || i == m && m < leafMax {
			leafInsert(n, i, pk, it)
		} else {
			leafInsert(right, i-m, pk, it)
		}
		sp.right, sp.sep, sp.key = right, right.items[0], right.keys[0]
		return false
	}
	i := t.child(n, it, pk)
	if t.set(n.kids[i], it, pk, sp) {
		if i > 0 && n.items[i-1] == sp.old {
			n.items[i-1] = it
		}
		return true
	}
	if sp.right == nil {
		return false
	}
	n.keys = insertAt(n.keys, i, sp.key)
	n.items = insertAt(n.items, i, sp.sep)
	n.kids = insertAt(n.kids, i+1, sp.right)
	sp.right = nil
	if len(n.kids) <= innerMax {
		return false
	}
	// Split the inner node: the middle separator moves up.
	m := len(n.kids) / 2
	right := &leadNode{
		keys:  append(make([]uint64, 0, innerMax), n.keys[m:]...),
		items: append(make([]leadItem, 0, innerMax), n.items[m:]...),
		kids:  append(make([]*leadNode, 0, innerMax+1), n.kids[m:]...),
	}
	sp.right, sp.sep, sp.key = right, n.items[m-1], n.keys[m-1]
	clear(n.kids[m:])
	clear(n.items[m-1:])
	n.keys, n.items, n.kids = n.keys[:m-1], n.items[:m-1], n.kids[:m]
	return false
}

// splitLeaf moves the items of the full leaf n from place m on to a new
// leaf after it, and returns that leaf. Both have room for leafMax
// items.
func (t *leadTree) splitLeaf(n *leadNode, m int) *leadNode {
	if cap(n.items) < leafMax {
		n.keys = append(make([]uint64, 0, leafMax), n.keys...)
		n.items = append(make([]leadItem, 0, leafMax), n.items...)
	}
	right := newLeaf()
	right.keys = append(right.keys, n.keys[m:]...)
	right.items = append(right.items, n.items[m:]...)
	n.keys, n.items = n.keys[:m], n.items[:m]
	right.prev, right.next = n, n.next
	if n.next != nil {
		n.next.prev = right
	}
	n.next = right
	return right
}

// leafBlock is a full-size leaf's storage, allocated at once.
type leafBlock struct {
	node  leadNode
	keys  [leafMax]uint64
	items [leafMax]leadItem
}

func newLeaf() *leadNode {
	b := new(leafBlock)
	b.node.keys, b.node.items = b.keys[:0], b.items[:0]
	return &b.node
}

// leafInsert puts item it (key pk) at position i of leaf n, which has
// room.
func leafInsert(n *leadNode, i int, pk uint64, it leadItem) {
	n.keys = insertAt(n.keys, i, pk)
	n.items = insertAt(n.items, i, it)
}

// Delete takes out the item equal to it, if there is one.
func (t *leadTree) Delete(it leadItem) {
	if t.root == nil {
		return
	}
	var old leadItem
	if !t.delete(t.root, it, t.prefix(it), &old) {
		return
	}
	t.count--
	for t.root.kids != nil && len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
	}
}

// delete takes it out of the subtree n, reporting whether it was there
// (old: the item taken out).
func (t *leadTree) delete(n *leadNode, it leadItem, pk uint64, old *leadItem) bool {
	if n.kids == nil {
		i, eq := t.search(n, it, pk)
		if !eq {
			return false
		}
		*old = n.items[i]
		n.keys = slices.Delete(n.keys, i, i+1)
		n.items = slices.Delete(n.items, i, i+1)
		return true
	}
	i := t.child(n, it, pk)
	c := n.kids[i]
	if !t.delete(c, it, pk, old) {
		return false
	}
	// The separator that copied the item names c's new least one (an
	// empty leaf's goes with it, in the merge below).
	if i > 0 && n.items[i-1] == *old && c.size() > 0 {
		f := first(c)
		n.items[i-1], n.keys[i-1] = f, t.prefix(f)
	}
	t.rebalance(n, i)
	return true
}

// size is a node's fill: items for a leaf, children for an inner node.
func (n *leadNode) size() int {
	if n.kids == nil {
		return len(n.items)
	}
	return len(n.kids)
}

// rebalance mends n's child i after a remove from it: under a quarter
// full, it is merged with a neighbour when the two fit in one node, and
// otherwise takes items from the neighbour until the two hold as many.
func (t *leadTree) rebalance(n *leadNode, i int) {
	c := n.kids[i]
	limit := leafMax
	if c.kids != nil {
		limit = innerMax
	}
	if c.size() >= limit/4 || len(n.kids) < 2 {
		return
	}
	l := i - 1 // the pair (l, l+1)
	if i == 0 {
		l = 0
	}
	a, b := n.kids[l], n.kids[l+1]
	if a.size()+b.size() <= limit {
		t.merge(n, l)
		return
	}
	t.even(n, l)
}

// merge moves every item of n's child l+1 into child l and drops it.
func (t *leadTree) merge(n *leadNode, l int) {
	a, b := n.kids[l], n.kids[l+1]
	if a.kids == nil {
		a.keys = append(a.keys, b.keys...)
		a.items = append(a.items, b.items...)
		a.next = b.next
		if b.next != nil {
			b.next.prev = a
		}
	} else {
		a.keys = append(append(a.keys, n.keys[l]), b.keys...)
		a.items = append(append(a.items, n.items[l]), b.items...)
		a.kids = append(a.kids, b.kids...)
	}
	n.keys = slices.Delete(n.keys, l, l+1)
	n.items = slices.Delete(n.items, l, l+1)
	n.kids = slices.Delete(n.kids, l+1, l+2)
}

// even shares the items of n's children l and l+1 out evenly between
// them, updating the separator between them.
func (t *leadTree) even(n *leadNode, l int) {
	a, b := n.kids[l], n.kids[l+1]
	total := a.size() + b.size()
	want := total / 2 // a's share
	if a.kids == nil {
		if len(a.items) < want { // b's first items move to a's end
			k := want - len(a.items)
			a.keys = append(a.keys, b.keys[:k]...)
			a.items = append(a.items, b.items[:k]...)
			b.keys = slices.Delete(b.keys, 0, k)
			b.items = slices.Delete(b.items, 0, k)
		} else { // a's last items move to b's front
			b.keys = slices.Insert(b.keys, 0, a.keys[want:]...)
			b.items = slices.Insert(b.items, 0, a.items[want:]...)
			clear(a.items[want:])
			a.keys, a.items = a.keys[:want], a.items[:want]
		}
		n.keys[l], n.items[l] = b.keys[0], b.items[0]
		return
	}
	// Inner children: through the separator between them.
	keys := append(append(append([]uint64(nil), a.keys...), n.keys[l]), b.keys...)
	items := append(append(append([]leadItem(nil), a.items...), n.items[l]), b.items...)
	kids := append(append([]*leadNode(nil), a.kids...), b.kids...)
	// a takes want children and the want-1 separators between them; the
	// next separator moves up; b takes the rest.
	a.keys = append(a.keys[:0], keys[:want-1]...)
	a.items = append(a.items[:0], items[:want-1]...)
	a.kids = append(a.kids[:0], kids[:want]...)
	clear(a.kids[len(a.kids):cap(a.kids)])
	n.keys[l], n.items[l] = keys[want-1], items[want-1]
	b.keys = append(b.keys[:0], keys[want:]...)
	b.items = append(b.items[:0], items[want:]...)
	b.kids = append(b.kids[:0], kids[want:]...)
	clear(b.kids[len(b.kids):cap(b.kids)])
}

// load builds the tree, empty, from items sorted in its order with no
// two equal: full leaves, then the levels above them.
func (t *leadTree) load(items []leadItem) {
	t.root, t.count = nil, len(items)
	if len(items) == 0 {
		return
	}
	if len(items) <= leafMax {
		n := &leadNode{keys: make([]uint64, len(items)), items: append([]leadItem(nil), items...)}
		for i, it := range items {
			n.keys[i] = t.prefix(it)
		}
		t.root = n
		return
	}
	var level []*leadNode
	var prev *leadNode
	for len(items) > 0 {
		k := min(len(items), leafMax)
		n := newLeaf()
		for _, it := range items[:k] {
			n.keys = append(n.keys, t.prefix(it))
		}
		n.items = append(n.items, items[:k]...)
		items = items[k:]
		n.prev = prev
		if prev != nil {
			prev.next = n
		}
		prev = n
		level = append(level, n)
	}
	for len(level) > 1 {
		var up []*leadNode
		for len(level) > 0 {
			k := min(len(level), innerMax)
			if rest := len(level) - k; rest > 0 && rest < 2 {
				k-- // no inner node of one child
			}
			n := &leadNode{
				keys:  make([]uint64, 0, innerMax),
				items: make([]leadItem, 0, innerMax),
				kids:  append(make([]*leadNode, 0, innerMax+1), level[:k]...),
			}
			for _, c := range level[1:k] {
				f := first(c)
				n.keys = append(n.keys, t.prefix(f))
				n.items = append(n.items, f)
			}
			level = level[k:]
			up = append(up, n)
		}
		level = up
	}
	t.root = level[0]
}

// first is the least item of the subtree n, which holds one.
func first(n *leadNode) leadItem {
	for n.kids != nil {
		n = n.kids[0]
	}
	return n.items[0]
}

// Iter returns an iterator over the tree, not positioned.
func (t *leadTree) Iter() leadIter { return leadIter{t: t} }

// leadIter walks a tree's leaves in order. The tree must not change
// while it is in use.
type leadIter struct {
	t    *leadTree
	leaf *leadNode
	pos  int
}

// First moves to the least item; false when there is none.
func (it *leadIter) First() bool {
	n := it.t.root
	if n == nil {
		return false
	}
	for n.kids != nil {
		n = n.kids[0]
	}
	it.leaf, it.pos = n, 0
	return it.settle()
}

// Seek moves to the first item at or after x; false when there is none.
func (it *leadIter) Seek(x leadItem) bool {
	t := it.t
	n := t.root
	if n == nil {
		return false
	}
	pk := t.prefix(x)
	for n.kids != nil {
		n = n.kids[t.child(n, x, pk)]
	}
	it.leaf = n
	it.pos, _ = t.search(n, x, pk)
	return it.settle()
}

// Next moves to the next item; false at the end. The iterator must be
// positioned (First, Seek).
func (it *leadIter) Next() bool {
	it.pos++
	return it.settle()
}

// settle moves past the ends of leaves to the next item.
func (it *leadIter) settle() bool {
	for it.pos >= len(it.leaf.items) {
		if it.leaf.next == nil {
			return false
		}
		it.leaf, it.pos = it.leaf.next, 0
	}
	return true
}

// Item is the item the iterator is at.
func (it *leadIter) Item() leadItem { return it.leaf.items[it.pos] }

// Release ends the iterator's use (it holds nothing to give back).
func (it *leadIter) Release() { it.leaf = nil }
