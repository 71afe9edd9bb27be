package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/readmodel"
)

func isUpperSnake(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func checkCodes(field string, codes []string) error {
	for _, c := range codes {
		if !isUpperSnake(c) {
			return fmt.Errorf("%w: %s %q is not UPPER_SNAKE", events.ErrInvalid, field, c)
		}
	}
	return nil
}

func unit(f float64) bool { return !math.IsNaN(f) && f >= 0 && f <= 1 }

// isObject reports whether raw is one JSON object: valid JSON whose
// first token is '{' (a scan, no decoding).
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// locate looks a geography up; found is false (and err nil) when it is
// unknown.
func locate(ctx context.Context, look Lookup, geoID string) (readmodel.Location, bool, error) {
	if look == nil {
		return readmodel.Location{}, false, errors.New("indexer: signal projections need a Lookup")
	}
	l, err := look.Location(ctx, readmodel.ParseGeoRef(geoID))
	if errors.Is(err, readmodel.ErrNotFound) {
		return l, false, nil
	}
	if err != nil {
		return l, false, err
	}
	return l, true, nil
}

func projectGeoSignal(ctx context.Context, env events.Envelope, look Lookup) (readmodel.GeoSignal, error) {
	d, err := events.Payload[events.GeoSignal](env)
	if err != nil {
		return readmodel.GeoSignal{}, err
	}
	if env.EntityID != events.GeoSignalID(d.GeoID, d.SignalKey) {
		return readmodel.GeoSignal{}, fmt.Errorf("%w: geo signal entity_id %q is not geo_id|signal_key", events.ErrInvalid, env.EntityID)
	}
	switch {
	case d.GeoID == "" || d.SignalKey == "" || d.SignalVersion == "":
		return readmodel.GeoSignal{}, fmt.Errorf("%w: geo signal needs geo_id, signal_key and signal_version", events.ErrInvalid)
	case !unit(d.Score) || !unit(d.Confidence):
		return readmodel.GeoSignal{}, fmt.Errorf("%w: geo signal score and confidence must be in 0..1", events.ErrInvalid)
	case d.Decision != events.DecisionPositive && d.Decision != events.DecisionNeutral && d.Decision != events.DecisionNegative:
		return readmodel.GeoSignal{}, fmt.Errorf("%w: geo signal decision %q", events.ErrInvalid, d.Decision)
	case !isObject(d.Value):
		return readmodel.GeoSignal{}, fmt.Errorf("%w: geo signal value must be a JSON object", events.ErrInvalid)
	case d.ComputedAt.IsZero():
		return readmodel.GeoSignal{}, fmt.Errorf("%w: geo signal computed_at is required", events.ErrInvalid)
	}
	if err := checkCodes("reason", d.Reasons); err != nil {
		return readmodel.GeoSignal{}, err
	}
	loc, ok, err := locate(ctx, look, d.GeoID)
	if err != nil {
		return readmodel.GeoSignal{}, err
	}
	if !ok {
		return readmodel.GeoSignal{}, unknownGeography{fmt.Errorf("%w: geo signal for unknown geo_id %q", events.ErrInvalid, d.GeoID)}
	}
	reasons := d.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	return readmodel.GeoSignal{
		GeoID:       d.GeoID,
		GeoType:     loc.GeoType,
		DisplayName: loc.DisplayName,
		State:       loc.State,
		SignalKey:   d.SignalKey,
		Value:       d.Value,
		Score:       d.Score,
		Confidence:  d.Confidence,
		Decision:    d.Decision,
		Reasons:     reasons,
		ComputedAt:  d.ComputedAt.UTC(),
		Version:     env.EntityVersion,
	}, nil
}

func projectCatalog(env events.Envelope) (readmodel.CatalogEntry, error) {
	d, err := events.Payload[events.CatalogEntry](env)
	if err != nil {
		return readmodel.CatalogEntry{}, err
	}
	switch {
	case env.EntityID != events.CatalogID(d.State, d.SignalKey):
		return readmodel.CatalogEntry{}, fmt.Errorf("%w: catalog entity_id %q is not state|signal_key", events.ErrInvalid, env.EntityID)
	case len(d.State) != 2 || strings.ToUpper(d.State) != d.State || d.SignalKey == "":
		return readmodel.CatalogEntry{}, fmt.Errorf("%w: catalog entry needs an upper-case state and a signal_key", events.ErrInvalid)
	case d.Family != events.FamilyGeo && d.Family != events.FamilyPermit:
		return readmodel.CatalogEntry{}, fmt.Errorf("%w: catalog family %q", events.ErrInvalid, d.Family)
	case d.ActiveSignalVersion == "" || d.ActiveWeightsProfileID == "" || d.Status == "":
		return readmodel.CatalogEntry{}, fmt.Errorf("%w: catalog entry needs active_signal_version, active_weights_profile_id and status", events.ErrInvalid)
	case !isObject(d.Spec):
		return readmodel.CatalogEntry{}, fmt.Errorf("%w: catalog spec must be a JSON object", events.ErrInvalid)
	}
	return readmodel.CatalogEntry{
		State:                  d.State,
		SignalKey:              d.SignalKey,
		Family:                 d.Family,
		ActiveSignalVersion:    d.ActiveSignalVersion,
		ActiveWeightsProfileID: d.ActiveWeightsProfileID,
		Status:                 d.Status,
		Spec:                   d.Spec,
		Version:                env.EntityVersion,
	}, nil
}

func projectLead(ctx context.Context, env events.Envelope, look Lookup) (readmodel.Lead, error) {
	d, err := events.Payload[events.Lead](env)
	if err != nil {
		return readmodel.Lead{}, err
	}
	switch {
	case !events.IsLeadID(env.EntityID, d.PermitID, d.SignalKey):
		return readmodel.Lead{}, fmt.Errorf("%w: lead entity_id %q is not LeadID(permit_id, signal_key)", events.ErrInvalid, env.EntityID)
	case !isPermitSignalKey(d.SignalKey):
		return readmodel.Lead{}, fmt.Errorf("%w: lead signal_key %q is not a permit signal key", events.ErrInvalid, d.SignalKey)
	case d.SignalBasis != events.BasisObservedEvent && d.SignalBasis != events.BasisInferredTiming:
		return readmodel.Lead{}, fmt.Errorf("%w: lead signal_basis %q", events.ErrInvalid, d.SignalBasis)
	case d.Confidence != nil && !unit(*d.Confidence):
		return readmodel.Lead{}, fmt.Errorf("%w: lead confidence must be in 0..1", events.ErrInvalid)
	case d.AnchorGeoID == "" || d.SignalVersion == "":
		return readmodel.Lead{}, fmt.Errorf("%w: lead needs anchor_geo_id and signal_version", events.ErrInvalid)
	case d.Lat != nil && (*d.Lat < -90 || *d.Lat > 90), d.Lon != nil && (*d.Lon < -180 || *d.Lon > 180):
		return readmodel.Lead{}, fmt.Errorf("%w: lead lat/lon out of range", events.ErrInvalid)
	}
	if !validDate(d.EventDateUsed) {
		return readmodel.Lead{}, fmt.Errorf("%w: lead event_date_used %q is not YYYY-MM-DD", events.ErrInvalid, d.EventDateUsed)
	}
	if err := checkCodes("reason code", d.ReasonCodes); err != nil {
		return readmodel.Lead{}, err
	}
	anchor, ok, err := locate(ctx, look, d.AnchorGeoID)
	if err != nil {
		return readmodel.Lead{}, err
	}
	if !ok || anchor.GeoType == readmodel.GeoProperty {
		// A ZIP or city outside the gazetteer: anchor to the state.
		if d.Address.State == "" {
			return readmodel.Lead{}, unknownGeography{fmt.Errorf("%w: lead anchor %q is unknown and the address has no state", events.ErrInvalid, d.AnchorGeoID)}
		}
		anchor, ok, err = locate(ctx, look, events.GeoID("state", strings.ToUpper(d.Address.State)))
		if err != nil {
			return readmodel.Lead{}, err
		}
		if !ok {
			return readmodel.Lead{}, unknownGeography{fmt.Errorf("%w: lead anchor %q and state %q are unknown", events.ErrInvalid, d.AnchorGeoID, d.Address.State)}
		}
	}
	codes := d.ReasonCodes
	if codes == nil {
		codes = []string{}
	}
	city := d.Address.City
	if city == "" {
		city = anchor.City
	}
	state := strings.ToUpper(d.Address.State)
	if state == "" {
		state = anchor.State
	}
	zip := d.Address.Zipcode
	if zip == "" {
		zip = anchor.Zipcode
	}
	jur := d.Jurisdiction
	if jur == "" {
		jur = anchor.Jurisdiction
	}
	return readmodel.Lead{
		LeadID:        env.EntityID,
		SignalKey:     d.SignalKey,
		EventDateUsed: d.EventDateUsed,
		SignalBasis:   d.SignalBasis,
		Confidence:    d.Confidence,
		ReasonCodes:   codes,
		PermitNumber:  d.PermitNumber,
		Jurisdiction:  jur,
		Location: readmodel.LeadLocation{
			FullAddress: d.Address.FullAddress,
			City:        city,
			State:       state,
			Zipcode:     zip,
			County:      anchor.County,
			CityNorm:    leadNames.of(city),
			ZipcodeNorm: tableCopy(address.NormalizeZip(zip), anchor.Zipcode),
			CountyNorm:  leadNames.of(anchor.County),
		},
		MapsURL: mapsURL(d),
		GeoIDs:  leadAnchors.of(anchor),
		Version: env.EntityVersion,
	}, nil
}

func isPermitSignalKey(k string) bool {
	for _, p := range events.PermitSignalKeys {
		if p == k {
			return true
		}
	}
	return false
}

// anchorsOf lists the non-property geographies a lead anchored at l
// belongs to: l itself and its jurisdiction, city, county and state, in
// that order, without duplicates or blanks.
func anchorsOf(l readmodel.Location) []string {
	ids := [...]string{l.GeoID, l.JurisdictionGeoID, l.CityGeoID, l.CountyGeoID, l.StateGeoID}
	var buf [len(ids)]string
	out := buf[:0]
	for _, id := range ids {
		if id == "" {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == id
		}
		if !dup {
			out = append(out, id)
		}
	}
	return slices.Clip(slices.Clone(out)) // one allocation, its capacity its length
}

// mapsURL links a lead to a map: its coordinates when known, else its
// address; "" when there is neither. It is built in one buffer (one
// allocation, the string): a lead's projection ran it for every lead,
// and strconv.FormatFloat's results, concatenated, were two allocations
// more whenever the compiler did not inline it into here (a build with
// a profile, -pgo, did not).
func mapsURL(d *events.Lead) string {
	const base = "https://www.google.com/maps/search/?api=1&query="
	var buf [192]byte
	b := append(buf[:0], base...)
	if d.Lat != nil && d.Lon != nil {
		b = strconv.AppendFloat(b, *d.Lat, 'f', 6, 64)
		b = append(b, "%2C"...)
		b = strconv.AppendFloat(b, *d.Lon, 'f', 6, 64)
		return string(b)
	}
	addr := d.Address.FullAddress
	if addr == "" {
		return ""
	}
	b = appendQueryEscape(b, addr)
	if d.Address.City != "" {
		b = append(b, "%2C+"...) // ", "
		b = appendQueryEscape(b, d.Address.City)
	}
	if d.Address.State != "" {
		b = append(b, "%2C+"...)
		b = appendQueryEscape(b, d.Address.State)
	}
	if d.Address.Zipcode != "" {
		b = append(b, '+') // " "
		b = appendQueryEscape(b, d.Address.Zipcode)
	}
	return string(b)
}

// appendQueryEscape appends s escaped as url.QueryEscape escapes it: the
// unreserved bytes (letters, digits, '-', '_', '.', '~') as they are, a
// space as '+', every other byte as %XX.
func appendQueryEscape(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b = append(b, c)
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}
