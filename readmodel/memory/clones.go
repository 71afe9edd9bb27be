package memory

import (
	"encoding/json"

	"github.com/permitd/permitd/readmodel"
)

// Page copies. A page hands out deep copies of its documents (nothing
// internal is handed out); these make them with one allocation per kind
// of field for the whole page instead of one per field and document, so
// a read allocates (and assists the collector) less. Each copied slice is
// capped at its length: appending to one never writes into another.
// Empty slices copy as nil, as the documents' Clone methods do.

// takeStrings copies s to the front of *arena and advances it.
func takeStrings(arena *[]string, s []string) []string {
	if len(s) == 0 {
		return nil
	}
	n := copy(*arena, s)
	out := (*arena)[:n:n]
	*arena = (*arena)[n:]
	return out
}

// cloneLeadRecs is a copy of the leads of recs (as readmodel.Lead.Clone).
func cloneLeadRecs(recs []*leadRec) []readmodel.Lead {
	out := make([]readmodel.Lead, len(recs))
	nStr, nConf := 0, 0
	for _, r := range recs {
		nStr += len(r.lead.ReasonCodes) + len(r.lead.GeoIDs)
		if r.lead.Confidence != nil {
			nConf++
		}
	}
	strs := make([]string, nStr)
	confs := make([]float64, nConf)
	for i, r := range recs {
		l := r.lead
		if l.Confidence != nil {
			confs[0] = *l.Confidence
			l.Confidence = &confs[0]
			confs = confs[1:]
		}
		l.ReasonCodes = takeStrings(&strs, l.ReasonCodes)
		l.GeoIDs = takeStrings(&strs, l.GeoIDs)
		out[i] = l
	}
	return out
}

// cloneGeoSignals is a copy of gs (as readmodel.GeoSignal.Clone).
func cloneGeoSignals(gs []*readmodel.GeoSignal) []readmodel.GeoSignal {
	out := make([]readmodel.GeoSignal, len(gs))
	nStr, nByte := 0, 0
	for _, g := range gs {
		nStr += len(g.Reasons)
		nByte += len(g.Value)
	}
	strs := make([]string, nStr)
	bytes := make([]byte, nByte)
	for i, g := range gs {
		c := *g
		c.Value = nil
		if len(g.Value) > 0 {
			n := copy(bytes, g.Value)
			c.Value = json.RawMessage(bytes[:n:n])
			bytes = bytes[n:]
		}
		c.Reasons = takeStrings(&strs, g.Reasons)
		out[i] = c
	}
	return out
}

// cloneLocation is a copy of l (as readmodel.Location.Clone) with one
// allocation for both of its lists.
func cloneLocation(l readmodel.Location) readmodel.Location {
	strs := make([]string, len(l.CountyGeoIDs)+len(l.Aliases))
	l.CountyGeoIDs = takeStrings(&strs, l.CountyGeoIDs)
	l.Aliases = takeStrings(&strs, l.Aliases)
	return l
}
