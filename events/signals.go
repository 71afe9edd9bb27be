package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"sync"
	"time"
)

// Signal families of the catalog.
const (
	FamilyGeo    = "geo"
	FamilyPermit = "permit"
)

// Signal bases of a permit lead.
const (
	BasisObservedEvent  = "observed_event"
	BasisInferredTiming = "inferred_timing"
)

// Geo signal decisions.
const (
	DecisionPositive = "positive"
	DecisionNeutral  = "neutral"
	DecisionNegative = "negative"
)

// PermitSignalKeys are the customer-facing permit signal keys, in the
// spec's canonical order.
var PermitSignalKeys = []string{
	"site_prep_issued_nowcast",
	"new_construction_issued_nowcast",
	"framing_nowcast_early",
	"framing_window_late",
	"rough_in_nowcast_early",
	"rough_in_window_late",
}

// GeoSignal is the payload of geo_signal.upserted: one computed signal row
// for one geography. See schemas/geo_signal.upserted.json.
//
// Entity id: GeoSignalID(geo_id, signal_key). Entity version: the
// computation's as-of instant in Unix seconds, so a later run supersedes
// an earlier one and a re-run of the same as-of is a no-op. The projection
// adds the geography's type, display name and state from the read model.
type GeoSignal struct {
	GeoID      string          `json:"geo_id"`
	SignalKey  string          `json:"signal_key"`
	Value      json.RawMessage `json:"value"`      // a JSON object; its fields are listed in the catalog spec
	Score      float64         `json:"score"`      // 0..1
	Confidence float64         `json:"confidence"` // 0..1
	Decision   string          `json:"decision"`   // positive, neutral, negative
	Reasons    []string        `json:"reasons"`    // UPPER_SNAKE codes documented in the catalog spec
	ComputedAt time.Time       `json:"computed_at"`
	// SignalVersion is the methodology version that computed the row
	// (the catalog's active_signal_version when it was active).
	SignalVersion string `json:"signal_version"`
}

// GeoSignalID is the entity id of a geo signal row.
func GeoSignalID(geoID, signalKey string) string { return geoID + "|" + signalKey }

// Lead is the payload of permit_lead.upserted: one permit-scoped signal
// row derived from one permit. See schemas/permit_lead.upserted.json.
//
// Entity id: LeadID(permit_id, signal_key). Entity version: the permit's
// entity version times 1000 plus the methodology revision, so a newer
// permit snapshot or a newer methodology supersedes the lead and a replay
// is a no-op. A lead that stops qualifying is removed with
// permit_lead.deleted at a newer version.
//
// AnchorGeoID is the most specific non-property geography of the permit
// (its ZIP's geo_id, else its city's, else its state's). The projection
// looks it up and anchors the lead to it and to its jurisdiction, city,
// county and state, and denormalises county and the *_norm fields.
type Lead struct {
	SignalKey     string      `json:"signal_key"`
	PermitID      string      `json:"permit_id"` // document id of the source permit
	PermitNumber  string      `json:"permit_number,omitempty"`
	Jurisdiction  string      `json:"jurisdiction,omitempty"`    // permitting authority; "" lets the projection use the anchor's
	EventDateUsed string      `json:"event_date_used,omitempty"` // YYYY-MM-DD; omitted: null
	SignalBasis   string      `json:"signal_basis"`              // observed_event, inferred_timing
	Confidence    *float64    `json:"confidence"`                // 0..1 or null
	ReasonCodes   []string    `json:"reason_codes"`              // UPPER_SNAKE codes documented in the catalog spec
	Address       LeadAddress `json:"address"`
	Lat           *float64    `json:"lat"`
	Lon           *float64    `json:"lon"`
	AnchorGeoID   string      `json:"anchor_geo_id"`
	// SignalVersion is the methodology version that derived the lead.
	SignalVersion string `json:"signal_version"`
}

// LeadAddress is the address of a lead's permit as the source gave it.
type LeadAddress struct {
	FullAddress string `json:"full_address,omitempty"`
	City        string `json:"city,omitempty"`
	State       string `json:"state"`
	Zipcode     string `json:"zipcode,omitempty"`
}

// LeadID is the entity id of a lead: "lead_" + 24 hex derived from the
// permit's document id and the signal key.
func LeadID(permitID, signalKey string) string {
	var digits [24]byte
	return "lead_" + string(leadHash(&digits, permitID, signalKey))
}

// IsLeadID reports whether id is LeadID(permitID, signalKey), without
// allocating: the indexer checks it for every lead event.
func IsLeadID(id, permitID, signalKey string) bool {
	var digits [24]byte
	return len(id) == len("lead_")+len(digits) && id[:len("lead_")] == "lead_" &&
		id[len("lead_"):] == string(leadHash(&digits, permitID, signalKey))
}

// leadHasher is a SHA-256 state and its scratch for leadHash, kept in
// leadHashers between calls. sha256.Sum256 allocates nothing only where
// the compiler keeps its state on the stack: a build with a profile
// (-pgo) moved it to the heap, an allocation for every lead event.
type leadHasher struct {
	h   hash.Hash
	in  [128]byte
	sum [sha256.Size]byte
}

var leadHashers = sync.Pool{New: func() any { return &leadHasher{h: sha256.New()} }}

// leadHash writes the 24 hex digits of a lead id into dst and returns
// them, without allocating.
func leadHash(dst *[24]byte, permitID, signalKey string) []byte {
	lh := leadHashers.Get().(*leadHasher)
	in := append(lh.in[:0], "lead\x00"...)
	in = append(in, permitID...)
	in = append(in, 0)
	in = append(in, signalKey...)
	lh.h.Reset()
	lh.h.Write(in)
	sum := lh.h.Sum(lh.sum[:0])
	hex.Encode(dst[:], sum[:12])
	leadHashers.Put(lh)
	return dst[:]
}

// CatalogEntry is the payload of catalog.upserted: one signal key in one
// state. See schemas/catalog.upserted.json.
//
// Entity id: CatalogID(state, signal_key). Entity version: the
// methodology revision (a newer revision supersedes; re-publishing the
// same one is a no-op).
type CatalogEntry struct {
	State                  string          `json:"state"` // USPS code, upper case
	SignalKey              string          `json:"signal_key"`
	Family                 string          `json:"family"` // geo, permit
	ActiveSignalVersion    string          `json:"active_signal_version"`
	ActiveWeightsProfileID string          `json:"active_weights_profile_id"`
	Status                 string          `json:"status"` // active, inactive
	Spec                   json.RawMessage `json:"spec"`   // a JSON object describing the key
}

// CatalogID is the entity id of a catalog entry.
func CatalogID(state, signalKey string) string { return state + "|" + signalKey }
