package memory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/tidwall/btree"
)

// BenchmarkLeadTreeWrites measures what the live lead path asks of a
// key's two trees (date and confidence order): 300 keys of 4,000 leads
// each, built from their sorted items as a reader's first read builds
// them, then random keys take new leads (a write in both trees) and,
// one write in four, lose one of theirs first (a move). "library" is the
// B-tree the keys used until the eighty-fifth session (degree 32, write
// hints), "own" is leadTree. It reports ns and bytes allocated a lead
// written, both trees included.
func BenchmarkLeadTreeWrites(b *testing.B) {
	const keys, per, writes = 300, 4000, 1_200_000
	x := newLeadIndex()
	rng := rand.New(rand.NewPCG(85, 1))
	n := 0
	newItem := func() leadItem {
		r := x.placed()
		slot := r.slot
		n++
		*r = leadRec{slot: slot, date: int32(20000 + rng.IntN(730)), hasConf: rng.IntN(10) > 0}
		if r.hasConf {
			r.conf = float64(rng.IntN(1000)) / 1000
		}
		r.lead.LeadID = events.LeadID(fmt.Sprint("p", n), "solar")
		return itemOf(r)
	}
	base := make([][]leadItem, keys)
	for k := range base {
		for range per {
			base[k] = append(base[k], newItem())
		}
	}
	ops := make([]struct {
		key  int
		it   leadItem
		drop int // index into the key's held items to remove first, or -1
	}, writes)
	for i := range ops {
		ops[i].key, ops[i].it, ops[i].drop = rng.IntN(keys), newItem(), -1
		if rng.IntN(4) == 0 {
			ops[i].drop = rng.IntN(per)
		}
	}
	type trees interface {
		set(k int, it leadItem)
		del(k int, it leadItem)
	}
	// run builds the keys' trees from their items (build), then times
	// the writes.
	run := func(b *testing.B, build func(held [][]leadItem) trees) {
		for range b.N {
			held := make([][]leadItem, keys)
			for k := range held {
				held[k] = slices.Clone(base[k])
			}
			runtime.GC()
			t := build(held)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			c0 := time.Now()
			for _, op := range ops {
				if op.drop >= 0 {
					h := held[op.key]
					t.del(op.key, h[op.drop])
					h[op.drop] = op.it
				}
				t.set(op.key, op.it)
			}
			c := time.Since(c0)
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(c.Nanoseconds())/writes, "ns/lead")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/writes, "B/lead")
		}
	}
	b.Run("library", func(b *testing.B) {
		run(b, func(held [][]leadItem) trees {
			lt := &libTrees{dh: make([]btree.PathHint, keys), ch: make([]btree.PathHint, keys)}
			opts := btree.Options{NoLocks: true, Degree: 32}
			for _, items := range held {
				d := btree.NewBTreeGOptions(func(a, b leadItem) bool { return x.itemDateCmp(a, b) < 0 }, opts)
				c := btree.NewBTreeGOptions(func(a, b leadItem) bool { return x.itemConfCmp(a, b) < 0 }, opts)
				for _, o := range []struct {
					t   *btree.BTreeG[leadItem]
					cmp func(a, b leadItem) int
				}{{d, x.itemDateCmp}, {c, x.itemConfCmp}} {
					s := slices.Clone(items)
					slices.SortFunc(s, o.cmp)
					for _, it := range s {
						o.t.Load(it)
					}
				}
				lt.d, lt.c = append(lt.d, d), append(lt.c, c)
			}
			return lt
		})
	})
	b.Run("own", func(b *testing.B) {
		run(b, func(held [][]leadItem) trees {
			ot := &ownTrees{}
			for _, items := range held {
				d, c := newLeadTree(x, false), newLeadTree(x, true)
				loadSorted(d, slices.Clone(items))
				loadSorted(c, slices.Clone(items))
				ot.d, ot.c = append(ot.d, d), append(ot.c, c)
			}
			return ot
		})
	})
}

type libTrees struct {
	d, c   []*btree.BTreeG[leadItem]
	dh, ch []btree.PathHint
}

func (l *libTrees) set(k int, it leadItem) {
	l.d[k].SetHint(it, &l.dh[k])
	l.c[k].SetHint(it, &l.ch[k])
}

func (l *libTrees) del(k int, it leadItem) {
	l.d[k].DeleteHint(it, &l.dh[k])
	l.c[k].DeleteHint(it, &l.ch[k])
}

type ownTrees struct{ d, c []*leadTree }

func (o *ownTrees) set(k int, it leadItem) { o.d[k].Set(it); o.c[k].Set(it) }

func (o *ownTrees) del(k int, it leadItem) { o.d[k].Delete(it); o.c[k].Delete(it) }
