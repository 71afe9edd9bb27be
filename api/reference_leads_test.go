// The reference structs of the lead and stats responses, which encode_leads.go must write alike (TestEncodersAgree).

package api

import (
	"sort"
	"time"

	"github.com/permitd/permitd/readmodel"
)

type leadLocationJSON struct {
	FullAddress *string `json:"full_address"`
	City        *string `json:"city"`
	State       *string `json:"state"`
	Zipcode     *string `json:"zipcode"`
	County      *string `json:"county"`
	CityNorm    *string `json:"city_norm"`
	ZipcodeNorm *string `json:"zipcode_norm"`
	CountyNorm  *string `json:"county_norm"`
}

type leadJSON struct {
	LeadID           string           `json:"lead_id"`
	SignalKey        string           `json:"signal_key"`
	EventDateUsed    *string          `json:"event_date_used"`
	SignalBasis      string           `json:"signal_basis"`
	Confidence       *float64         `json:"confidence"`
	ReasonCodes      []string         `json:"reason_codes"`
	FreshnessLagDays *int             `json:"freshness_lag_days"`
	PermitNumber     *string          `json:"permit_number"`
	Jurisdiction     *string          `json:"jurisdiction"`
	Location         leadLocationJSON `json:"location"`
	MapsURL          *string          `json:"maps_url"`
}

func freshnessLag(date string, today time.Time) *int {
	if date == "" {
		return nil
	}
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil
	}
	n := max(int(today.Sub(d).Hours()/24), 0)
	return &n
}

func leadOf(l readmodel.Lead, today time.Time) leadJSON {
	codes := l.ReasonCodes
	if codes == nil {
		codes = []string{}
	}
	loc := l.Location
	return leadJSON{
		LeadID: l.LeadID, SignalKey: l.SignalKey, EventDateUsed: nullable(l.EventDateUsed), SignalBasis: l.SignalBasis,
		Confidence: l.Confidence, ReasonCodes: codes, FreshnessLagDays: freshnessLag(l.EventDateUsed, today),
		PermitNumber: nullable(l.PermitNumber), Jurisdiction: nullable(l.Jurisdiction),
		Location: leadLocationJSON{
			FullAddress: nullable(loc.FullAddress), City: nullable(loc.City), State: nullable(loc.State),
			Zipcode: nullable(loc.Zipcode), County: nullable(loc.County), CityNorm: nullable(loc.CityNorm),
			ZipcodeNorm: nullable(loc.ZipcodeNorm), CountyNorm: nullable(loc.CountyNorm),
		},
		MapsURL: nullable(l.MapsURL),
	}
}

type leadGroupJSON struct {
	Key   string     `json:"key"`
	Count int        `json:"count"`
	Leads []leadJSON `json:"leads"`
}

type permitLeadsResponse struct {
	GeoID            string          `json:"geo_id"`
	GeoType          *string         `json:"geo_type"`
	Scope            string          `json:"scope"`
	SignalKeys       []string        `json:"signal_keys"`
	MaxFreshnessDays *int            `json:"max_freshness_days"`
	Count            int             `json:"count"`
	NextCursor       *string         `json:"next_cursor"`
	GroupBy          string          `json:"group_by"`
	Leads            []leadJSON      `json:"leads,omitempty"`
	Groups           []leadGroupJSON `json:"groups,omitempty"`
}

// ungroupedLeadsResponse always has leads (decisions.md: "Ungrouped:
// leads present"), an empty page included.
type ungroupedLeadsResponse struct {
	permitLeadsResponse
	Leads []leadJSON `json:"leads"`
}

type groupedLeadsResponse struct {
	permitLeadsResponse
	Groups []leadGroupJSON `json:"groups"`
}

func refLeads(h leadsHead, groupBy string, docs []readmodel.Lead, next *string, today time.Time) any {
	gt := string(h.geoType)
	out := permitLeadsResponse{
		GeoID: h.geoID, GeoType: &gt, Scope: "permit", SignalKeys: h.keys, MaxFreshnessDays: h.maxFresh,
		Count: len(docs), GroupBy: groupBy, NextCursor: next,
	}
	leads := make([]leadJSON, 0, len(docs))
	for _, l := range docs {
		leads = append(leads, leadOf(l, today))
	}
	if groupBy == "none" {
		return ungroupedLeadsResponse{permitLeadsResponse: out, Leads: leads}
	}
	idx := map[string]int{}
	groups := []leadGroupJSON{}
	for i, d := range docs {
		key := d.Location.CityNorm
		if groupBy == "zip" {
			key = d.Location.ZipcodeNorm
		}
		if key == "" {
			key = "unknown"
		}
		j, ok := idx[key]
		if !ok {
			j = len(groups)
			idx[key] = j
			groups = append(groups, leadGroupJSON{Key: key, Leads: []leadJSON{}})
		}
		groups[j].Leads = append(groups[j].Leads, leads[i])
		groups[j].Count++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].Count != groups[j].Count {
			return groups[i].Count > groups[j].Count
		}
		return groups[i].Key < groups[j].Key
	})
	out.Groups = groups
	return groupedLeadsResponse{permitLeadsResponse: out, Groups: groups}
}

type signalCountJSON struct {
	SignalKey string `json:"signal_key"`
	Count     int64  `json:"count"`
}

type valueCountJSON struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

type confidenceDistJSON struct {
	High   int64 `json:"high"`
	Medium int64 `json:"medium"`
	Low    int64 `json:"low"`
}

type freshnessDistJSON struct {
	D0to7   int64 `json:"0_7"`
	D8to14  int64 `json:"8_14"`
	D15to30 int64 `json:"15_30"`
	D31Plus int64 `json:"31_plus"`
}

type permitStatsResponse struct {
	GeoID                  string             `json:"geo_id"`
	GeoType                *string            `json:"geo_type"`
	Scope                  string             `json:"scope"`
	SignalKeys             []string           `json:"signal_keys"`
	MaxFreshnessDays       *int               `json:"max_freshness_days"`
	TotalActiveLeads       int64              `json:"total_active_leads"`
	SignalsBreakdown       []signalCountJSON  `json:"signals_breakdown"`
	TopCounties            []valueCountJSON   `json:"top_counties"`
	TopCities              []valueCountJSON   `json:"top_cities"`
	TopZips                []valueCountJSON   `json:"top_zips"`
	ConfidenceDistribution confidenceDistJSON `json:"confidence_distribution"`
	FreshnessDistribution  freshnessDistJSON  `json:"freshness_distribution"`
}

func valueCounts(v []readmodel.ValueCount) []valueCountJSON {
	out := make([]valueCountJSON, 0, min(len(v), readmodel.StatsTopN))
	for _, vc := range v {
		if len(out) == readmodel.StatsTopN {
			break
		}
		out = append(out, valueCountJSON{Value: vc.Value, Count: vc.Count})
	}
	return out
}

func refStats(h leadsHead, st readmodel.PermitStats) any {
	gt := string(st.GeoType)
	out := permitStatsResponse{
		GeoID: h.geoID, GeoType: &gt, Scope: "permit", SignalKeys: h.keys, MaxFreshnessDays: h.maxFresh,
		TotalActiveLeads: st.Total, SignalsBreakdown: make([]signalCountJSON, 0, len(h.keys)),
		TopCounties: valueCounts(st.TopCounties), TopCities: valueCounts(st.TopCities), TopZips: valueCounts(st.TopZips),
		ConfidenceDistribution: confidenceDistJSON{High: st.ConfidenceHigh, Medium: st.ConfidenceMedium, Low: st.ConfidenceLow},
		FreshnessDistribution:  freshnessDistJSON{D0to7: st.Fresh0to7, D8to14: st.Fresh8to14, D15to30: st.Fresh15to30, D31Plus: st.Fresh31Plus},
	}
	by := map[string]int64{}
	for _, vc := range st.BySignal {
		by[vc.Value] = vc.Count
	}
	for _, k := range h.keys {
		out.SignalsBreakdown = append(out.SignalsBreakdown, signalCountJSON{SignalKey: k, Count: by[k]})
	}
	return out
}
