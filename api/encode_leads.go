// The v1 encoders of the lead responses: lead pages with their groups, and lead stats (see encode.go for the contract).

package api

import (
	"time"

	jx "github.com/permitd/permitd/api/internal/jsonenc"
	"github.com/permitd/permitd/readmodel"
)

// leadsHead is what a leads or stats response echoes of its request.
type leadsHead struct {
	geoID    string
	geoType  readmodel.GeoType
	keys     []string
	maxFresh *int
}

func appendHead(b []byte, h *leadsHead) []byte {
	b = append(b, `{"geo_id":`...)
	b = jx.String(b, h.geoID)
	b = append(b, `,"geo_type":`...)
	b = jx.String(b, string(h.geoType))
	b = append(b, `,"scope":"permit","signal_keys":`...)
	b = jx.Strings(b, h.keys)
	b = append(b, `,"max_freshness_days":`...)
	return jx.NullInt(b, h.maxFresh)
}

func appendLead(b []byte, l *readmodel.Lead, today time.Time) []byte {
	b = append(b, `{"lead_id":`...)
	b = jx.String(b, l.LeadID)
	b = append(b, `,"signal_key":`...)
	b = jx.String(b, l.SignalKey)
	b = append(b, `,"event_date_used":`...)
	b = jx.NullString(b, l.EventDateUsed)
	b = append(b, `,"signal_basis":`...)
	b = jx.String(b, l.SignalBasis)
	b = append(b, `,"confidence":`...)
	b = jx.NullFloat(b, l.Confidence)
	b = append(b, `,"reason_codes":`...)
	b = jx.Strings(b, l.ReasonCodes)
	b = append(b, `,"freshness_lag_days":`...)
	if lag, ok := freshnessLagDays(l.EventDateUsed, today); ok {
		b = jx.Int(b, int64(lag))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"permit_number":`...)
	b = jx.NullString(b, l.PermitNumber)
	b = append(b, `,"jurisdiction":`...)
	b = jx.NullString(b, l.Jurisdiction)
	loc := &l.Location
	b = append(b, `,"location":{"full_address":`...)
	b = jx.NullString(b, loc.FullAddress)
	b = append(b, `,"city":`...)
	b = jx.NullString(b, loc.City)
	b = append(b, `,"state":`...)
	b = jx.NullString(b, loc.State)
	b = append(b, `,"zipcode":`...)
	b = jx.NullString(b, loc.Zipcode)
	b = append(b, `,"county":`...)
	b = jx.NullString(b, loc.County)
	b = append(b, `,"city_norm":`...)
	b = jx.NullString(b, loc.CityNorm)
	b = append(b, `,"zipcode_norm":`...)
	b = jx.NullString(b, loc.ZipcodeNorm)
	b = append(b, `,"county_norm":`...)
	b = jx.NullString(b, loc.CountyNorm)
	b = append(b, `},"maps_url":`...)
	b = jx.NullString(b, l.MapsURL)
	return append(b, '}')
}

// leadGroup is one group of a grouped leads page.
type leadGroup struct {
	key   string
	count int
}

// groupKey is the key a lead is grouped under: its city_norm or
// zipcode_norm, "unknown" for null.
func groupKey(l *readmodel.Lead, by string) string {
	k := l.Location.CityNorm
	if by == "zip" {
		k = l.Location.ZipcodeNorm
	}
	if k == "" {
		return "unknown"
	}
	return k
}

// appendLeads writes a leads page; with groupBy other than "none" the
// page is partitioned by city_norm or zipcode_norm, groups ordered by
// count descending then key ascending, leads in page order within a
// group.
func appendLeads(b []byte, h *leadsHead, groupBy string, leads []readmodel.Lead, next *string, today time.Time) []byte {
	b = appendHead(b, h)
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(leads)))
	b = append(b, `,"next_cursor":`...)
	b = appendCursor(b, next)
	b = append(b, `,"group_by":`...)
	b = jx.String(b, groupBy)
	if groupBy == "none" {
		// An empty ungrouped page has "leads": [] (decisions.md:
		// ungrouped, leads present).
		b = append(b, `,"leads":[`...)
		for i := range leads {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLead(b, &leads[i], today)
		}
		return append(b, "]}"...)
	}
	var arr [16]leadGroup
	groups := arr[:0]
	for i := range leads {
		k := groupKey(&leads[i], groupBy)
		j := 0
		for j < len(groups) && groups[j].key != k {
			j++
		}
		if j == len(groups) {
			groups = append(groups, leadGroup{key: k})
		}
		groups[j].count++
	}
	// insertion sort: count desc, key asc (keys are distinct)
	for i := 1; i < len(groups); i++ {
		for j := i; j > 0 && (groups[j].count > groups[j-1].count ||
			groups[j].count == groups[j-1].count && groups[j].key < groups[j-1].key); j-- {
			groups[j], groups[j-1] = groups[j-1], groups[j]
		}
	}
	b = append(b, `,"groups":[`...)
	for gi := range groups {
		g := &groups[gi]
		if gi > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = jx.String(b, g.key)
		b = append(b, `,"count":`...)
		b = jx.Int(b, int64(g.count))
		b = append(b, `,"leads":[`...)
		n := 0
		for i := range leads {
			if groupKey(&leads[i], groupBy) != g.key {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			b = appendLead(b, &leads[i], today)
			n++
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

func appendValueCounts(b []byte, v []readmodel.ValueCount) []byte {
	b = append(b, '[')
	for i := range v[:min(len(v), readmodel.StatsTopN)] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"value":`...)
		b = jx.String(b, v[i].Value)
		b = append(b, `,"count":`...)
		b = jx.Int(b, v[i].Count)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendStats(b []byte, h *leadsHead, st *readmodel.PermitStats) []byte {
	b = appendHead(b, h)
	b = append(b, `,"total_active_leads":`...)
	b = jx.Int(b, st.Total)
	b = append(b, `,"signals_breakdown":[`...)
	for i, k := range h.keys {
		if i > 0 {
			b = append(b, ',')
		}
		var n int64
		for _, vc := range st.BySignal {
			if vc.Value == k {
				n = vc.Count
			}
		}
		b = append(b, `{"signal_key":`...)
		b = jx.String(b, k)
		b = append(b, `,"count":`...)
		b = jx.Int(b, n)
		b = append(b, '}')
	}
	b = append(b, `],"top_counties":`...)
	b = appendValueCounts(b, st.TopCounties)
	b = append(b, `,"top_cities":`...)
	b = appendValueCounts(b, st.TopCities)
	b = append(b, `,"top_zips":`...)
	b = appendValueCounts(b, st.TopZips)
	b = append(b, `,"confidence_distribution":{"high":`...)
	b = jx.Int(b, st.ConfidenceHigh)
	b = append(b, `,"medium":`...)
	b = jx.Int(b, st.ConfidenceMedium)
	b = append(b, `,"low":`...)
	b = jx.Int(b, st.ConfidenceLow)
	b = append(b, `},"freshness_distribution":{"0_7":`...)
	b = jx.Int(b, st.Fresh0to7)
	b = append(b, `,"8_14":`...)
	b = jx.Int(b, st.Fresh8to14)
	b = append(b, `,"15_30":`...)
	b = jx.Int(b, st.Fresh15to30)
	b = append(b, `,"31_plus":`...)
	b = jx.Int(b, st.Fresh31Plus)
	return append(b, "}}"...)
}
