package memory

// mergeHeap is the binary min-heap of a k-way merge (lead pages, geo
// signal pages): the streams that still have an item, ordered by less
// over their current items. The next item is h[0]'s; after that stream
// advances, fix; when it has ended, pop.
type mergeHeap[S any] struct {
	h    []S
	less func(a, b S) bool
}

func (m *mergeHeap[S]) push(st S) {
	m.h = append(m.h, st)
	for i := len(m.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !m.less(m.h[i], m.h[p]) {
			break
		}
		m.h[i], m.h[p] = m.h[p], m.h[i]
		i = p
	}
}

func (m *mergeHeap[S]) pop() {
	n := len(m.h) - 1
	m.h[0] = m.h[n]
	m.h = m.h[:n]
	m.fix()
}

// fix restores the heap after the top stream's item changed.
func (m *mergeHeap[S]) fix() {
	h := m.h
	for i := 0; ; {
		l, r, least := 2*i+1, 2*i+2, i
		if l < len(h) && m.less(h[l], h[least]) {
			least = l
		}
		if r < len(h) && m.less(h[r], h[least]) {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
