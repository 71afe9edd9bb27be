package seattle

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

// permitRow is one kept source row.
type permitRow struct {
	permit  events.Permit
	version int64
	street  string // normalised street line, "" without a property
	recency string // issue date, else application date: what "most recent" means
}

// record reads the fields of one CSV row by column name.
type record struct {
	cols map[string]int
	rec  []string
}

func (r record) get(col string) string {
	return strings.TrimSpace(r.rec[r.cols[col]])
}

// rowFunc maps one row to a permit, or returns the reason it is bad.
type rowFunc func(p *parser, r record) (permitRow, string)

// restFunc fills the fields only one export carries, after the common
// columns were read into row with their valuation note; it returns the
// reason the row is bad, "" when it is good.
type restFunc func(p *parser, r record, row *permitRow, note string) string

// parser holds what the row functions share while one file is read.
type parser struct {
	rep   *FileReport
	zips  *zipIndex
	check *ZipCheck
}

var (
	commercialHeader = []string{
		"Application/Permit Number", "Permit Type", "Address", "Category", "Action Type", "Work Type",
		"Value", "Application Date", "Issue Date", "Final Date", "Expiration Date", "Status",
		"Master Use Permit", "Latitude", "Longitude",
	}
	multifamilyHeader = []string{
		"", "PermitNum", "PermitClass", "PermitClassMapped", "PermitTypeMapped", "PermitTypeDesc",
		"Description", "HousingUnits", "HousingUnitsRemoved", "HousingUnitsAdded", "EstProjectCost",
		"AppliedDate", "IssuedDate", "ExpiresDate", "CompletedDate", "StatusCurrent", "RelatedMup",
		"OriginalAddress1", "OriginalCity", "OriginalState", "OriginalZip", "ContractorCompanyName",
		"Link", "Latitude", "Longitude", "Location1", "TotalDaysPlanReview", "DaysInitialPlanReview",
		"DaysPlanReviewCity", "DaysOutCorrections", "NumberReviewCycles", "InitialReviewCompleteDate",
		"PlanReviewCompleteDate", "DaysIssuePermitCity", "ReadyToIssueDate", "Zoning", "DwellingUnitType",
		"StandardPlan", "DependentBuilding", "ParentPermitNum", "HousingCategory", "AppliedYear",
		"IssuedYear", "CompletedYear",
	}
)

func headerOf(spec fileSpec) []string {
	if spec.source == SourceCommercial {
		return commercialHeader
	}
	return multifamilyHeader
}

func rowOf(spec fileSpec) rowFunc {
	if spec.source == SourceCommercial {
		return commercialColumns.row(commercialRest)
	}
	return multifamilyColumns.row(multifamilyRest)
}

// readFile reads one export; a wrong header or an unreadable file is an
// error, a bad row is counted.
func readFile(ctx context.Context, open func(string) (io.ReadCloser, error), spec fileSpec, zips *zipIndex, check *ZipCheck) (FileReport, []permitRow, error) {
	rep := FileReport{File: spec.name, Source: spec.source, Version: spec.version, Bad: []Bad{}, Notes: map[string]int{}}
	rc, err := open(spec.name)
	if err != nil {
		return rep, nil, fmt.Errorf("seattle: open %s: %w", spec.name, err)
	}
	defer rc.Close()
	cr := csv.NewReader(rc)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return rep, nil, fmt.Errorf("seattle: read %s header: %w", spec.name, err)
	}
	if want := headerOf(spec); !slices.Equal(header, want) {
		return rep, nil, fmt.Errorf("seattle: %s: unexpected header %q", spec.name, header)
	}
	cols := make(map[string]int, len(header))
	for i, h := range header {
		cols[h] = i
	}
	p := &parser{rep: &rep, zips: zips, check: check}
	row := rowOf(spec)
	seen := map[string]bool{}
	var out []permitRow
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			rep.Rows++
			rep.bad("malformed_row", pe.StartLine)
			continue
		}
		if err != nil {
			return rep, nil, fmt.Errorf("seattle: read %s: %w", spec.name, err)
		}
		rep.Rows++
		line, _ := cr.FieldPos(0)
		if rep.Rows%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return rep, nil, err
			}
		}
		if len(rec) != len(header) {
			rep.bad("malformed_row", line)
			continue
		}
		r, reason := row(p, record{cols: cols, rec: rec})
		if reason == "" && seen[r.permit.PermitNumber] {
			reason = "duplicate_permit_number"
		}
		if reason != "" {
			rep.bad(reason, line)
			continue
		}
		seen[r.permit.PermitNumber] = true
		r.version = spec.version
		r.permit.Source = spec.source
		out = append(out, r)
	}
	return rep, out, nil
}

// commonColumns names, in one export, the columns of the fields both
// exports carry.
type commonColumns struct {
	number     string
	dateLayout string
	// dates: application, issue, completion, expiration.
	dates            [4]string
	completionReason string // the skip reason of a bad completion date
	value            string
}

var (
	commercialColumns = commonColumns{
		number: "Application/Permit Number", dateLayout: "1/2/06",
		dates:            [4]string{"Application Date", "Issue Date", "Final Date", "Expiration Date"},
		completionReason: "bad_final_date", value: "Value",
	}
	multifamilyColumns = commonColumns{
		number: "PermitNum", dateLayout: time.DateOnly,
		dates:            [4]string{"AppliedDate", "IssuedDate", "CompletedDate", "ExpiresDate"},
		completionReason: "bad_completed_date", value: "EstProjectCost",
	}
)

// read fills the fields both exports carry: the permit number, the four
// dates, the valuation (and its note) and the coordinates. reason is the
// skip reason of the first bad one, "" when all are good.
func (c *commonColumns) read(r record, pm *events.Permit) (note, reason string) {
	if pm.PermitNumber = r.get(c.number); pm.PermitNumber == "" {
		return "", "missing_permit_number"
	}
	dsts := [4]*string{&pm.ApplicationDate, &pm.IssueDate, &pm.CompletionDate, &pm.ExpirationDate}
	reasons := [4]string{"bad_application_date", "bad_issue_date", c.completionReason, "bad_expiration_date"}
	var ok bool
	for i, col := range c.dates {
		if *dsts[i], ok = parseDate(r.get(col), c.dateLayout); !ok {
			return "", reasons[i]
		}
	}
	if pm.Valuation, note, ok = parseValuation(r.get(c.value)); !ok {
		return "", "bad_value"
	}
	if pm.Lat, pm.Lon, ok = parseCoordinates(r.get("Latitude"), r.get("Longitude")); !ok {
		return "", "bad_coordinates"
	}
	return note, ""
}

// row reads the common columns, then the rest of the export's fields.
func (c *commonColumns) row(rest restFunc) rowFunc {
	return func(p *parser, r record) (permitRow, string) {
		var row permitRow
		note, reason := c.read(r, &row.permit)
		if reason == "" && row.permit.Lat != nil && !p.zips.inState(*row.permit.Lat, *row.permit.Lon) {
			reason = "bad_coordinates"
		}
		if reason == "" {
			reason = rest(p, r, &row, note)
		}
		if reason == "" && row.permit.PermitType == "" {
			// The event contract requires one: the indexer would send
			// the permit to the dead-letter topic.
			reason = "missing_permit_type"
		}
		return row, reason
	}
}

func commercialRest(p *parser, r record, row *permitRow, note string) string {
	pm := &row.permit
	pm.PermitType = r.get("Permit Type")
	pm.ActionType = r.get("Action Type")
	pm.WorkType = commercialWork(pm.ActionType, pm.PermitType)
	pm.Status = r.get("Status")
	pm.Description = commercialDescription(pm.PermitType, pm.WorkType, r.get("Work Type"))
	pm.DescriptionDerived = true
	p.finish(row, r.get("Address"), "", note)
	return ""
}

func multifamilyRest(p *parser, r record, row *permitRow, note string) string {
	pm := &row.permit
	if units := r.get("HousingUnits"); units != "" {
		n, err := strconv.Atoi(units)
		if err != nil || n < 0 {
			return "bad_housing_units"
		}
		pm.HousingUnits = &n
	}
	pm.PermitType = r.get("PermitTypeMapped")
	pm.ActionType = r.get("PermitTypeDesc")
	if pm.ActionType == "NONE" {
		pm.ActionType = ""
	}
	pm.WorkType = multifamilyWork(pm.ActionType)
	pm.Status = r.get("StatusCurrent")
	pm.Description = r.get("Description")
	pm.Contractor = r.get("ContractorCompanyName")
	if pm.SourceURL = r.get("Link"); pm.SourceURL != "" && !isWebURL(pm.SourceURL) {
		pm.SourceURL = ""
		p.rep.note("link_not_a_url")
	}

	switch city := address.NormalizeCity(r.get("OriginalCity")); {
	case city == "":
		p.rep.note("city_missing_assumed_seattle")
	case city != City:
		p.rep.note("city_corrected_to_seattle")
	}
	switch state := address.NormalizeState(r.get("OriginalState")); {
	case state == "":
		p.rep.note("state_missing_assumed_wa")
	case state != State:
		p.rep.note("state_corrected_to_wa")
	}
	p.finish(row, r.get("OriginalAddress1"), r.get("OriginalZip"), note)
	return ""
}

// finish sets what both files derive alike: address, ZIP, property and
// the valuation note.
func (p *parser) finish(row *permitRow, line, sourceZip, valuationNote string) {
	pm := &row.permit
	if valuationNote != "" {
		pm.ValuationNote = valuationNote
		p.rep.note("valuation_" + valuationNote)
	}
	pm.Address = events.PermitAddress{Line: strings.Join(strings.Fields(line), " "), City: City, State: State}

	zip, valid := sourceZIP(sourceZip)
	if sourceZip != "" && !valid {
		p.rep.note("zip_invalid_in_source")
	}
	switch {
	case valid:
		pm.Address.Zipcode, pm.Address.ZipSource, pm.Address.ZipConfidence = zip, "source", 1
		if pm.Lat != nil {
			near, _, _ := p.zips.nearest(*pm.Lat, *pm.Lon)
			p.check.Compared++
			if near == zip {
				p.check.Agreed++
			}
		}
	case pm.Lat != nil:
		near, _, conf := p.zips.nearest(*pm.Lat, *pm.Lon)
		pm.Address.Zipcode, pm.Address.ZipSource, pm.Address.ZipConfidence = near, "nearest_zip", conf
		p.rep.note("zip_nearest")
	default:
		p.rep.note("zip_unknown")
	}
	if pm.Lat == nil {
		p.rep.note("no_coordinates")
	}

	if pm.Address.Line == "" {
		p.rep.note("no_address")
	}
	parsed := address.Normalize(pm.Address.Line)
	if pm.PropertyID = address.PropertyID(parsed, City, State); pm.PropertyID != "" {
		row.street = parsed.Street()
	} else if pm.Address.Line != "" {
		p.rep.note("address_not_addressable")
	}
	row.recency = pm.IssueDate
	if row.recency == "" {
		row.recency = pm.ApplicationDate
	}
}

// sourceZIP reads a source ZIP ("98102", "98102.0", "98102-1234").
func sourceZIP(s string) (string, bool) {
	s = strings.TrimSuffix(s, ".0")
	if len(s) == 10 && s[5] == '-' {
		s = s[:5]
	}
	if len(s) != 5 {
		return "", false
	}
	for i := 0; i < 5; i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	return s, true
}

// isWebURL reports whether s is an absolute http or https URL with a
// host, as the event contract's source_url (format uri) wants a link.
func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// parseDate returns s in layout as YYYY-MM-DD; "" stays "".
func parseDate(s, layout string) (string, bool) {
	if s == "" {
		return "", true
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return "", false
	}
	return t.Format(time.DateOnly), true
}

// parseValuation reads a USD amount with optional thousands separators.
// An empty value, 0 and the placeholder 1 are unknown (nil) with a note.
func parseValuation(s string) (*float64, string, bool) {
	if s == "" {
		return nil, "missing", true
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, "", false
	}
	switch v {
	case 0:
		return nil, "placeholder_0", true
	case 1:
		return nil, "placeholder_1", true
	}
	return &v, "", true
}

// parseCoordinates reads lat/lon; both empty is no location, anything
// else must be a valid pair.
func parseCoordinates(lat, lon string) (*float64, *float64, bool) {
	if lat == "" && lon == "" {
		return nil, nil, true
	}
	la, err1 := strconv.ParseFloat(lat, 64)
	lo, err2 := strconv.ParseFloat(lon, 64)
	if err1 != nil || err2 != nil || la < -90 || la > 90 || lo < -180 || lo > 180 || (la == 0 && lo == 0) {
		return nil, nil, false
	}
	return &la, &lo, true
}

// commercialWork maps the commercial Action Type (and, when it is empty,
// the Permit Type) to a work type.
func commercialWork(action, permitType string) string {
	switch action {
	case "NEW":
		return events.WorkNewConstruction
	case "ADD/ALT", "ALTER":
		return events.WorkAdditionAlter
	case "DEMOLITION":
		return events.WorkDemolition
	case "GRADING":
		return events.WorkGrading
	case "TEMP":
		return events.WorkTemporary
	case "NO CONSTRUCTION":
		return events.WorkNoConstruction
	case "CURB CUT":
		return events.WorkCurbCut
	case "RELOCATION":
		return events.WorkRelocation
	case "":
		if permitType == "Demolition" {
			return events.WorkDemolition
		}
	}
	return ""
}

// multifamilyWork maps the multifamily PermitTypeDesc to a work type.
func multifamilyWork(action string) string {
	switch action {
	case "New":
		return events.WorkNewConstruction
	case "Addition/Alteration":
		return events.WorkAdditionAlter
	case "Change of Use Only - No Construction":
		return events.WorkNoConstruction
	case "Temporary":
		return events.WorkTemporary
	case "Demolition":
		return events.WorkDemolition
	}
	return ""
}

// commercialDescription builds the description a commercial row lacks
// from its permit type, work type and review track:
// "Commercial construction: addition/alteration (plan review)".
func commercialDescription(permitType, work, review string) string {
	var b strings.Builder
	b.WriteString("Commercial")
	if permitType != "" {
		b.WriteString(" " + strings.ToLower(permitType))
	} else {
		b.WriteString(" permit")
	}
	if work != "" && !strings.EqualFold(work, permitType) {
		b.WriteString(": " + strings.ToLower(work))
	}
	if review != "" {
		b.WriteString(" (" + strings.ToLower(review) + ")")
	}
	return b.String()
}
