package indexer

import (
	"context"
	"fmt"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Lookup is what projections may read while denormalising: locations by
// geo_id (for geo matching and display names). The read model's Reader
// implements it; a projection never reads anything else.
type Lookup interface {
	Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error)
}

// Project turns one decoded envelope into read-model documents. Given the
// same envelope and the same looked-up locations it yields the same batch.
// An error wrapping events.ErrInvalid means the event can never be
// projected (dead letter); any other error is transient (retry).
func Project(ctx context.Context, env events.Envelope, look Lookup) (readmodel.Batch, error) {
	var b readmodel.Batch
	if err := projectInto(ctx, env, look, &b); err != nil {
		return readmodel.Batch{}, err
	}
	return b, nil
}

// projectInto is Project appending to b: on success it appends the
// envelope's documents, on error nothing. The indexer projects a whole
// batch into one readmodel.Batch this way, without a batch per event.
func projectInto(ctx context.Context, env events.Envelope, look Lookup, b *readmodel.Batch) error {
	if env.Type.IsDelete() {
		kind, ok := kindOf[env.Type.Family()]
		if !ok {
			return fmt.Errorf("%w: no read-model kind for %s", events.ErrInvalid, env.Type)
		}
		b.Deletes = append(b.Deletes, readmodel.Delete{Kind: kind, ID: env.EntityID, Version: env.EntityVersion})
		return nil
	}
	switch env.Type {
	case events.LocationUpserted:
		return into(&b.Locations)(projectLocation(env))
	case events.PermitUpserted:
		return into(&b.Permits)(ProjectPermit(ctx, env, look))
	case events.PropertyUpserted:
		return into(&b.Properties)(ProjectProperty(ctx, env, look))
	case events.GeoSignalUpserted:
		return into(&b.GeoSignals)(projectGeoSignal(ctx, env, look))
	case events.LeadUpserted:
		return into(&b.Leads)(projectLead(ctx, env, look))
	case events.CatalogUpserted:
		return into(&b.Catalog)(projectCatalog(env))
	}
	return fmt.Errorf("%w: no projection for %s in this build", events.ErrInvalid, env.Type)
}

// into returns what appends a projected document to dst unless its
// projection failed, and passes the error on.
func into[T any](dst *[]T) func(T, error) error {
	return func(d T, err error) error {
		if err == nil {
			*dst = append(*dst, d)
		}
		return err
	}
}

var kindOf = map[string]readmodel.Kind{
	"location":    readmodel.KindLocation,
	"permit":      readmodel.KindPermit,
	"property":    readmodel.KindProperty,
	"geo_signal":  readmodel.KindGeoSignal,
	"permit_lead": readmodel.KindLead,
	"catalog":     readmodel.KindCatalog,
}

// ProjectLocation maps a location.upserted envelope to its document.
func ProjectLocation(env events.Envelope) (readmodel.Location, error) {
	return projectLocation(env)
}

func projectLocation(env events.Envelope) (readmodel.Location, error) {
	d, err := events.Payload[events.Location](env)
	if err != nil {
		return readmodel.Location{}, err
	}
	gt, ok := readmodel.ParseGeoType(d.GeoType)
	if !ok || gt == readmodel.GeoProperty {
		return readmodel.Location{}, fmt.Errorf("%w: location geo_type %q", events.ErrInvalid, d.GeoType)
	}
	if d.Name == "" || d.DisplayName == "" || len(d.State) != 2 {
		return readmodel.Location{}, fmt.Errorf("%w: location needs name, display_name and a 2-letter state", events.ErrInvalid)
	}
	if d.Lat < -90 || d.Lat > 90 || d.Lon < -180 || d.Lon > 180 {
		return readmodel.Location{}, fmt.Errorf("%w: location lat/lon out of range", events.ErrInvalid)
	}
	return readmodel.Location{
		GeoID:             env.EntityID,
		GeoType:           gt,
		Name:              d.Name,
		DisplayName:       d.DisplayName,
		FullAddress:       d.FullAddress,
		State:             d.State,
		StateName:         d.StateName,
		County:            d.County,
		City:              d.City,
		Zipcode:           d.Zipcode,
		Jurisdiction:      d.Jurisdiction,
		StateGeoID:        d.StateGeoID,
		CountyGeoID:       d.CountyGeoID,
		CountyGeoIDs:      d.CountyGeoIDs,
		CityGeoID:         d.CityGeoID,
		JurisdictionGeoID: d.JurisdictionGeoID,
		Aliases:           d.Aliases,
		Lat:               d.Lat,
		Lon:               d.Lon,
		Population:        d.Population,
		Incorporated:      d.Incorporated,
		Version:           env.EntityVersion,
	}, nil
}
