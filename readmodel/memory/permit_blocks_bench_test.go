package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkBlockSetInsert inserts and removes permits at random places
// of a set of 1M permits (about a state's set at 5M generated permits)
// spread over 1,000 days, so a seek meets same-day ties (ids compared
// through the slab) and, the set being loaded in one piece, full blocks
// that split.
func BenchmarkBlockSetInsert(b *testing.B) {
	benchBlockSets(b, blockSetBench{seed: 3, permits: 1_000_000, days: 1000, sets: 1, every: 1, into: 1,
		id: "gen:%09d", newID: "new:%09d", extra: 4096})
}

// BenchmarkBlockSetInsertCold is BenchmarkBlockSetInsert among many large
// sets over a large slab, so that a seek's loads miss the caches as in a
// store of millions of permits: 12 sets of about 1.3M keys each over 4M
// permits of 1,000 days, each new permit inserted into 6 of them and
// then deleted. Its permits hold their slots
//
//   - grown: in no order, as in a store written by Apply (a replay's, a
//     live one's);
//   - loaded: in index order, as in a store an Import loaded from a
//     snapshot (which holds permits in index order), so the keys of a
//     block name neighbouring slots and the abbreviated ids that break
//     their day's ties share cache lines and pages.
//
// Each case runs three times: one set after another (set, delete); with
// "-many" a permit's sets together, their seeks in lock step
// (writeAll); and with "-logged" as "-many" on a store's second side,
// which checks the places the first side's seeks found
// (permit_seeklog.go: placeAll) instead of seeking (the places are
// recorded on a pass before the timer starts, which leaves the sets as
// they were). A permit's sets are distinct; ns are per set and insert
// and delete.
func BenchmarkBlockSetInsertCold(b *testing.B) {
	for _, loaded := range []bool{false, true} {
		for _, way := range []string{"", "-many", "-logged"} {
			b.Run(map[bool]string{false: "grown", true: "loaded"}[loaded]+way, func(b *testing.B) {
				benchBlockSets(b, blockSetBench{seed: 5, permits: 4_000_000, days: 1000, sets: 12, every: 3, into: 6,
					id: "gen:SYN-%09d", newID: "gen:SYN-%09d", extra: 8192, loaded: loaded, many: way != "", logged: way == "-logged"})
			})
		}
	}
}

// blockSetBench is a block-set benchmark's store: permits of random ids
// and days, sets each holding every permit (every 1) or about one in
// every, and extra new permits each inserted into into sets at random.
type blockSetBench struct {
	seed                uint64
	permits, days, sets int
	every, into, extra  int
	id, newID           string // formats of a random number below 1e9
	loaded              bool   // slots in index order, else in the order of creation
	many                bool   // a permit's sets written together (writeAll)
	logged              bool   // with the places recorded before (a second side's write)
}

// benchBlockSets times, per op, every extra permit inserted into its
// sets (distinct: a draw that repeats a set is dropped), then each
// deleted, and reports ns per set and insert and delete.
func benchBlockSets(b *testing.B, p blockSetBench) {
	r := rand.New(rand.NewPCG(p.seed, p.seed+1))
	slab := newPermitSlab()
	ps := make([]*cpermit, p.permits)
	for i := range ps {
		ps[i] = &cpermit{id: fmt.Sprintf(p.id, r.IntN(1e9)), ik: -int32(r.IntN(p.days))}
		if !p.loaded {
			slab.take(ps[i])
		}
	}
	slices.SortFunc(ps, permitCmp)
	if p.loaded {
		for _, c := range ps {
			slab.take(c)
		}
	}
	sets := make([]*blockSet, p.sets)
	for j := range sets {
		keys := make([]pkey, 0, len(ps)/p.every)
		for _, c := range ps {
			if p.every == 1 || r.IntN(p.every) == 0 {
				keys = append(keys, keyOf(c))
			}
		}
		sets[j] = blockSetOf(slab, keys)
	}
	extra := make([]*cpermit, p.extra)
	into := make([][]*blockSet, len(extra)) // each extra permit's sets, distinct
	n := 0                                  // sets written per pass
	for i := range extra {
		extra[i] = &cpermit{id: fmt.Sprintf(p.newID, r.IntN(1e9)), ik: -int32(r.IntN(p.days))}
		slab.take(extra[i])
		for range p.into {
			j := 0
			if p.sets > 1 {
				j = r.IntN(p.sets)
			}
			if !slices.Contains(into[i], sets[j]) {
				into[i] = append(into[i], sets[j])
			}
		}
		n += len(into[i])
	}
	var log *seekLog
	if p.logged { // a pass that records the places, and leaves the sets as they were
		log = &seekLog{}
		for _, add := range []bool{true, false} {
			for i, c := range extra {
				writeAll(into[i], c, add, log)
			}
		}
		log.reading = true
	}
	b.ResetTimer()
	for b.Loop() {
		if log != nil {
			log.call, log.at = 0, 0
		}
		for _, add := range []bool{true, false} { // every insert, then every delete
			for i, c := range extra {
				switch {
				case p.many:
					writeAll(into[i], c, add, log)
				case add:
					for _, t := range into[i] {
						t.set(c)
					}
				default:
					for _, t := range into[i] {
						t.delete(c)
					}
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/insert+delete")
	if log != nil && (log.lost || log.used != b.N*2*n) {
		b.Fatalf("%d of %d places used (lost %v)", log.used, b.N*2*n, log.lost)
	}
}
