// Package seattle imports the two real City of Seattle (SDCI) permit
// exports bundled in package pipeline/data as permit.upserted and
// property.upserted events: two source schemas, one permit model
// (events.Permit).
//
// The output is a pure function of the bundled data: the same events in the
// same order, byte for byte, on every run. Properties come first (sorted by
// property id), then the permits of the commercial file, then those of the
// multifamily file, each in file order.
//
// Mapping (both files):
//   - entity id events.PermitDocID(source, permit number); entity version
//     and occurred_at are the file's export date (commercial 2015-12-04 ->
//     20151204, multifamily 2025-11-06 -> 20251106), so a newer snapshot of
//     a permit replaces an older one.
//   - status, dates (as YYYY-MM-DD), contractor and description are the
//     source's, verbatim; permit_type is the source's permit type
//     (commercial "Permit Type", multifamily "PermitTypeMapped") and
//     action_type its action (commercial "Action Type", multifamily
//     "PermitTypeDesc"). work_type is the kind of work, mapped from the
//     action into the events.Work* vocabulary the generator shares.
//   - address.line is the source's street line (whitespace collapsed);
//     city SEATTLE and state WA (SDCI permits only inside the city; the
//     multifamily file's empty or misspelt cities are counted in Notes).
//   - source_url: the multifamily "Link" column when it is an absolute
//     http(s) URL; another value is left out and counted in Notes
//     (link_not_a_url).
//   - property_id: the property of the normalised street line in SEATTLE,
//     WA (internal/address.PropertyID); "" when the line has no house
//     number or street name.
//
// Commercial rows have no ZIP, city or description. The ZIP is the nearest
// Washington ZIP point of the gazetteer (zip_source "nearest_zip",
// zip_confidence 0.8/0.7/0.6 by distance: see zipIndex); the description is
// built from the action and the commercial "Work Type" column, which holds
// the review track ("Plan Review" / "No plan review"), not a kind of work
// (description_derived true).
//
// Valuation: the source's value in USD; null with valuation_note
// "placeholder_1" for the commercial placeholder value 1, "placeholder_0"
// for a cost of 0, "missing" when empty.
//
// Bad rows (missing permit number or permit type, unparseable date, value,
// coordinates or housing units, coordinates more than 25 km from every
// Washington ZIP point, malformed or duplicate rows) emit nothing and are
// counted in the Report by file and reason: the importer emits no event
// the indexer would send to the dead-letter topic
// (FuzzImportEmitsAccepted).
package seattle

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

// Sources name the envelope source and the permit source of each file.
const (
	SourceCommercial  = "seattle_sdci_commercial"
	SourceMultifamily = "seattle_sdci_multifamily"
	// SourceProperty is the envelope source of property.upserted events.
	SourceProperty = "seattle_sdci"
)

// City and State of every Seattle permit and property.
const (
	City  = "SEATTLE"
	State = "WA"
)

// fileSpec is one export.
type fileSpec struct {
	name    string
	source  string
	version int64 // export date, YYYYMMDD
}

var files = []fileSpec{
	{data.SeattleCommercialPermits, SourceCommercial, 20151204},
	{data.SeattleMultifamilyPermits, SourceMultifamily, 20251106},
}

// versionTime is the export date of a YYYYMMDD version, midnight UTC.
func versionTime(v int64) time.Time {
	return time.Date(int(v/10000), time.Month(v/100%100), int(v%100), 0, 0, 0, 0, time.UTC)
}

// Report says what an import emitted and which rows it left out, and why.
type Report struct {
	Files []FileReport `json:"files"`
	// Properties is the number of property.upserted events.
	Properties int `json:"properties"`
	// Events is the total number of events emitted.
	Events int `json:"events"`
	// ZipCheck compares the nearest-ZIP derivation with the source ZIP on
	// the rows that have both a ZIP and coordinates.
	ZipCheck ZipCheck `json:"zip_check"`
	// Elapsed is the wall time of the import.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// FileReport is the outcome of one file.
type FileReport struct {
	File    string `json:"file"`
	Source  string `json:"source"`
	Version int64  `json:"version"`
	// Rows is the number of data rows read (header excluded).
	Rows int `json:"rows"`
	// Permits is the number of permit.upserted events emitted.
	Permits int `json:"permits"`
	// BadRows is the number of rows that emitted nothing; Bad says why.
	BadRows int   `json:"bad_rows"`
	Bad     []Bad `json:"bad"`
	// Notes counts the kept rows that needed a documented repair or
	// derivation (valuation_placeholder_1, zip_nearest, no_address, ...).
	Notes map[string]int `json:"notes"`
}

// Bad counts the rows of one file left out for one reason.
type Bad struct {
	Reason string `json:"reason"`
	Rows   int    `json:"rows"`
	// Lines holds the first few 1-based line numbers of the file.
	Lines []int `json:"lines"`
}

// ZipCheck is the agreement of derived and source ZIPs.
type ZipCheck struct {
	Compared int `json:"compared"`
	Agreed   int `json:"agreed"`
}

// File returns the report of the named file (a data.* name).
func (r Report) File(name string) (FileReport, bool) {
	for _, f := range r.Files {
		if f.File == name {
			return f, true
		}
	}
	return FileReport{}, false
}

// WriteText writes the report for people: counts per file, then every bad
// reason with its first lines, then the notes.
func (r Report) WriteText(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	for _, f := range r.Files {
		p("%s (%s, version %d): %d rows, %d permits, %d bad rows\n", f.File, f.Source, f.Version, f.Rows, f.Permits, f.BadRows)
		for _, b := range f.Bad {
			p("  bad %-28s %6d rows, first lines %v\n", b.Reason, b.Rows, b.Lines)
		}
		for _, k := range slices.Sorted(maps.Keys(f.Notes)) {
			p("  note %-27s %6d rows\n", k, f.Notes[k])
		}
	}
	if r.ZipCheck.Compared > 0 {
		p("nearest-ZIP check: %d of %d rows with a source ZIP agree (%.1f%%)\n",
			r.ZipCheck.Agreed, r.ZipCheck.Compared, 100*float64(r.ZipCheck.Agreed)/float64(r.ZipCheck.Compared))
	}
	p("%d properties, %d events in %v\n", r.Properties, r.Events, r.Elapsed.Round(time.Millisecond))
	return err
}

const maxBadLines = 5

func (f *FileReport) bad(reason string, line int) {
	f.BadRows++
	for i := range f.Bad {
		if b := &f.Bad[i]; b.Reason == reason {
			b.Rows++
			if len(b.Lines) < maxBadLines {
				b.Lines = append(b.Lines, line)
			}
			return
		}
	}
	f.Bad = append(f.Bad, Bad{Reason: reason, Rows: 1, Lines: []int{line}})
}

func (f *FileReport) note(what string) { f.Notes[what]++ }

// Import reads the two Seattle exports and the gazetteer's Washington ZIP
// points through open (data.Open for the bundled copies) and calls emit
// once per event: every property, then every permit (see the package
// documentation for order and mapping). Nothing is emitted unless both
// files were read. Import stops at the first error of emit or when ctx is
// done, returning the report so far.
func Import(ctx context.Context, open func(name string) (io.ReadCloser, error), emit func(events.Envelope) error) (Report, error) {
	start := time.Now()
	var rep Report
	zips, err := loadZipIndex(open, State)
	if err != nil {
		return finish(rep, start), err
	}
	var permits []permitRow
	for _, spec := range files {
		fr, rows, err := readFile(ctx, open, spec, zips, &rep.ZipCheck)
		rep.Files = append(rep.Files, fr)
		if err != nil {
			return finish(rep, start), err
		}
		permits = append(permits, rows...)
	}
	props := properties(permits)

	for i, p := range props {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return finish(rep, start), err
			}
		}
		env, err := events.New(events.PropertyUpserted, p.id, p.version, versionTime(p.version), SourceProperty, &p.prop)
		if err != nil {
			return finish(rep, start), fmt.Errorf("seattle: property %s: %w", p.id, err)
		}
		if err := emit(env); err != nil {
			return finish(rep, start), err
		}
		rep.Properties++
		rep.Events++
	}
	fileIdx := map[string]int{}
	for i, f := range rep.Files {
		fileIdx[f.Source] = i
	}
	for i := range permits {
		r := &permits[i]
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return finish(rep, start), err
			}
		}
		id := events.PermitDocID(r.permit.Source, r.permit.PermitNumber)
		env, err := events.New(events.PermitUpserted, id, r.version, versionTime(r.version), r.permit.Source, &r.permit)
		if err != nil {
			return finish(rep, start), fmt.Errorf("seattle: permit %s: %w", id, err)
		}
		if err := emit(env); err != nil {
			return finish(rep, start), err
		}
		rep.Files[fileIdx[r.permit.Source]].Permits++
		rep.Events++
	}
	return finish(rep, start), nil
}

func finish(rep Report, start time.Time) Report {
	rep.Elapsed = time.Since(start)
	return rep
}
