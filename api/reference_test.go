package api

// The reference encoding: the response structs the API encoded with
// encoding/json (gin's c.JSON) before the hand-written encoders of
// encode.go. TestEncodersAgree holds the encoders to these bytes.

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/permitd/permitd/readmodel"
)

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type candidateJSON struct {
	GeoID        string   `json:"geo_id"`
	GeoType      string   `json:"geo_type"`
	DisplayName  string   `json:"display_name"`
	Score        float64  `json:"score"`
	Confidence   float64  `json:"confidence"`
	MatchMethod  string   `json:"match_method"`
	Decision     string   `json:"decision"`
	Reasons      []string `json:"reasons"`
	State        *string  `json:"state"`
	County       *string  `json:"county"`
	City         *string  `json:"city"`
	Zipcode      *string  `json:"zipcode"`
	Jurisdiction *string  `json:"jurisdiction"`
	Lat          *float64 `json:"lat"`
	Lon          *float64 `json:"lon"`
}

// point returns &v, or nil for a location without coordinates (lat and
// lon both 0: no US location lies there).
func point(lat, lon, v float64) *float64 {
	if lat == 0 && lon == 0 {
		return nil
	}
	return &v
}

type resolveResponse struct {
	Query      string          `json:"query"`
	Count      int             `json:"count"`
	Candidates []candidateJSON `json:"candidates"`
}

func refResolve(text string, cands []readmodel.Candidate) any {
	out := resolveResponse{Query: text, Count: len(cands), Candidates: make([]candidateJSON, 0, len(cands))}
	for _, cd := range cands {
		l := cd.Location
		reasons := cd.Reasons
		if reasons == nil {
			reasons = []string{}
		}
		out.Candidates = append(out.Candidates, candidateJSON{
			GeoID: l.GeoID, GeoType: string(l.GeoType), DisplayName: l.DisplayName,
			Score: round4(cd.Score), Confidence: round4(cd.Confidence), MatchMethod: cd.MatchMethod,
			Decision: cd.Decision, Reasons: reasons, State: nullable(l.State), County: nullable(l.County),
			City: nullable(l.City), Zipcode: nullable(l.Zipcode), Jurisdiction: nullable(l.Jurisdiction),
			Lat: point(l.Lat, l.Lon, l.Lat), Lon: point(l.Lat, l.Lon, l.Lon),
		})
	}
	return out
}

type locationJSON struct {
	GeoID            string  `json:"geo_id"`
	GeoType          string  `json:"geo_type"`
	DisplayName      string  `json:"display_name"`
	FullAddress      *string `json:"full_address"`
	State            *string `json:"state"`
	County           *string `json:"county"`
	City             *string `json:"city"`
	Zipcode          *string `json:"zipcode"`
	Jurisdiction     *string `json:"jurisdiction"`
	Lat              float64 `json:"lat"`
	Lon              float64 `json:"lon"`
	PermitCount      int64   `json:"permit_count"`
	LatestPermitDate *string `json:"latest_permit_date"`
}

func refLocation(l readmodel.Location) any {
	return locationJSON{
		GeoID: l.GeoID, GeoType: string(l.GeoType), DisplayName: l.DisplayName,
		FullAddress: nullable(l.FullAddress), State: nullable(l.State), County: nullable(l.County),
		City: nullable(l.City), Zipcode: nullable(l.Zipcode), Jurisdiction: nullable(l.Jurisdiction),
		Lat: l.Lat, Lon: l.Lon, PermitCount: l.PermitCount, LatestPermitDate: nullable(l.LatestPermitDate),
	}
}

type permitLocationJSON struct {
	FullAddress  *string `json:"full_address"`
	City         *string `json:"city"`
	State        *string `json:"state"`
	Zipcode      *string `json:"zipcode"`
	County       *string `json:"county"`
	Jurisdiction *string `json:"jurisdiction"`
}

type geoMatchJSON struct {
	GeoID      string  `json:"geo_id"`
	GeoType    string  `json:"geo_type"`
	Confidence float64 `json:"confidence"`
}

type permitJSON struct {
	PermitID       string             `json:"permit_id"`
	PermitType     *string            `json:"permit_type"`
	WorkType       *string            `json:"work_type"`
	Status         *string            `json:"status"`
	IssueDate      *string            `json:"issue_date"`
	CompletionDate *string            `json:"completion_date"`
	Contractor     *string            `json:"contractor"`
	Valuation      *float64           `json:"valuation"`
	RawDescription *string            `json:"raw_description"`
	Source         string             `json:"source"`
	Location       permitLocationJSON `json:"location"`
	Lat            *float64           `json:"lat"`
	Lon            *float64           `json:"lon"`
	DistanceM      *float64           `json:"distance_m"`
	GeoMatch       *geoMatchJSON      `json:"geo_match"`
}

type permitsResponse struct {
	GeoID      *string      `json:"geo_id"`
	Count      int          `json:"count"`
	Permits    []permitJSON `json:"permits"`
	NextCursor *string      `json:"next_cursor"`
}

func refPermits(geoID string, hits []readmodel.PermitHit, next *string) any {
	out := permitsResponse{GeoID: nullable(geoID), Count: len(hits), Permits: make([]permitJSON, 0, len(hits)), NextCursor: next}
	for _, h := range hits {
		p := h.Permit
		out.Permits = append(out.Permits, permitJSON{
			PermitID: p.PermitID, PermitType: nullable(p.PermitType), WorkType: nullable(p.WorkType), Status: nullable(p.Status),
			IssueDate: nullable(p.IssueDate), CompletionDate: nullable(p.CompletionDate),
			Contractor: nullable(p.Contractor), Valuation: p.Valuation,
			RawDescription: nullable(p.RawDescription), Source: p.Source,
			Lat: p.Lat, Lon: p.Lon, DistanceM: h.DistanceM,
			Location: permitLocationJSON{
				FullAddress: nullable(p.Address.FullAddress), City: nullable(p.Address.City),
				State: nullable(p.Address.State), Zipcode: nullable(p.Address.Zipcode),
				County: nullable(p.Address.County), Jurisdiction: nullable(p.Address.Jurisdiction),
			},
		})
		if geoID != "" {
			out.Permits[len(out.Permits)-1].GeoMatch = &geoMatchJSON{GeoID: h.Match.GeoID, GeoType: string(h.Match.GeoType), Confidence: round4(clamp01(h.Match.Confidence))}
		}
	}
	return out
}

type matchMetadataJSON struct {
	MatchType              string   `json:"match_type"`
	InputAddress           string   `json:"input_address"`
	NormalizedInputAddress string   `json:"normalized_input_address"`
	MatchedFields          []string `json:"matched_fields"`
}

type propertyMatchJSON struct {
	PropertyID       string            `json:"property_id"`
	CanonicalAddress string            `json:"canonical_address"`
	MatchConfidence  float64           `json:"match_confidence"`
	MatchMetadata    matchMetadataJSON `json:"match_metadata"`
	Lat              *float64          `json:"lat"`
	Lon              *float64          `json:"lon"`
	State            *string           `json:"state"`
	City             *string           `json:"city"`
	ParcelID         *string           `json:"parcel_id"`
}

func refProperty(addr string, m readmodel.PropertyMatch) any {
	p := m.Property
	fields := m.MatchedFields
	if fields == nil {
		fields = []string{}
	}
	return propertyMatchJSON{
		PropertyID: p.PropertyID, CanonicalAddress: p.CanonicalAddress, MatchConfidence: round4(clamp01(m.MatchConfidence)),
		MatchMetadata: matchMetadataJSON{MatchType: m.MatchType, InputAddress: addr, NormalizedInputAddress: m.NormalizedInput, MatchedFields: fields},
		Lat:           p.Lat, Lon: p.Lon, State: nullable(p.State), City: nullable(p.City), ParcelID: nullable(p.ParcelID),
	}
}

type propertyPermitJSON struct {
	PermitID       string   `json:"permit_id"`
	PermitType     *string  `json:"permit_type"`
	WorkType       *string  `json:"work_type"`
	Status         *string  `json:"status"`
	IssueDate      *string  `json:"issue_date"`
	CompletionDate *string  `json:"completion_date"`
	Contractor     *string  `json:"contractor"`
	Valuation      *float64 `json:"valuation"`
	RawDescription *string  `json:"raw_description"`
	Source         string   `json:"source"`
}

type propertyPermitsResponse struct {
	PropertyID string               `json:"property_id"`
	Count      int                  `json:"count"`
	Permits    []propertyPermitJSON `json:"permits"`
	NextCursor *string              `json:"next_cursor"`
}

func refPropertyPermits(id string, hits []readmodel.PermitHit, next *string) any {
	out := propertyPermitsResponse{PropertyID: id, Count: len(hits), Permits: make([]propertyPermitJSON, 0, len(hits)), NextCursor: next}
	for _, h := range hits {
		p := h.Permit
		out.Permits = append(out.Permits, propertyPermitJSON{
			PermitID: p.PermitID, PermitType: nullable(p.PermitType), WorkType: nullable(p.WorkType),
			Status: nullable(p.Status), IssueDate: nullable(p.IssueDate), CompletionDate: nullable(p.CompletionDate),
			Contractor: nullable(p.Contractor), Valuation: p.Valuation, RawDescription: nullable(p.RawDescription), Source: p.Source,
		})
	}
	return out
}

type catalogEntryJSON struct {
	SignalKey              string          `json:"signal_key"`
	ActiveSignalVersion    string          `json:"active_signal_version"`
	ActiveWeightsProfileID string          `json:"active_weights_profile_id"`
	Status                 string          `json:"status"`
	Spec                   json.RawMessage `json:"spec"`
}

type catalogResponse struct {
	State   string             `json:"state"`
	Count   int                `json:"count"`
	Signals []catalogEntryJSON `json:"signals"`
}

func refCatalog(state string, entries []readmodel.CatalogEntry) any {
	out := catalogResponse{State: state, Count: len(entries), Signals: make([]catalogEntryJSON, 0, len(entries))}
	for _, e := range entries {
		spec := json.RawMessage(e.Spec)
		if len(spec) == 0 {
			spec = json.RawMessage(`{}`)
		}
		out.Signals = append(out.Signals, catalogEntryJSON{
			SignalKey: e.SignalKey, ActiveSignalVersion: e.ActiveSignalVersion,
			ActiveWeightsProfileID: e.ActiveWeightsProfileID, Status: e.Status, Spec: spec,
		})
	}
	return out
}

type geoSignalJSON struct {
	SignalKey  string          `json:"signal_key"`
	Value      json.RawMessage `json:"value"`
	Score      float64         `json:"score"`
	Confidence float64         `json:"confidence"`
	Decision   string          `json:"decision"`
	Reasons    []string        `json:"reasons"`
	ComputedAt string          `json:"computed_at"`
}

func geoSignalOf(g readmodel.GeoSignal) geoSignalJSON {
	v := json.RawMessage(g.Value)
	if len(v) == 0 {
		v = json.RawMessage(`{}`)
	}
	reasons := g.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	return geoSignalJSON{
		SignalKey: g.SignalKey, Value: v, Score: g.Score, Confidence: g.Confidence, Decision: g.Decision,
		Reasons: reasons, ComputedAt: g.ComputedAt.UTC().Format(time.RFC3339),
	}
}

type geoLocationSignalsResponse struct {
	GeoID             string          `json:"geo_id"`
	GeoType           string          `json:"geo_type"`
	State             *string         `json:"state"`
	Count             int             `json:"count"`
	Signals           []geoSignalJSON `json:"signals"`
	MissingSignalKeys []string        `json:"missing_signal_keys"`
}

func refGeoLocationSignals(id string, ls readmodel.LocationSignals, keys []string) any {
	rows := ls.Signals
	out := geoLocationSignalsResponse{
		GeoID: id, GeoType: string(ls.GeoType), State: nullable(strings.ToUpper(ls.State)), Count: len(rows),
		Signals: make([]geoSignalJSON, 0, len(rows)), MissingSignalKeys: []string{},
	}
	have := map[string]bool{}
	for _, g := range rows {
		have[g.SignalKey] = true
		out.Signals = append(out.Signals, geoSignalOf(g))
	}
	for _, k := range keys {
		if !have[k] {
			out.MissingSignalKeys = append(out.MissingSignalKeys, k)
		}
	}
	return out
}

type geoSearchSignalJSON struct {
	geoSignalJSON
	GeoID       string `json:"geo_id"`
	GeoType     string `json:"geo_type"`
	DisplayName string `json:"display_name"`
}

type geoSearchResponse struct {
	State      string                `json:"state"`
	Count      int                   `json:"count"`
	Signals    []geoSearchSignalJSON `json:"signals"`
	NextCursor *string               `json:"next_cursor"`
}

func refGeoSearch(state string, rows []readmodel.GeoSignal, next *string) any {
	out := geoSearchResponse{State: state, Count: len(rows), Signals: make([]geoSearchSignalJSON, 0, len(rows)), NextCursor: next}
	for _, g := range rows {
		out.Signals = append(out.Signals, geoSearchSignalJSON{
			geoSignalJSON: geoSignalOf(g), GeoID: g.GeoID, GeoType: string(g.GeoType), DisplayName: g.DisplayName,
		})
	}
	return out
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string  `json:"code"`
	Message   string  `json:"message"`
	RequestID *string `json:"request_id"`
}

type gatewayBody struct {
	Message string `json:"message"`
}
