package resolve

// trie holds the index's terms for prefix and typo-tolerant lookup. Nodes
// live in one slice; a node whose term loses its last posting keeps its
// place (terms are few - about 30k for the national gazetteer - and
// upserts of the same data reuse them).
type trie struct {
	nodes []trieNode
}

type trieNode struct {
	kids []trieEdge // sorted by byte
	term string     // the term ending here, "" when none
	live bool       // the term has postings
}

type trieEdge struct {
	b    byte
	node int32
}

func newTrie() *trie { return &trie{nodes: make([]trieNode, 1, 1024)} }

func (t *trie) child(n int32, b byte) int32 {
	kids := t.nodes[n].kids
	for _, e := range kids {
		if e.b == b {
			return e.node
		}
		if e.b > b {
			break
		}
	}
	return -1
}

// set marks term live or not, creating its path when needed.
func (t *trie) set(term string, live bool) {
	n := int32(0)
	for i := 0; i < len(term); i++ {
		c := t.child(n, term[i])
		if c < 0 {
			if !live {
				return
			}
			c = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{})
			kids := t.nodes[n].kids
			at := len(kids)
			for k, e := range kids {
				if e.b > term[i] {
					at = k
					break
				}
			}
			kids = append(kids, trieEdge{})
			copy(kids[at+1:], kids[at:])
			kids[at] = trieEdge{b: term[i], node: c}
			t.nodes[n].kids = kids
		}
		n = c
	}
	t.nodes[n].term, t.nodes[n].live = term, live
}

// withPrefix calls fn for up to max live terms that start with p and are
// longer than p, in byte order.
func (t *trie) withPrefix(p string, max int, fn func(term string)) {
	n := int32(0)
	for i := 0; i < len(p) && n >= 0; i++ {
		n = t.child(n, p[i])
	}
	if n < 0 {
		return
	}
	count := 0
	var walk func(n int32) bool
	walk = func(n int32) bool {
		for _, e := range t.nodes[n].kids {
			c := &t.nodes[e.node]
			if c.live {
				fn(c.term)
				if count++; count >= max {
					return false
				}
			}
			if !walk(e.node) {
				return false
			}
		}
		return true
	}
	walk(n)
}

// fuzzy calls fn for every live term within k optimal-string-alignment
// edits of q (a transposition of neighbours counts one edit), with the
// distance. It walks the trie carrying one row of the edit-distance table
// per depth, computing only the diagonal band of width 2k+1 (cells off
// the band exceed k), and prunes a branch once neither its row nor its
// parent's (transpositions reach back two rows) can come back under k.
func (t *trie) fuzzy(q string, k int, fn func(term string, d int)) {
	w := len(q) + 1
	f := fuzzyWalk{t: t, q: q, k: k, w: w, fn: fn, rows: make([]int, w*(len(q)+k+2)), mins: make([]int, len(q)+k+2)}
	for j := 0; j < w; j++ {
		f.rows[j] = j
	}
	f.walk(0, 1, 0)
}

type fuzzyWalk struct {
	t    *trie
	q    string
	k, w int
	rows []int // row d at rows[d*w:(d+1)*w]
	mins []int // minimum of row d
	fn   func(string, int)
}

func (f *fuzzyWalk) walk(n int32, depth int, prevByte byte) {
	if depth > len(f.q)+f.k {
		return
	}
	q, k, w := f.q, f.k, f.w
	prev := f.rows[(depth-1)*w : depth*w]
	var pp []int
	if depth >= 2 {
		pp = f.rows[(depth-2)*w : (depth-1)*w]
	}
	prevMin := f.mins[depth-1]
	if depth == 1 {
		prevMin = 0
	}
	lo, hi := max(1, depth-k), min(w-1, depth+k)
	big := k + 1
	for _, e := range f.t.nodes[n].kids {
		cur := f.rows[depth*w : (depth+1)*w]
		cur[0] = depth
		if lo > 1 {
			cur[lo-1] = big
		}
		rowMin := big
		if depth <= k {
			rowMin = depth
		}
		for j := lo; j <= hi; j++ {
			cost := 1
			if q[j-1] == e.b {
				cost = 0
			}
			v := prev[j-1] + cost
			if a := prev[j] + 1; a < v && j < depth+k {
				v = a
			}
			if a := cur[j-1] + 1; a < v {
				v = a
			}
			if pp != nil && j >= 2 && q[j-1] == prevByte && q[j-2] == e.b {
				if a := pp[j-2] + 1; a < v {
					v = a
				}
			}
			if v > big {
				v = big
			}
			cur[j] = v
			if v < rowMin {
				rowMin = v
			}
		}
		if hi < w-1 {
			cur[hi+1] = big
		}
		c := &f.t.nodes[e.node]
		if c.live && hi == w-1 && cur[w-1] <= k {
			f.fn(c.term, cur[w-1])
		}
		if rowMin <= k || prevMin+1 <= k {
			f.mins[depth] = rowMin
			f.walk(e.node, depth+1, e.b)
		}
	}
}

// osa is the optimal-string-alignment distance of a and b, or k+1 when it
// exceeds k.
func osa(a, b string, k int) int {
	if d := len(a) - len(b); d > k || -d > k {
		return k + 1
	}
	w := len(b) + 1
	buf := make([]int, 3*w)
	pp, prev, cur := buf[:w], buf[w:2*w], buf[2*w:]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j < w; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i >= 2 && j >= 2 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, pp[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > k && i >= 2 {
			// OSA may still come back by one transposition from pp; only
			// stop when both rows are over.
			ppMin := pp[0]
			for _, v := range prev {
				ppMin = min(ppMin, v)
			}
			if ppMin+1 > k {
				return k + 1
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	if prev[w-1] > k {
		return k + 1
	}
	return prev[w-1]
}
