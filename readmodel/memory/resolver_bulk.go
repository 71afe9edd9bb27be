package memory

import "github.com/permitd/permitd/readmodel"

// bulkResolver indexes an Import's locations for the place resolver on a
// goroutine of its own: nobody reads the first side before Commit, and a
// resolver indexes each location's names, terms and typo variants (about
// 0.75 s for the gazetteer's 98,016 locations), which the Import's
// builder did one location at a time while the decoder waited on it.
// The builder hands each Upsert and Delete over, in order and in chunks,
// without waiting for the index (up to bulkResolverChunks chunks wait),
// so the index is built while the permits load; endBulk waits for it
// before the side is read (joinResolver). A replay's side (replay.go)
// has one too, until EndReplay: the locations come first in a replay,
// held ahead of the other topics, and their writes were one goroutine's
// while the other core had little to do.
type bulkResolver struct {
	r     Resolver
	chunk []resolverOp // not handed over yet
	ops   chan []resolverOp
	done  chan struct{}
}

type resolverOp struct {
	loc readmodel.Location // Upsert
	del string             // Delete, when not ""
}

// bulkResolverChunk is the number of operations handed over at once,
// bulkResolverChunks the number of chunks that may wait: more than the
// US gazetteer's locations.
const (
	bulkResolverChunk  = 256
	bulkResolverChunks = 1024
)

func newBulkResolver(r Resolver) *bulkResolver {
	b := &bulkResolver{r: r, ops: make(chan []resolverOp, bulkResolverChunks), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for ops := range b.ops {
			for _, op := range ops {
				if op.del != "" {
					r.Delete(op.del)
				} else {
					r.Upsert(op.loc)
				}
			}
		}
	}()
	return b
}

func (b *bulkResolver) Upsert(loc readmodel.Location) { b.add(resolverOp{loc: loc}) }

func (b *bulkResolver) Delete(geoID string) {
	if geoID == "" { // no location has it: nothing to delete
		return
	}
	b.add(resolverOp{del: geoID})
}

func (b *bulkResolver) add(op resolverOp) {
	if b.chunk == nil {
		b.chunk = make([]resolverOp, 0, bulkResolverChunk)
	}
	b.chunk = append(b.chunk, op)
	if len(b.chunk) == bulkResolverChunk {
		b.ops <- b.chunk
		b.chunk = nil
	}
}

// Search is never called: readers have the side after joinResolver.
func (b *bulkResolver) Search(readmodel.ResolveQuery) []readmodel.Candidate {
	panic("memory: a side's resolver searched before its bulk index was built")
}

// bulkResolve makes the side's resolver index in the background until
// joinResolver (an Import's first side, a replay's side).
func (d *side) bulkResolve() {
	if d.resolver != nil {
		d.resolver = newBulkResolver(d.resolver)
	}
}

// joinResolver waits for the background index, if any, and makes the
// resolver the side's own again.
func (d *side) joinResolver() {
	if b, ok := d.resolver.(*bulkResolver); ok {
		if len(b.chunk) > 0 {
			b.ops <- b.chunk
		}
		close(b.ops)
		<-b.done
		d.resolver = b.r
	}
}
