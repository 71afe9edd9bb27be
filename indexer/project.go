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
	var err error
	switch env.Type {
	case events.LocationUpserted:
		var d readmodel.Location
		if d, err = projectLocation(env); err == nil {
			b.Locations = append(b.Locations, d)
		}
	case events.PermitUpserted:
		var d readmodel.Permit
		if d, err = ProjectPermit(ctx, env, look); err == nil {
			b.Permits = append(b.Permits, d)
		}
	case events.PropertyUpserted:
		var d readmodel.Property
		if d, err = ProjectProperty(ctx, env, look); err == nil {
			b.Properties = append(b.Properties, d)
		}
	case events.GeoSignalUpserted:
		var d readmodel.GeoSignal
		if d, err = projectGeoSignal(ctx, env, look); err == nil {
			b.GeoSignals = append(b.GeoSignals, d)
		}
	case events.LeadUpserted:
		var d readmodel.Lead
		if d, err = projectLead(ctx, env, look); err == nil {
			b.Leads = append(b.Leads, d)
		}
	case events.CatalogUpserted:
		var d readmodel.CatalogEntry
		if d, err = projectCatalog(env); err == nil {
			b.Catalog = append(b.Catalog, d)
		}
	default:
		err = fmt.Errorf("%w: no projection for %s in this build", events.ErrInvalid, env.Type)
	}
	return err
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
