package memory

import (
	"slices"
	"sync"

	"github.com/permitd/permitd/internal/spareprocs"
	"github.com/permitd/permitd/readmodel"
)

// table holds the versioned documents of one kind. A delete leaves a
// tombstone carrying its version, so an older upsert that arrives later
// (replay, reordering) stays deleted. Not safe for concurrent use: a
// side is written by one writer while no reader reads it (store.go).
type table[T any] struct {
	rows    map[string]*row[T]
	live    int
	made    int // rows ever created: len(rows) less means one overwrote another (duplicated)
	touched int // rows the staged lookups found (touch: counted, so that they are made)
	// spare rows, allocated together and taken one at a time: a row is
	// never freed (a delete leaves a tombstone), so a block of them holds
	// nothing that would have gone, and a document's insert costs no
	// allocation of its own (one of an ingested event's 18).
	spare []row[T]
}

// A table's blocks of rows grow with it, from rowBlockMin to rowBlockMax
// rows: a small table (most tests make several) wastes little.
const (
	rowBlockMin = 8
	rowBlockMax = 256
)

// newRow takes a zero row from the spare block.
func (t *table[T]) newRow() *row[T] {
	return fromBlock(&t.spare, rowBlockMin, rowBlockMax, t.made)
}

// fromBlock takes a zero value from *spare, which it first refills with
// a new block when empty: grown with made (the values made so far),
// from lo to hi values. The table's rows and the lead index's records
// and keys come from blocks.
func fromBlock[V any](spare *[]V, lo, hi, made int) *V {
	if len(*spare) == 0 {
		*spare = make([]V, min(hi, max(lo, made)))
	}
	v := &(*spare)[0]
	*spare = (*spare)[1:]
	return v
}

type row[T any] struct {
	version int64
	deleted bool
	doc     T
}

func newTable[T any]() *table[T] {
	return &table[T]{rows: make(map[string]*row[T])}
}

// put stores doc at version when it is newer than what is stored. It
// returns the previous live document (if any) and whether the write took.
func (t *table[T]) put(id string, version int64, doc T) (prev T, hadPrev, ok bool) {
	r, exists := t.rows[id]
	if exists && version <= r.version {
		return prev, false, false
	}
	if !exists {
		t.insert(id, version, doc)
		return prev, false, true
	}
	if r.deleted {
		t.live++
	} else {
		prev, hadPrev = r.doc, true
	}
	r.version, r.deleted, r.doc = version, false, doc
	return prev, hadPrev, true
}

// insert stores doc at version under id, which the table does not hold
// (the caller has looked: put would look again).
func (t *table[T]) insert(id string, version int64, doc T) {
	r := t.newRow()
	r.version, r.doc = version, doc
	t.rows[id] = r
	t.live++
	t.made++
}

// touchRun looks up, when the i-th of a batch of n documents begins a
// run (stagedRun), the rows of that run's ids (id(j), j from i) before
// the writes use them, so that their waits for memory overlap.
func (t *table[T]) touchRun(i, n int, id func(j int) string) {
	if i%stagedRun != 0 {
		return
	}
	var found int
	for j := i; j < min(i+stagedRun, n); j++ {
		if t.rows[id(j)] != nil {
			found++
		}
	}
	t.touched += found
}

// has reports whether the table holds a row (live or a tombstone) for id.
func (t *table[T]) has(id string) bool {
	_, ok := t.rows[id]
	return ok
}

// duplicated reports whether an insert has overwritten a row: one given
// an id the table held (an Import of unique documents inserts without
// looking first, and checks this once at the end).
func (t *table[T]) duplicated() bool { return len(t.rows) != t.made }

// del tombstones id at version when it is newer than what is stored, or
// of the same version as the live document stored
// (readmodel.DeleteTakes). It returns the removed live document (if
// any) and whether the delete took.
func (t *table[T]) del(id string, version int64) (prev T, hadPrev, ok bool) {
	r, exists := t.rows[id]
	if exists && !readmodel.DeleteTakes(version, r.version, r.deleted) {
		return prev, false, false
	}
	var zero T
	if !exists {
		r := t.newRow()
		r.version, r.deleted = version, true
		t.rows[id] = r
		t.made++
		return prev, false, true
	}
	if !r.deleted {
		prev, hadPrev = r.doc, true
		t.live--
	}
	r.version, r.deleted, r.doc = version, true, zero
	return prev, hadPrev, true
}

// get returns the live document stored under id.
func (t *table[T]) get(id string) (T, bool) {
	r, ok := t.rows[id]
	if !ok || r.deleted {
		var zero T
		return zero, false
	}
	return r.doc, true
}

// each calls fn for every live document, in no particular order.
func (t *table[T]) each(fn func(id string, version int64, doc T)) {
	for id, r := range t.rows {
		if !r.deleted {
			fn(id, r.version, r.doc)
		}
	}
}

// sortByLess sorts xs by less, a strict weak order.
func sortByLess[T any](xs []T, less func(a, b T) bool) {
	slices.SortFunc(xs, cmpByLess(less))
}

// cmpByLess is the comparison of less, a strict weak order.
func cmpByLess[T any](less func(a, b T) bool) func(a, b T) int {
	return func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	}
}

// workersFor is how many goroutines share n independent pieces of work:
// one below from pieces, else up to four (GOMAXPROCS, without the spare
// Ps a build runs with: spareprocs.Workers).
func workersFor(n, from int) int {
	if n < from {
		return 1
	}
	return min(spareprocs.Workers(), 4)
}

// shareOut calls fn(w, i) once for every i < n, worker w (of workers
// goroutines) taking every workers-th i from w, and returns when all
// have.
func shareOut(workers, n int, fn func(w, i int)) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				fn(w, i)
			}
		})
	}
	wg.Wait()
}
