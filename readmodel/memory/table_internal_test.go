package memory

import (
	"fmt"
	"testing"
)

// TestTableRowsFromBlocks writes a table past several blocks of rows,
// with inserts, replacements, deletes of held and unknown ids and stale
// versions, and holds every row to a plain map of what was written: a
// row handed out twice would show as one id's document under another.
func TestTableRowsFromBlocks(t *testing.T) {
	type want struct {
		version int64
		deleted bool
		doc     int
	}
	tbl := newTable[int]()
	model := map[string]want{}
	const n = 3 * rowBlockMax
	for i := range n {
		id := fmt.Sprint("id", i)
		switch i % 4 {
		case 0, 1:
			tbl.put(id, 1, i)
			model[id] = want{version: 1, doc: i}
		case 2: // a delete of an id never written: a tombstone row
			tbl.del(id, 1)
			model[id] = want{version: 1, deleted: true}
		case 3:
			tbl.insert(id, 2, i)
			model[id] = want{version: 2, doc: i}
		}
	}
	for i := range n {
		id := fmt.Sprint("id", i)
		switch i % 3 {
		case 0:
			tbl.put(id, 5, -i)
			model[id] = want{version: 5, doc: -i}
		case 1:
			tbl.del(id, 5)
			model[id] = want{version: 5, deleted: true}
		case 2:
			tbl.put(id, 0, 7) // stale: changes nothing
		}
	}
	live := 0
	for id, w := range model {
		r := tbl.rows[id]
		if r == nil || r.version != w.version || r.deleted != w.deleted || r.doc != w.doc {
			t.Fatalf("row %s = %+v, want %+v", id, r, w)
		}
		if !w.deleted {
			live++
		}
	}
	if len(tbl.rows) != n || tbl.made != n || tbl.live != live || tbl.duplicated() {
		t.Fatalf("rows %d, made %d, live %d (want %d, %d, %d)", len(tbl.rows), tbl.made, tbl.live, n, n, live)
	}
	if a := testing.AllocsPerRun(1, func() {
		t := newTable[int]()
		for i := range rowBlockMax * 4 {
			t.insert(ids[i], 1, i)
		}
	}); a > 100 { // the map's own growth is about 30; a row each would be 1,024
		t.Errorf("%d inserts took %v allocations: not from blocks", rowBlockMax*4, a)
	}
}

var ids = func() []string {
	out := make([]string, rowBlockMax*4)
	for i := range out {
		out[i] = fmt.Sprint("id", i)
	}
	return out
}()
