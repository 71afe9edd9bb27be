package opensearch

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
	"github.com/permitd/permitd/readmodel/resolve"
)

// Documents as they are stored (dbmodel): one struct per index, mapped
// field for field by mappings/templates/*.json (dynamic: strict). Every
// document carries doc_id (its _id, the sort tie-breaker of full scans),
// version (the entity version; the external _version encodes it with
// the write's rank: unlinked, linked or tombstone, see externalVersion)
// and deleted.
// A permit, property or lead keeps its id in doc_id only: the entity id
// is not stored twice.
//
// Sort keys are single numeric fields without missing values, so the
// engine can skip segments and blocks that cannot compete (Lucene's
// numeric sort optimisation needs a long, double or date primary key
// with points): a missing date or confidence is folded into a sentinel
// that sorts after every real value in the key's order.
//
// A delete is stored as a tombstone: {"doc_id", "version", "deleted":
// true} indexed with external versioning like any upsert. OpenSearch's
// own delete keeps its version only for index.gc_deletes (60s), after
// which an older upsert would resurrect the document; a tombstone keeps
// it for good. Every read filters deleted: false.

type meta struct {
	DocID   string `json:"doc_id"`
	Version int64  `json:"version"`
	Deleted bool   `json:"deleted"`
	// IndexedAt is when the Writer sent this version (epoch ms, its own
	// clock): a reindex's catch-up copies what was indexed since its copy
	// began. Not part of the entity: a replayed version is a version
	// conflict and keeps the stamp of its first write.
	IndexedAt int64 `json:"indexed_at,omitempty"`
}

// docMeta is the document's meta (every document embeds it).
func (m *meta) docMeta() *meta { return m }

type point struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

type locationDoc struct {
	meta
	GeoID             string   `json:"geo_id,omitempty"`
	GeoType           string   `json:"geo_type,omitempty"`
	Name              string   `json:"name,omitempty"`
	Aliases           []string `json:"aliases,omitempty"`
	NameKey           string   `json:"name_key,omitempty"`
	NamesNorm         []string `json:"names_norm,omitempty"`
	Compact           []string `json:"compact,omitempty"`
	DisplayName       string   `json:"display_name,omitempty"`
	FullAddress       string   `json:"full_address,omitempty"`
	State             string   `json:"state,omitempty"`
	StateName         string   `json:"state_name,omitempty"`
	County            string   `json:"county,omitempty"`
	City              string   `json:"city,omitempty"`
	Zipcode           string   `json:"zipcode,omitempty"`
	Jurisdiction      string   `json:"jurisdiction,omitempty"`
	StateGeoID        string   `json:"state_geo_id,omitempty"`
	CountyGeoID       string   `json:"county_geo_id,omitempty"`
	CountyGeoIDs      []string `json:"county_geo_ids,omitempty"`
	CityGeoID         string   `json:"city_geo_id,omitempty"`
	JurisdictionGeoID string   `json:"jurisdiction_geo_id,omitempty"`
	Lat               float64  `json:"lat"`
	Lon               float64  `json:"lon"`
	Point             *point   `json:"point,omitempty"`
	Population        int64    `json:"population,omitempty"`
	Incorporated      bool     `json:"incorporated,omitempty"`
}

func locationDocOf(l readmodel.Location) locationDoc {
	return locationDoc{
		meta:  meta{DocID: l.GeoID, Version: l.Version},
		GeoID: l.GeoID, GeoType: string(l.GeoType), Name: l.Name, Aliases: l.Aliases,
		DisplayName: l.DisplayName, FullAddress: l.FullAddress, State: l.State, StateName: l.StateName,
		County: l.County, City: l.City, Zipcode: l.Zipcode, Jurisdiction: l.Jurisdiction,
		StateGeoID: l.StateGeoID, CountyGeoID: l.CountyGeoID, CountyGeoIDs: l.CountyGeoIDs,
		CityGeoID: l.CityGeoID, JurisdictionGeoID: l.JurisdictionGeoID,
		Lat: l.Lat, Lon: l.Lon, Point: &point{Lat: l.Lat, Lon: l.Lon},
		Population: l.Population, Incorporated: l.Incorporated,
		NamesNorm: namesNorm(l), Compact: compacts(l), NameKey: nameKey(l),
	}
}

// nameKey is a city's or county's name in the *_norm form leads are
// counted under (readmodel.NormName), for spelling stats top lists
// (spellTops); "" for other geo types.
func nameKey(l readmodel.Location) string {
	if l.GeoType != readmodel.GeoCity && l.GeoType != readmodel.GeoCounty {
		return ""
	}
	return readmodel.NormName(l.Name)
}

// namesNorm are the name and aliases in the resolver's matching form
// ("Mt. Vernon" -> "mount vernon"): the fuzzy query matches parsed query
// words against them.
func namesNorm(l readmodel.Location) []string {
	if l.GeoType == readmodel.GeoZip {
		return nil
	}
	var out []string
	for _, n := range append([]string{l.Name}, l.Aliases...) {
		if v := resolve.Normalize(n); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// compacts are the normalised names with their words joined ("De Kalb"
// -> "dekalb"), for compact readings.
func compacts(l readmodel.Location) []string {
	var out []string
	for _, n := range namesNorm(l) {
		if v := strings.ReplaceAll(n, " ", ""); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func (d locationDoc) location() readmodel.Location {
	return readmodel.Location{
		GeoID: d.GeoID, GeoType: readmodel.GeoType(d.GeoType), Name: d.Name, DisplayName: d.DisplayName,
		FullAddress: d.FullAddress, State: d.State, StateName: d.StateName, County: d.County, City: d.City,
		Zipcode: d.Zipcode, Jurisdiction: d.Jurisdiction, StateGeoID: d.StateGeoID, CountyGeoID: d.CountyGeoID,
		CountyGeoIDs: d.CountyGeoIDs, CityGeoID: d.CityGeoID, JurisdictionGeoID: d.JurisdictionGeoID,
		Aliases: d.Aliases, Lat: d.Lat, Lon: d.Lon, Population: d.Population, Incorporated: d.Incorporated,
		Version: d.Version,
	}
}

type geoLinkDoc struct {
	GeoID      string  `json:"geo_id"`
	GeoType    string  `json:"geo_type"`
	Confidence float64 `json:"confidence"`
	Method     string  `json:"method"`
}

func linksOf(ls []readmodel.GeoLink) []geoLinkDoc {
	if len(ls) == 0 {
		return nil
	}
	out := make([]geoLinkDoc, len(ls))
	for i, l := range ls {
		out[i] = geoLinkDoc{GeoID: l.GeoID, GeoType: string(l.GeoType), Confidence: l.Confidence, Method: l.Method}
	}
	return out
}

func linksFrom(ls []geoLinkDoc) []readmodel.GeoLink {
	if len(ls) == 0 {
		return nil
	}
	out := make([]readmodel.GeoLink, len(ls))
	for i, l := range ls {
		out[i] = readmodel.GeoLink{GeoID: l.GeoID, GeoType: readmodel.GeoType(l.GeoType), Confidence: l.Confidence, Method: l.Method}
	}
	return out
}

// geoIDsOf lists the geographies a document is found under: every link
// except the link to the document's own property (a property's permits
// are found by property_id), as the memory backend indexes them.
func geoIDsOf(ls []readmodel.GeoLink, prop string) []string {
	var out []string
	for _, l := range ls {
		if prop != "" && l.GeoType == readmodel.GeoProperty && l.GeoID == prop {
			continue
		}
		out = append(out, l.GeoID)
	}
	return out
}

type addressDoc struct {
	FullAddress  string `json:"full_address,omitempty"`
	City         string `json:"city,omitempty"`
	State        string `json:"state,omitempty"`
	Zipcode      string `json:"zipcode,omitempty"`
	County       string `json:"county,omitempty"`
	Jurisdiction string `json:"jurisdiction,omitempty"`
}

type permitDoc struct {
	meta
	PermitNumber    string       `json:"permit_number,omitempty"`
	PermitType      string       `json:"permit_type,omitempty"`
	WorkType        string       `json:"work_type,omitempty"`
	Status          string       `json:"status,omitempty"`
	ApplicationDate string       `json:"application_date,omitempty"`
	IssueDate       string       `json:"issue_date,omitempty"`
	CompletionDate  string       `json:"completion_date,omitempty"`
	IssueUp         int64        `json:"issue_up"`
	IssueDown       int64        `json:"issue_down"`
	RawDescription  string       `json:"raw_description,omitempty"`
	Contractor      string       `json:"contractor,omitempty"`
	ContractorKey   string       `json:"contractor_key,omitempty"` // readmodel.ContractorKey, for the contractor filter
	ValuationSort   float64      `json:"valuation_sort"`           // valuation, -1 when unknown: the sort=valuation_desc key
	Valuation       *float64     `json:"valuation,omitempty"`
	Source          string       `json:"source,omitempty"`
	Address         *addressDoc  `json:"address,omitempty"`
	Lat             *float64     `json:"lat,omitempty"`
	Lon             *float64     `json:"lon,omitempty"`
	Point           *point       `json:"point,omitempty"`
	PropertyID      string       `json:"property_id,omitempty"`
	GeoLinks        []geoLinkDoc `json:"geo_links,omitempty"`
	GeoIDs          []string     `json:"geo_ids,omitempty"`
	Awaits          *awaitsDoc   `json:"awaits,omitempty"` // unlinked.go
}

// Sentinels of the date sort keys: past any real day (days since 1970
// fit in 32 bits) in the key's direction, so undated items sort last.
const (
	undatedUp   int64 = 1 << 40    // issue_up, ascending
	undatedDown int64 = -(1 << 40) // issue_down and event_key, descending
	noConfKey         = -1.0       // conf_key, descending: confidences are in [0, 1]
)

// issueKeys are a permit's ascending and descending sort keys.
func issueKeys(date string) (up, down int64) {
	if d, ok := dayOf(date); ok {
		return int64(d), int64(d)
	}
	return undatedUp, undatedDown
}

// eventKey is a lead's event date sort key (descending).
func eventKey(date string) int64 {
	if d, ok := dayOf(date); ok {
		return int64(d)
	}
	return undatedDown
}

// confKey is a lead's confidence sort key (descending).
func confKey(c *float64) float64 {
	if c == nil {
		return noConfKey
	}
	return *c
}

// dayOf is YYYY-MM-DD as days since 1970; ok false for "" or malformed.
func dayOf(s string) (int32, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, false
	}
	return int32(t.Unix() / 86400), true
}

func pointOf(lat, lon *float64) *point {
	if lat == nil || lon == nil {
		return nil
	}
	return &point{Lat: *lat, Lon: *lon}
}

func permitDocOf(p readmodel.Permit) permitDoc {
	d := permitDoc{
		meta:         meta{DocID: p.PermitID, Version: p.Version},
		PermitNumber: p.PermitNumber, PermitType: p.PermitType, WorkType: p.WorkType,
		Status: p.Status, ApplicationDate: validDate(p.ApplicationDate), IssueDate: validDate(p.IssueDate),
		CompletionDate: validDate(p.CompletionDate), RawDescription: p.RawDescription, Contractor: p.Contractor,
		ContractorKey: readmodel.ContractorKey(p.Contractor),
		ValuationSort: valuationSort(p.Valuation),
		Valuation:     p.Valuation, Source: p.Source, Lat: p.Lat, Lon: p.Lon, Point: pointOf(p.Lat, p.Lon),
		PropertyID: p.PropertyID, GeoLinks: linksOf(p.GeoLinks), GeoIDs: geoIDsOf(p.GeoLinks, p.PropertyID),
	}
	if a := (addressDoc{FullAddress: p.Address.FullAddress, City: p.Address.City, State: p.Address.State,
		Zipcode: p.Address.Zipcode, County: p.Address.County, Jurisdiction: p.Address.Jurisdiction}); a != (addressDoc{}) {
		d.Address = &a
	}
	d.IssueUp, d.IssueDown = issueKeys(p.IssueDate)
	return d
}

// validDate keeps a well-formed date; the memory backend turns a
// malformed one into "" too (the projection lets none through).
func validDate(s string) string {
	if _, ok := dayOf(s); ok {
		return s
	}
	return ""
}

func (d permitDoc) permit() readmodel.Permit {
	p := readmodel.Permit{
		PermitID: d.DocID, PermitNumber: d.PermitNumber, PermitType: d.PermitType, WorkType: d.WorkType,
		Status: d.Status, ApplicationDate: d.ApplicationDate, IssueDate: d.IssueDate, CompletionDate: d.CompletionDate,
		RawDescription: d.RawDescription, Contractor: d.Contractor, Valuation: d.Valuation, Source: d.Source,
		Lat: d.Lat, Lon: d.Lon, PropertyID: d.PropertyID, GeoLinks: linksFrom(d.GeoLinks), Version: d.Version,
	}
	if d.Address != nil {
		a := d.Address
		p.Address = readmodel.Address{FullAddress: a.FullAddress, City: a.City, State: a.State, Zipcode: a.Zipcode, County: a.County, Jurisdiction: a.Jurisdiction}
	}
	return p
}

type propertyDoc struct {
	meta
	CanonicalAddress  string       `json:"canonical_address,omitempty"`
	NormalizedAddress string       `json:"normalized_address,omitempty"`
	HouseNumber       string       `json:"house_number,omitempty"`
	StreetLen         int          `json:"street_len,omitempty"`
	City              string       `json:"city,omitempty"`
	CityNorm          string       `json:"city_norm,omitempty"`
	State             string       `json:"state,omitempty"`
	Zipcode           string       `json:"zipcode,omitempty"`
	ParcelID          string       `json:"parcel_id,omitempty"`
	Lat               *float64     `json:"lat,omitempty"`
	Lon               *float64     `json:"lon,omitempty"`
	Point             *point       `json:"point,omitempty"`
	GeoLinks          []geoLinkDoc `json:"geo_links,omitempty"`
	GeoIDs            []string     `json:"geo_ids,omitempty"`
	Awaits            *awaitsDoc   `json:"awaits,omitempty"` // unlinked.go
}

func propertyDocOf(p readmodel.Property) propertyDoc {
	return propertyDoc{
		meta:             meta{DocID: p.PropertyID, Version: p.Version},
		CanonicalAddress: p.CanonicalAddress, NormalizedAddress: p.NormalizedAddress,
		HouseNumber: propmatch.HouseNumber(p.NormalizedAddress),
		StreetLen:   utf8.RuneCountInString(streetName(p.NormalizedAddress, propmatch.HouseNumber(p.NormalizedAddress))),
		City:        p.City, CityNorm: address.NormalizeCity(p.City),
		State: p.State, Zipcode: p.Zipcode, ParcelID: p.ParcelID, Lat: p.Lat, Lon: p.Lon, Point: pointOf(p.Lat, p.Lon),
		GeoLinks: linksOf(p.GeoLinks), GeoIDs: geoIDsOf(p.GeoLinks, p.PropertyID),
	}
}

func (d propertyDoc) property() readmodel.Property {
	return readmodel.Property{
		PropertyID: d.DocID, CanonicalAddress: d.CanonicalAddress, NormalizedAddress: d.NormalizedAddress,
		City: d.City, State: d.State, Zipcode: d.Zipcode, ParcelID: d.ParcelID, Lat: d.Lat, Lon: d.Lon,
		GeoLinks: linksFrom(d.GeoLinks), Version: d.Version,
	}
}

type geoSignalDoc struct {
	meta
	GeoID       string          `json:"geo_id,omitempty"`
	GeoType     string          `json:"geo_type,omitempty"`
	DisplayName string          `json:"display_name,omitempty"`
	State       string          `json:"state,omitempty"`
	SignalKey   string          `json:"signal_key,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	Score       float64         `json:"score"`
	Confidence  float64         `json:"confidence"`
	Decision    string          `json:"decision,omitempty"`
	Reasons     []string        `json:"reasons"`
	ComputedAt  *time.Time      `json:"computed_at,omitempty"`
}

func geoSignalDocOf(g readmodel.GeoSignal) geoSignalDoc {
	at := g.ComputedAt.UTC()
	reasons := g.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	return geoSignalDoc{
		meta:  meta{DocID: g.ID(), Version: g.Version},
		GeoID: g.GeoID, GeoType: string(g.GeoType), DisplayName: g.DisplayName, State: g.State,
		SignalKey: g.SignalKey, Value: g.Value, Score: g.Score, Confidence: g.Confidence,
		Decision: g.Decision, Reasons: reasons, ComputedAt: &at,
	}
}

func (d geoSignalDoc) geoSignal() readmodel.GeoSignal {
	g := readmodel.GeoSignal{
		GeoID: d.GeoID, GeoType: readmodel.GeoType(d.GeoType), DisplayName: d.DisplayName, State: d.State,
		SignalKey: d.SignalKey, Value: d.Value, Score: d.Score, Confidence: d.Confidence, Decision: d.Decision,
		Reasons: d.Reasons, Version: d.Version,
	}
	if d.ComputedAt != nil {
		g.ComputedAt = d.ComputedAt.UTC()
	}
	return g
}

type leadLocationDoc struct {
	FullAddress string `json:"full_address,omitempty"`
	City        string `json:"city,omitempty"`
	State       string `json:"state,omitempty"`
	Zipcode     string `json:"zipcode,omitempty"`
	County      string `json:"county,omitempty"`
	CityNorm    string `json:"city_norm,omitempty"`
	ZipcodeNorm string `json:"zipcode_norm,omitempty"`
	CountyNorm  string `json:"county_norm,omitempty"`
}

// leadDoc stores the two orders of lead pages as two descending keys
// without missing values: event_key (the event day, undatedDown without
// one) and conf_key (the confidence, noConfKey without one).
type leadDoc struct {
	meta
	SignalKey     string           `json:"signal_key,omitempty"`
	EventDateUsed string           `json:"event_date_used,omitempty"`
	EventKey      int64            `json:"event_key"`
	SignalBasis   string           `json:"signal_basis,omitempty"`
	Confidence    *float64         `json:"confidence,omitempty"`
	ConfKey       float64          `json:"conf_key"`
	ReasonCodes   []string         `json:"reason_codes"`
	PermitNumber  string           `json:"permit_number,omitempty"`
	Jurisdiction  string           `json:"jurisdiction,omitempty"`
	Location      *leadLocationDoc `json:"location,omitempty"`
	MapsURL       string           `json:"maps_url,omitempty"`
	GeoIDs        []string         `json:"geo_ids,omitempty"`
	Awaits        *awaitsDoc       `json:"awaits,omitempty"` // unlinked.go
}

func leadDocOf(l readmodel.Lead) leadDoc {
	codes := l.ReasonCodes
	if codes == nil {
		codes = []string{}
	}
	d := leadDoc{
		meta:      meta{DocID: l.LeadID, Version: l.Version},
		SignalKey: l.SignalKey, SignalBasis: l.SignalBasis, Confidence: l.Confidence,
		ReasonCodes: codes, PermitNumber: l.PermitNumber, Jurisdiction: l.Jurisdiction, MapsURL: l.MapsURL,
		GeoIDs: l.GeoIDs,
		Location: &leadLocationDoc{
			FullAddress: l.Location.FullAddress, City: l.Location.City, State: l.Location.State,
			Zipcode: l.Location.Zipcode, County: l.Location.County, CityNorm: l.Location.CityNorm,
			ZipcodeNorm: l.Location.ZipcodeNorm, CountyNorm: l.Location.CountyNorm,
		},
	}
	d.EventDateUsed = validDate(l.EventDateUsed)
	d.EventKey, d.ConfKey = eventKey(l.EventDateUsed), confKey(l.Confidence)
	return d
}

func (d leadDoc) lead() readmodel.Lead {
	l := readmodel.Lead{
		LeadID: d.DocID, SignalKey: d.SignalKey, EventDateUsed: d.EventDateUsed, SignalBasis: d.SignalBasis,
		Confidence: d.Confidence, ReasonCodes: d.ReasonCodes, PermitNumber: d.PermitNumber,
		Jurisdiction: d.Jurisdiction, MapsURL: d.MapsURL, GeoIDs: d.GeoIDs, Version: d.Version,
	}
	if d.Location != nil {
		x := d.Location
		l.Location = readmodel.LeadLocation{FullAddress: x.FullAddress, City: x.City, State: x.State, Zipcode: x.Zipcode,
			County: x.County, CityNorm: x.CityNorm, ZipcodeNorm: x.ZipcodeNorm, CountyNorm: x.CountyNorm}
	}
	return l
}

type catalogDoc struct {
	meta
	State                  string          `json:"state,omitempty"`
	SignalKey              string          `json:"signal_key,omitempty"`
	Family                 string          `json:"family,omitempty"`
	ActiveSignalVersion    string          `json:"active_signal_version,omitempty"`
	ActiveWeightsProfileID string          `json:"active_weights_profile_id,omitempty"`
	Status                 string          `json:"status,omitempty"`
	Spec                   json.RawMessage `json:"spec,omitempty"`
}

func catalogDocOf(c readmodel.CatalogEntry) catalogDoc {
	return catalogDoc{
		meta:  meta{DocID: c.ID(), Version: c.Version},
		State: c.State, SignalKey: c.SignalKey, Family: c.Family, ActiveSignalVersion: c.ActiveSignalVersion,
		ActiveWeightsProfileID: c.ActiveWeightsProfileID, Status: c.Status, Spec: c.Spec,
	}
}

func (d catalogDoc) entry() readmodel.CatalogEntry {
	return readmodel.CatalogEntry{
		State: d.State, SignalKey: d.SignalKey, Family: d.Family, ActiveSignalVersion: d.ActiveSignalVersion,
		ActiveWeightsProfileID: d.ActiveWeightsProfileID, Status: d.Status, Spec: d.Spec, Version: d.Version,
	}
}

// valuationSort is the valuation_desc sort key: the valuation, -1 (below
// every valuation) when unknown, so every document has one.
func valuationSort(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}
