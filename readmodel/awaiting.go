package readmodel

import "context"

// Documents waiting for a location, kept by a durable backend.
//
// A permit or property written without its ZIP's location, or a lead
// anchored to its state because its anchor's location was unknown, is
// re-linked by the indexer when that location arrives (see the re-link
// rule of Writer.Apply). The indexer keeps the message it projects again
// in memory; a backend that outlives the indexer (OpenSearch, shared by
// the members of a consumer group) also keeps it with the document, so
// that a member that restarts, or takes over a partition, finds the
// documents still waiting (UnlinkedLister) instead of leaving them at
// state level until their entity is published again.

// Awaiting is what one document of a batch, written without a location
// it names, waits for: the location's geo_id and the message it was
// projected from (its source position, key and value), which the indexer
// projects again once the location is known.
type Awaiting struct {
	Kind    Kind   // KindPermit, KindProperty or KindLead
	ID      string // the document's id
	Version int64  // the document's Version (the message's entity version)
	GeoID   string // the location waited for

	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
}

// UnlinkedScan selects the documents an UnlinkedLister lists.
type UnlinkedScan struct {
	// Partitions lists, by topic, the partitions whose messages are
	// wanted (those a consumer group member owns); nil: every document.
	// A non-nil map without a partition selects nothing.
	Partitions map[string][]int
	// PageSize is the most documents handed to fn at once; 0: 1000.
	PageSize int
}

// UnlinkedLister is implemented by a Writer that stores Batch.Awaiting
// with its documents.
type UnlinkedLister interface {
	// ScanUnlinked hands fn, page by page (at most q.PageSize entries,
	// in no stated order), what every live permit, property and lead
	// of q.Partitions still waits for: each document once, the stored
	// (newest) version only; a document that was re-linked or replaced
	// by a linked version is not listed. Memory use is one page. fn's
	// error stops the scan and is returned; fn may not keep the page's
	// slices (Key, Value) after it returns.
	ScanUnlinked(ctx context.Context, q UnlinkedScan, fn func([]Awaiting) error) error
}
