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

// batchArena holds the copies cloneBatch makes of a batch's permits',
// properties' and locations' slices and numbers: one allocation per kind
// of field for the whole batch. Each copy is capped at its length, and
// empty slices and nil numbers copy as nil, as the documents' Clone
// methods do. The permits' and properties' copies are read only while
// the batch is applied (the sides keep compact forms, permit_doc.go,
// properties.go), so the arena goes with the batch; the locations' lists
// are kept by the stored documents, which keep their batch's list arena
// (a few kilobytes) while one of them is live.
type batchArena struct {
	links  []readmodel.GeoLink
	floats []float64
	strs   []string
}

func newBatchArena(b *readmodel.Batch) *batchArena {
	nLink, nFloat, nStr := 0, 0, 0
	count := func(fs ...*float64) {
		for _, f := range fs {
			if f != nil {
				nFloat++
			}
		}
	}
	for i := range b.Permits {
		p := &b.Permits[i]
		nLink += len(p.GeoLinks)
		count(p.Valuation, p.Lat, p.Lon)
	}
	for i := range b.Properties {
		p := &b.Properties[i]
		nLink += len(p.GeoLinks)
		count(p.Lat, p.Lon)
	}
	for i := range b.Locations {
		nStr += len(b.Locations[i].CountyGeoIDs) + len(b.Locations[i].Aliases)
	}
	for i := range b.Leads {
		count(b.Leads[i].Confidence)
	}
	a := &batchArena{}
	if nLink > 0 {
		a.links = make([]readmodel.GeoLink, nLink)
	}
	if nFloat > 0 {
		a.floats = make([]float64, nFloat)
	}
	if nStr > 0 {
		a.strs = make([]string, nStr)
	}
	return a
}

func (a *batchArena) float(f *float64) *float64 {
	if f == nil {
		return nil
	}
	a.floats[0] = *f
	out := &a.floats[0]
	a.floats = a.floats[1:]
	return out
}

func (a *batchArena) geoLinks(l []readmodel.GeoLink) []readmodel.GeoLink {
	if len(l) == 0 {
		return nil
	}
	n := copy(a.links, l)
	out := a.links[:n:n]
	a.links = a.links[n:]
	return out
}

// permit is a copy of p (as readmodel.Permit.Clone).
func (a *batchArena) permit(p readmodel.Permit) readmodel.Permit {
	p.Valuation, p.Lat, p.Lon = a.float(p.Valuation), a.float(p.Lat), a.float(p.Lon)
	p.GeoLinks = a.geoLinks(p.GeoLinks)
	return p
}

// property is a copy of p (as readmodel.Property.Clone).
func (a *batchArena) property(p readmodel.Property) readmodel.Property {
	p.Lat, p.Lon = a.float(p.Lat), a.float(p.Lon)
	p.GeoLinks = a.geoLinks(p.GeoLinks)
	return p
}

// lead is a copy of l (as cloneLead), its confidence in the arena: a
// lead's was an allocation of its own, 0.37 of an event's in
// BenchmarkHandleMix (10.79 allocations an event before, 10.42 after).
func (a *batchArena) lead(l readmodel.Lead) readmodel.Lead {
	conf := l.Confidence
	l.Confidence = nil
	l = cloneLead(l)
	l.Confidence = a.float(conf)
	return l
}

// location is a copy of l (as readmodel.Location.Clone).
func (a *batchArena) location(l readmodel.Location) readmodel.Location {
	l.CountyGeoIDs = takeStrings(&a.strs, l.CountyGeoIDs)
	l.Aliases = takeStrings(&a.strs, l.Aliases)
	return l
}
