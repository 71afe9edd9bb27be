package seattle

import (
	"sort"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

// property is one property.upserted to emit.
type property struct {
	id      string
	version int64
	prop    events.Property
}

// properties derives one property per property id from the kept permits,
// sorted by id. Its lat/lon is that of its most recent permit with
// coordinates (issue date, else application date; ties to the later
// permit in import order); its ZIP the most confident of its permits' ZIPs,
// the most recent among equals. Its version is the newest version of its
// permits.
func properties(permits []permitRow) []property {
	type agg struct {
		street        string
		version       int64
		loc, zip      *permitRow
		zipConfidence float64
	}
	byID := map[string]*agg{}
	for i := range permits {
		r := &permits[i]
		id := r.permit.PropertyID
		if id == "" {
			continue
		}
		a := byID[id]
		if a == nil {
			a = &agg{street: r.street}
			byID[id] = a
		}
		a.version = max(a.version, r.version)
		if r.permit.Lat != nil && (a.loc == nil || r.recency >= a.loc.recency) {
			a.loc = r
		}
		if c := r.permit.Address.ZipConfidence; r.permit.Address.Zipcode != "" &&
			(a.zip == nil || c > a.zipConfidence || (c == a.zipConfidence && r.recency >= a.zip.recency)) {
			a.zip, a.zipConfidence = r, c
		}
	}
	out := make([]property, 0, len(byID))
	for id, a := range byID {
		p := events.Property{NormalizedAddress: a.street, City: City, State: State}
		if a.zip != nil {
			p.Zipcode = a.zip.permit.Address.Zipcode
		}
		if a.loc != nil {
			p.Lat, p.Lon = a.loc.permit.Lat, a.loc.permit.Lon
		}
		p.CanonicalAddress = address.Canonical(a.street, City, State, p.Zipcode)
		out = append(out, property{id: id, version: a.version, prop: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
