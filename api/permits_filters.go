package api

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// permitStatuses is the status vocabulary of permitd's sources, folded
// (readmodel.FoldValue): the generated corpus and the two Seattle
// datasets. A status filter value outside it is a 422, so a typo
// ("isued") is an error rather than an empty answer. A new source adds
// its statuses here (and to the OpenAPI document's StatusFilter).
var permitStatuses = []string{
	"ap closed", "application completed", "approved to occupy", "awaiting information",
	"canceled", "cancelled", "cert of occupancy authorized", "closed", "completed",
	"corrections required", "expired", "in review", "inspections completed", "issued",
	"permit closed", "permit finaled", "permit issued", "phase issued", "ready for issuance",
	"reviews completed", "reviews in process", "withdrawn",
}

// maxValuation bounds min_valuation and max_valuation (US dollars).
const maxValuation = 1e12

// permitFilterParams are the filter parameters every permit read shares
// (search, and the monthly series and export that follow it).
var permitFilterParams = []string{"permit_type", "work_type", "status", "min_valuation", "max_valuation", "contractor", "q"}

// permitSortParam is permit search's sort (issue_date, valuation_desc).
const permitSortParam = "sort"

// maxTextWords bounds the analysed words of q.
const maxTextWords = 16

// permitFilter reads the filter parameters into a filter that keeps the
// geometry geom holds (read before by q.geometry). The second result is
// the canonical binding of the filter parameters (name, value pairs) for
// cursors, the geometry's not included.
func (q query) permitFilter(geom *readmodel.PermitFilter) (readmodel.PermitFilter, []string, error) {
	f := readmodel.PermitFilter{Near: geom.Near, RadiusM: geom.RadiusM, BBox: geom.BBox}
	var err error
	if f.PermitTypes, err = q.foldedList("permit_type", nil); err != nil {
		return f, nil, err
	}
	if f.WorkTypes, err = q.foldedList("work_type", nil); err != nil {
		return f, nil, err
	}
	if f.Statuses, err = q.foldedList("status", permitStatuses); err != nil {
		return f, nil, err
	}
	if f.MinValuation, err = q.floatIn("min_valuation", 0, maxValuation); err != nil {
		return f, nil, err
	}
	if f.MaxValuation, err = q.floatIn("max_valuation", 0, maxValuation); err != nil {
		return f, nil, err
	}
	if f.MinValuation != nil && f.MaxValuation != nil && *f.MinValuation > *f.MaxValuation {
		return f, nil, invalid("min_valuation", "must not be above max_valuation (%g > %g)", *f.MinValuation, *f.MaxValuation)
	}
	contractor, err := q.text(false, 200, "contractor")
	if err != nil {
		return f, nil, err
	}
	if contractor != "" {
		f.Contractor = readmodel.ContractorKey(contractor)
		if f.Contractor == "" {
			return f, nil, invalid("contractor", "must contain a letter or a digit")
		}
	}
	text, err := q.text(false, 200, "q")
	if err != nil {
		return f, nil, err
	}
	if text != "" {
		n := len(readmodel.EnglishTerms(text))
		if n == 0 {
			return f, nil, invalid("q", "has no searchable word (only stop words or punctuation)")
		}
		if n > maxTextWords {
			return f, nil, invalid("q", "has %d words; the maximum is %d", n, maxTextWords)
		}
		f.Text = text
	}
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	binding := []string{
		"permit_type", strings.Join(f.PermitTypes, ","), "work_type", strings.Join(f.WorkTypes, ","),
		"status", strings.Join(f.Statuses, ","), "min_valuation", num(f.MinValuation),
		"max_valuation", num(f.MaxValuation), "contractor", f.Contractor, "q", f.Text,
	}
	return f, binding, nil
}

// foldedList reads a comma list of case-insensitive values: folded,
// blanks and empty items dropped, duplicates collapsed, sorted (so the
// cursor binding does not depend on the order given). Each item is 1..100
// characters without control characters; at most 50 items. When allowed
// is non-nil every item must be in it.
func (q query) foldedList(name string, allowed []string) ([]string, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return nil, err
	}
	if !validUTF8(s) {
		return nil, invalid(name, "must be valid UTF-8")
	}
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = readmodel.FoldValue(item)
		if item == "" || slices.Contains(out, item) {
			continue
		}
		if len([]rune(item)) > 100 {
			return nil, invalid(name, "has an item longer than 100 characters")
		}
		if strings.ContainsFunc(item, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, invalid(name, "must not contain control characters")
		}
		if allowed != nil && !slices.Contains(allowed, item) {
			return nil, invalid(name, "has unknown value %q; allowed (any case): %s", clip(item), strings.Join(allowed, ", "))
		}
		if len(out) == 50 {
			return nil, invalid(name, "lists more than 50 values")
		}
		out = append(out, item)
	}
	if len(out) == 0 {
		return nil, invalid(name, "must list at least one value")
	}
	slices.Sort(out)
	return out, nil
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }

// Geometry bounds.
const (
	maxRadiusM = 50_000
	maxBBoxDeg = 2.0
)

// permitGeometryParams are the geometry parameters of permit reads.
var permitGeometryParams = []string{"near", "radius_m", "bbox"}

// geometry reads near + radius_m and bbox into f; the second result is
// their cursor binding.
func (q query) geometry(f *readmodel.PermitFilter) ([]string, error) {
	near, hasNear, err := q.get("near")
	if err != nil {
		return nil, err
	}
	radius, err := q.floatIn("radius_m", 1, maxRadiusM)
	if err != nil {
		return nil, err
	}
	var bind []string
	switch {
	case hasNear:
		nums, err := numbers("near", near, 2, "lat,lon")
		if err != nil {
			return nil, err
		}
		if nums[0] < -90 || nums[0] > 90 {
			return nil, invalid("near", "latitude must be from -90 to 90; got %g", nums[0])
		}
		if nums[1] < -180 || nums[1] > 180 {
			return nil, invalid("near", "longitude must be from -180 to 180; got %g", nums[1])
		}
		if radius == nil {
			return nil, invalid("radius_m", "is required with near (1..%d metres)", maxRadiusM)
		}
		f.Near, f.RadiusM = &readmodel.GeoPoint{Lat: nums[0], Lon: nums[1]}, *radius
		bind = append(bind, "near", fmtFloat(nums[0])+","+fmtFloat(nums[1]), "radius_m", fmtFloat(*radius))
	case radius != nil:
		return nil, invalid("radius_m", "is only valid with near")
	}
	box, hasBox, err := q.get("bbox")
	if err != nil {
		return nil, err
	}
	if hasBox {
		n, err := numbers("bbox", box, 4, "min_lon,min_lat,max_lon,max_lat")
		if err != nil {
			return nil, err
		}
		for _, lat := range []float64{n[1], n[3]} {
			if lat < -90 || lat > 90 {
				return nil, invalid("bbox", "latitudes must be from -90 to 90; got %g", lat)
			}
		}
		for _, lon := range []float64{n[0], n[2]} {
			if lon < -180 || lon > 180 {
				return nil, invalid("bbox", "longitudes must be from -180 to 180; got %g", lon)
			}
		}
		if n[0] > n[2] {
			return nil, invalid("bbox", "min_lon %g is above max_lon %g (a box may not cross the antimeridian)", n[0], n[2])
		}
		if n[1] > n[3] {
			return nil, invalid("bbox", "min_lat %g is above max_lat %g", n[1], n[3])
		}
		if n[2]-n[0] > maxBBoxDeg || n[3]-n[1] > maxBBoxDeg {
			return nil, invalid("bbox", "spans more than %g degrees on a side", maxBBoxDeg)
		}
		f.BBox = &readmodel.BBox{MinLon: n[0], MinLat: n[1], MaxLon: n[2], MaxLat: n[3]}
		bind = append(bind, "bbox", fmtFloat(n[0])+","+fmtFloat(n[1])+","+fmtFloat(n[2])+","+fmtFloat(n[3]))
	}
	return bind, nil
}

// numbers parses exactly n comma-separated finite numbers.
func numbers(name, s string, n int, shape string) ([]float64, error) {
	parts := strings.Split(s, ",")
	if len(parts) != n {
		return nil, invalid(name, "must be %s (%d numbers); got %q", shape, n, clip(s))
	}
	out := make([]float64, n)
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, invalid(name, "must be %s, finite numbers; got %q", shape, clip(s))
		}
		out[i] = f
	}
	return out, nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
