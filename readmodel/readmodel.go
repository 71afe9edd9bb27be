// Package readmodel holds the contracts of permitd's read model: the Reader
// the API serves from, the Writer the indexer projects into, the documents
// both exchange, the query structs and the sentinel errors.
//
// Backends live in sub-packages (memory, opensearch). Nothing in this package
// knows which backend is wired: the API imports Reader, the indexer imports
// Writer, and only cmd/ chooses.
//
// Documents are backend documents, not API responses: the API maps them to
// its own response types so a mapping change never leaks to clients.
package readmodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Sentinel errors every backend returns (wrapped or bare; test with errors.Is).
var (
	// ErrNotFound: the addressed entity (geo_id, property_id) does not exist.
	ErrNotFound = errors.New("readmodel: not found")
	// ErrUnavailable: the backend cannot answer now (connection refused,
	// cluster red, timeout, overloaded, or an answer that misses part of
	// the data such as a failed shard): a retry may succeed. The API maps
	// it to 503 BACKEND_UNAVAILABLE with Retry-After.
	ErrUnavailable = errors.New("readmodel: backend unavailable")
	// ErrUnsupported: the backend does not implement this read yet. Declared
	// in Capabilities, never discovered by surprise.
	ErrUnsupported = errors.New("readmodel: read not supported by this backend")
	// ErrInvalidQuery: the query struct breaks its documented contract
	// (for example Limit out of range). The API validates first, so this is a
	// programming error surfaced as 500 rather than silently clamped.
	ErrInvalidQuery = errors.New("readmodel: invalid query")
)

// Kind names one index (document family) of the read model.
type Kind string

// The read-model indices.
const (
	KindLocation  Kind = "location"
	KindPermit    Kind = "permit"
	KindProperty  Kind = "property"
	KindGeoSignal Kind = "geo_signal"
	KindLead      Kind = "permit_lead"
	KindCatalog   Kind = "catalog"
)

// Kinds lists every index in a fixed order.
var Kinds = []Kind{KindLocation, KindPermit, KindProperty, KindGeoSignal, KindLead, KindCatalog}

// Reader answers every v1 read. Each method maps to one search request on a
// search engine (search_after for cursors, aggregations for stats).
//
// Common contract:
//   - Query structs arrive checked by the API's parameter checks; a
//     backend calls the struct's Validate first (limits.go, validate.go)
//     and returns its ErrInvalidQuery, never clamps silently. Validate is
//     the one place the contract is checked on a read.
//   - Results are copies: the caller may keep and mutate them; a later write
//     never changes a returned value.
//   - Paged reads return at most Limit items and a Next key when at least one
//     more item follows in the sort order; Next is nil on the last page.
//     Passing Next back as After continues strictly after that item
//     (search_after semantics): an item present for the whole walk, with
//     an unchanged sort key, is seen exactly once, whatever else is written
//     in between. An item whose sort key changes mid-walk (a permit
//     re-dated by a newer event) may be seen at its old and its new
//     position, or at neither; items added mid-walk may or may not appear.
//   - A read that the backend cannot serve returns ErrUnavailable (wrapped).
type Reader interface {
	// Location returns one location by geo_id with PermitCount and
	// LatestPermitDate current as of the last applied batch (counted by the
	// backend; a document's own figures are ignored). A property
	// (geo.IsProperty) is presented by PropertyLocation. Unknown geo_id:
	// ErrNotFound.
	Location(ctx context.Context, geo GeoRef) (Location, error)

	// ResolveCandidates ranks locations for free text; when q.GeoType is
	// "" or property and the text looks like an address (a leading house
	// number), properties too (geo_type property, match_method address).
	// Candidates are ordered by Score descending, ties broken by population
	// descending then geo_id ascending, at most q.Limit. No match is an
	// empty slice, not an error.
	ResolveCandidates(ctx context.Context, q ResolveQuery) ([]Candidate, error)

	// SearchPermits pages the permits linked to q.Geo, ordered by
	// issue_date (q.Desc) with permit_id ascending as tie-breaker; permits
	// without an issue date sort after every dated permit in both orders.
	// For a property (q.Geo.IsProperty), the permits of that property
	// (its permit history: the API's property permits are this read,
	// Desc, unfiltered).
	// Unknown geo_id: ErrNotFound. A known geo with no permits: empty page.
	SearchPermits(ctx context.Context, q PermitQuery) (PermitPage, error)

	// SearchProperties returns the properties that plausibly match an
	// address, best first (MatchConfidence descending, property_id
	// ascending), at most q.Limit. No plausible match: empty slice.
	SearchProperties(ctx context.Context, q PropertyQuery) ([]PropertyMatch, error)

	// GeoSignalsForLocation returns the active geo signal rows of one geo,
	// signal_key ascending, restricted to keys when keys is non-empty. A
	// row is active when the catalog of the row's state lists its
	// signal_key with status CatalogActive; rows of other keys (no entry,
	// or another status) are never served. The geo's type and state come
	// with the rows, so a caller needs no Location read for them. Unknown
	// geo_id (a property_id too): ErrNotFound. Known geo without active
	// rows: empty Signals.
	GeoSignalsForLocation(ctx context.Context, geo GeoRef, keys []string) (LocationSignals, error)

	// SearchGeoSignals pages the active geo signal rows (as above) of one
	// state ordered by score descending, signal_key ascending, geo_id
	// ascending.
	SearchGeoSignals(ctx context.Context, q GeoSignalQuery) (GeoSignalPage, error)

	// Catalog lists catalog entries of one state (active only unless
	// q.IncludeInactive), signal_key ascending. A state without entries
	// yields an empty slice.
	Catalog(ctx context.Context, q CatalogQuery) ([]CatalogEntry, error)

	// PermitLeads pages the leads anchored to q.Filter.Geo that pass q.Filter, in
	// q.Sort order with lead_id ascending as the final tie-breaker, with
	// the anchor's geo type. Unknown geo_id (a property_id too):
	// ErrNotFound.
	PermitLeads(ctx context.Context, q LeadQuery) (LeadPage, error)

	// PermitStats aggregates exactly the leads PermitLeads would page for
	// the same filter: Total equals the number of leads a full walk yields,
	// and each distribution sums to Total; GeoType is the anchor's. Unknown
	// geo_id (a property_id too): ErrNotFound.
	PermitStats(ctx context.Context, q StatsQuery) (PermitStats, error)

	// Health reports whether the backend answers and how much it holds:
	// the number of live (not deleted) documents per kind, every kind of
	// Kinds present. It is the one count read (readiness, metrics and the
	// conformance suite's counts all use it).
	Health(ctx context.Context) (Health, error)
}

// Writer is the indexer's side of the read model.
type Writer interface {
	// Apply writes one batch. It returns nil only once every document of the
	// batch is durable and visible to Reader calls (read-your-writes), or,
	// for a backend that says so in its package documentation, visible
	// within a stated bound after Apply returns (OpenSearch: the index
	// refresh interval, 1s unless configured).
	//
	// Idempotence: each document carries its entity Version; a document or
	// delete whose version is not newer than the stored one (including a
	// tombstone left by a delete) is a no-op counted in Result.Stale, not an
	// error. Applying the same batch twice leaves the same state.
	//
	// Re-links and deletes (the two exceptions to "newer only"): a permit
	// or property projected while its ZIP's location was unknown, or a
	// lead whose anchor's location was unknown, is written linked only to
	// what was known (Linked reports false); when the location arrives the
	// indexer writes the same entity again at the SAME Version, linked. Equal
	// versions are therefore ordered by link completeness, the key being
	// (Version, Linked) with false < true:
	//   - a linked document replaces a live unlinked one of equal Version
	//     (Applied): the re-link;
	//   - an unlinked one never replaces a linked one of equal Version
	//     (Stale): a late or replayed state-level copy cannot undo a
	//     re-link;
	//   - equal (Version, Linked) is Stale, as before: replays stay
	//     idempotent, and a replay of the whole log ends in the document a
	//     replay with the locations first produces;
	//   - a tombstone at Version v outranks both documents of version v,
	//     in either order: a document of v over a tombstone of v is Stale
	//     (a re-link never resurrects a deleted entity), and a delete at v
	//     over a live document of v takes (Applied). So a delete and the
	//     documents of its version end deleted whatever order they come
	//     in, as a replay of the log ends.
	// Other kinds have no link completeness: equal versions of documents
	// are Stale, and a delete at v takes over a live document of v as
	// above. A delete over a tombstone of its version is Stale.
	//
	// A *ItemErrors error means every document of the batch but the ones
	// it lists is applied (and counted in the result), and the listed ones
	// can never be: the caller does not retry them but dead-letters the
	// events that produced them with each item's Reason, and goes on.
	// Any other error means the batch may be partly applied; because of
	// the version rule the caller may retry the whole batch.
	//
	// Apply keeps nothing of b's slices once it returns (it copies what it
	// stores): the indexer reuses them for its next batch.
	Apply(ctx context.Context, b Batch) (ApplyResult, error)
}

// Versioned is implemented by a backend that can name the state its reads
// see, so the API can derive a strong ETag (and answer If-None-Match with
// 304) without running the read. A backend that cannot (OpenSearch) does
// not implement it, and the API falls back to a hash of the body.
//
// Contract: ReadVersion returns (epoch, seq). Epoch is chosen at random
// when the backend value is made and never changes; seq increases with
// every applied batch that changed state. Equal (epoch, seq) means equal
// read-model contents. A caller must take the version before the read it
// labels: the read then sees that state or a newer one, never an older
// one, so a label can only be conservative.
type Versioned interface {
	ReadVersion() (epoch, seq uint64)
}

// Inspector exposes the content of a backend for tests: an
// order-independent digest of live documents (the counts are
// Reader.Health's).
type Inspector interface {
	// Digest returns a hex SHA-256 over every live document's kind, id and
	// version, independent of insertion order (built with Digest, so equal
	// contents give equal digests on every backend).
	Digest(ctx context.Context) (string, error)
}

// Digest builds Inspector.Digest, the same way for every backend: Add
// each live document in any order, then Sum.
type Digest struct{ lines []string }

// Add records one live document.
func (d *Digest) Add(k Kind, id string, version int64) {
	d.lines = append(d.lines, string(k)+" "+id+" "+strconv.FormatInt(version, 10))
}

// Sum is the hex SHA-256 over the sorted lines "kind id version", each
// ending in a newline.
func (d *Digest) Sum() string {
	slices.Sort(d.lines)
	h := sha256.New()
	for _, l := range d.lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Batch is one unit of projection output. Documents of one kind are
// applied in slice order; the version rule makes order within a batch
// irrelevant for the end state.
type Batch struct {
	Locations  []Location
	Permits    []Permit
	Properties []Property
	GeoSignals []GeoSignal
	Leads      []Lead
	Catalog    []CatalogEntry
	Deletes    []Delete
	// Awaiting lists what documents of the batch written without a
	// location they name wait for (awaiting.go): a backend that
	// implements UnlinkedLister stores it with them, others ignore it.
	// Not counted by Len.
	Awaiting []Awaiting
}

// Len is the number of documents and deletes in the batch.
func (b *Batch) Len() int {
	return len(b.Locations) + len(b.Permits) + len(b.Properties) + len(b.GeoSignals) +
		len(b.Leads) + len(b.Catalog) + len(b.Deletes)
}

// Append adds every document of o to b.
func (b *Batch) Append(o Batch) {
	b.Locations = append(b.Locations, o.Locations...)
	b.Permits = append(b.Permits, o.Permits...)
	b.Properties = append(b.Properties, o.Properties...)
	b.GeoSignals = append(b.GeoSignals, o.GeoSignals...)
	b.Leads = append(b.Leads, o.Leads...)
	b.Catalog = append(b.Catalog, o.Catalog...)
	b.Deletes = append(b.Deletes, o.Deletes...)
	b.Awaiting = append(b.Awaiting, o.Awaiting...)
}

// DeleteTakes is the Writer rule for a delete at version over what is
// stored at stored (tombstone: a delete left it): a newer version always
// takes, an equal one only over a live document (a tombstone of v
// outranks the documents of v, in either order), an older one never.
// The backends' tables and the indexer's location table apply it.
func DeleteTakes(version, stored int64, tombstone bool) bool {
	return version > stored || version == stored && !tombstone
}

// Delete removes one document at a version. The backend keeps a tombstone
// so that an older upsert delivered later stays deleted.
type Delete struct {
	Kind    Kind
	ID      string
	Version int64
}

// ItemError is one document of a batch that the backend refused for good:
// the document itself cannot be stored (a mapping rejection, a value
// over an engine limit), so no retry can store it.
type ItemError struct {
	Kind    Kind
	ID      string
	Version int64
	Reason  string // the backend's reason, for the dead letter
}

// ItemErrors is the error Writer.Apply returns when it applied every
// document of a batch except Items, which it can never apply.
type ItemErrors struct {
	Items []ItemError
}

func (e *ItemErrors) Error() string {
	if len(e.Items) == 0 {
		return "readmodel: no item errors"
	}
	first := e.Items[0]
	msg := fmt.Sprintf("readmodel: %d documents refused for good, first %s %q v%d: %s", len(e.Items), first.Kind, first.ID, first.Version, first.Reason)
	return msg
}

// ApplyResult counts what a batch did.
type ApplyResult struct {
	Applied int // documents and deletes that changed state
	Stale   int // ignored because a newer or equal version was stored
}

// Health is a backend's own view of itself.
type Health struct {
	Backend string
	Counts  map[Kind]int64
}

// Linked reports whether p's geo links are complete: it names no ZIP, or
// it is linked to its ZIP (the projection found the ZIP's location and
// linked its hierarchy). A permit whose ZIP location was unknown when it
// was projected is linked to its property and state only; see the
// re-link rule of Writer.Apply.
func (p Permit) Linked() bool { return p.Address.Zipcode == "" || hasZipLink(p.GeoLinks) }

// Linked reports whether p's geo links are complete, as Permit.Linked.
func (p Property) Linked() bool { return p.Zipcode == "" || hasZipLink(p.GeoLinks) }

// Linked reports whether l is anchored below its state: to a geography
// and its hierarchy (more than one geo_id). A lead whose anchor location
// was unknown when it was projected is anchored to its state alone
// (false); so is a lead its producer anchored to a state, which no
// re-link ever changes (every copy of it is unlinked, so the rule of
// Writer.Apply orders them as equals).
func (l Lead) Linked() bool { return len(l.GeoIDs) > 1 }

func hasZipLink(links []GeoLink) bool {
	for _, l := range links {
		if l.GeoType == GeoZip {
			return true
		}
	}
	return false
}
