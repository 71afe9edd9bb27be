// Package gazetteer imports the bundled US gazetteer (package
// pipeline/data) as location.upserted events: the 52 states (50 + DC + PR),
// every Census county, every simplemaps place, one permitting jurisdiction
// per incorporated place and per county, and every USPS ZIP of GeoNames.
//
// The output is a pure function of the bundled data: the same events in the
// same order, byte for byte, on every run. Every entity carries
// DatasetVersion as its entity_version and OccurredAt as its occurred_at;
// bump both whenever the data or the derivation changes, so the indexer
// replaces the previous gazetteer.
//
// Derivations worth knowing (see also README.md):
//   - Display names: state "Washington"; county "King County, WA"; city
//     "Seattle, WA"; ZIP "98101 (Seattle, WA)"; jurisdiction "City of
//     Seattle, WA" for an incorporated place and "King County, WA
//     (unincorporated)" for a county's own authority.
//   - Incorporated comes from simplemaps' flag, which over-reports (WA: 345
//     TRUE for about 281 real cities and towns). Every TRUE place gets a
//     "City of <name>" jurisdiction, towns and villages included.
//   - Population is a ranking prior, not a statistic: a place has
//     simplemaps' figure (the urban-area figure for big cities); a county
//     the sum over its places; a county jurisdiction the sum over its
//     unincorporated places; a state the sum over its places; a ZIP 0
//     (unknown, omitted).
//   - A state's lat/lon is the land-area-weighted mean of its counties'
//     internal points; a county's is its Census internal point.
package gazetteer

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

// Source is the envelope source of every gazetteer event.
const Source = "gazetteer"

// DatasetVersion is the entity_version of every gazetteer event: the date
// the bundled data was assembled (YYYYMMDD) and a two-digit revision. Bump
// it (and OccurredAt) whenever the data or the derivation changes.
const DatasetVersion int64 = 2025112201

// OccurredAt is the occurred_at of every gazetteer event.
var OccurredAt = time.Date(2025, 11, 22, 0, 0, 0, 0, time.UTC)

// Geo types the gazetteer emits, in emission order.
const (
	TypeState        = "state"
	TypeCounty       = "county"
	TypeJurisdiction = "jurisdiction"
	TypeCity         = "city"
	TypeZip          = "zip"
)

// Report says what an import emitted and what it left out.
type Report struct {
	// Locations counts emitted events per geo_type.
	Locations map[string]int `json:"locations"`
	// Events is the total number of events emitted.
	Events int `json:"events"`
	// Skipped lists every source row that produced no location, by file
	// and reason, ordered by file then reason.
	Skipped []Skip `json:"skipped"`
	// Adjustments counts the documented repairs and fallbacks applied
	// (remapped county codes, ZIP-to-place matching method, ...).
	Adjustments map[string]int `json:"adjustments"`
	// Elapsed is the wall time of the import.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Skip counts the rows of one file left out for one reason.
type Skip struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
	Rows   int    `json:"rows"`
	// Lines holds the first few 1-based line numbers, for inspection.
	Lines []int `json:"lines"`
}

// SkippedRows sums the skipped rows of file ("" for every file).
func (r Report) SkippedRows(file string) int {
	n := 0
	for _, s := range r.Skipped {
		if file == "" || s.File == file {
			n += s.Rows
		}
	}
	return n
}

const maxSkipLines = 5

func (r *Report) skip(file, reason string, line int) {
	for i := range r.Skipped {
		s := &r.Skipped[i]
		if s.File == file && s.Reason == reason {
			s.Rows++
			if len(s.Lines) < maxSkipLines {
				s.Lines = append(s.Lines, line)
			}
			return
		}
	}
	r.Skipped = append(r.Skipped, Skip{File: file, Reason: reason, Rows: 1, Lines: []int{line}})
}

func (r *Report) adjust(what string) {
	if r.Adjustments == nil {
		r.Adjustments = map[string]int{}
	}
	r.Adjustments[what]++
}

// Import reads the gazetteer sources through open (data.Open for the
// bundled copies) and calls emit once per location, in a fixed order:
// states by USPS code, counties by FIPS, jurisdictions by identity
// ("city:<id>" then "county:<fips>"), cities by simplemaps id, ZIPs by
// code. Nothing is emitted unless the whole gazetteer was built and every
// geo_id it references is among the emitted locations. Import stops at the
// first error of emit or when ctx is done, returning the report so far.
func Import(ctx context.Context, open func(name string) (io.ReadCloser, error), emit func(events.Envelope) error) (Report, error) {
	start := time.Now()
	rep := Report{Locations: map[string]int{}, Adjustments: map[string]int{}}
	locs, err := build(ctx, open, &rep)
	if err != nil {
		return finish(rep, start), err
	}
	if err := validate(locs); err != nil {
		return finish(rep, start), err
	}
	for i := range locs {
		l := &locs[i]
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return finish(rep, start), err
			}
		}
		env, err := events.New(events.LocationUpserted, l.id, DatasetVersion, OccurredAt, Source, &l.loc)
		if err != nil {
			return finish(rep, start), fmt.Errorf("gazetteer: %s %s: %w", l.loc.GeoType, l.id, err)
		}
		if err := emit(env); err != nil {
			return finish(rep, start), err
		}
		rep.Locations[l.loc.GeoType]++
		rep.Events++
	}
	return finish(rep, start), nil
}

func finish(rep Report, start time.Time) Report {
	sort.Slice(rep.Skipped, func(i, j int) bool {
		a, b := rep.Skipped[i], rep.Skipped[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Reason < b.Reason
	})
	rep.Elapsed = time.Since(start)
	return rep
}

// WriteNDJSON imports the bundled gazetteer and writes one JSON envelope
// per line to w.
func WriteNDJSON(ctx context.Context, w io.Writer) (Report, error) {
	return writeNDJSON(ctx, data.Open, w)
}

func writeNDJSON(ctx context.Context, open func(string) (io.ReadCloser, error), w io.Writer) (Report, error) {
	nw := events.NewNDJSONWriter(w, 256<<10)
	rep, err := Import(ctx, open, nw.Write)
	if err != nil {
		return rep, err
	}
	return rep, nw.Flush()
}

// validate checks that geo_ids are unique and every referenced geo_id is
// among the locations.
func validate(locs []located) error {
	ids := make(map[string]bool, len(locs))
	for _, l := range locs {
		if ids[l.id] {
			return fmt.Errorf("gazetteer: duplicate geo_id %s (%s %q)", l.id, l.loc.GeoType, l.loc.DisplayName)
		}
		ids[l.id] = true
	}
	for i := range locs {
		l := &locs[i].loc
		var missing string
		check := func(ref string) {
			if ref != "" && missing == "" && !ids[ref] {
				missing = ref
			}
		}
		check(l.StateGeoID)
		check(l.CountyGeoID)
		check(l.CityGeoID)
		check(l.JurisdictionGeoID)
		for _, ref := range l.CountyGeoIDs {
			check(ref)
		}
		if missing != "" {
			return fmt.Errorf("gazetteer: %s %q references unknown geo_id %s", l.GeoType, l.DisplayName, missing)
		}
	}
	return nil
}
