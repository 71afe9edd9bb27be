package api

import (
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/permitd/permitd/readmodel"
)

// query reads query parameters under decisions.md's rules: a parameter
// given twice is a 422, unknown parameters are a 422 (params_known.go),
// every failure names
// the parameter.
type query struct{ v url.Values }

// get returns the single value of name; ok is false when absent.
func (q query) get(name string) (string, bool, error) {
	vs, ok := q.v[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", false, invalid(name, "given %d times; pass it once", len(vs))
	}
	return vs[0], true, nil
}

// firstOf returns the first non-empty value among aliases, in order, and
// the name it was found under.
func (q query) firstOf(names ...string) (string, string, error) {
	for _, n := range names {
		s, ok, err := q.get(n)
		if err != nil {
			return "", n, err
		}
		if ok && strings.TrimSpace(s) != "" {
			return s, n, nil
		}
	}
	return "", names[0], nil
}

// text returns a trimmed string of 1..maxLen characters.
func (q query) text(required bool, maxLen int, names ...string) (string, error) {
	s, name, err := q.firstOf(names...)
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(s) {
		return "", invalid(name, "must be valid UTF-8")
	}
	s = strings.TrimSpace(s)
	if s == "" {
		if required {
			return "", invalid(names[0], "is required (1..%d characters)", maxLen)
		}
		return "", nil
	}
	if n := utf8.RuneCountInString(s); n > maxLen {
		return "", invalid(name, "is %d characters long; the maximum is %d", n, maxLen)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", invalid(name, "must not contain control characters")
	}
	return s, nil
}

// intIn returns an integer in [lo, hi], def when absent.
func (q query) intIn(name string, def, lo, hi int) (int, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return def, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, invalid(name, "must be an integer from %d to %d", lo, hi)
	}
	if n < lo || n > hi {
		return 0, invalid(name, "must be from %d to %d; got %d", lo, hi, n)
	}
	return n, nil
}

// floatIn returns a finite number in [lo, hi]; nil when absent.
func (q query) floatIn(name string, lo, hi float64) (*float64, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return nil, err
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, invalid(name, "must be a finite number from %g to %g", lo, hi)
	}
	if f < lo || f > hi {
		return nil, invalid(name, "must be from %g to %g; got %g", lo, hi, f)
	}
	return &f, nil
}

// focus returns the optional focus point of resolve: focus_lat (-90..90)
// and focus_lon (-180..180), both or neither; nil when neither is given.
func (q query) focus() (*readmodel.Point, error) {
	lat, err := q.floatIn("focus_lat", -90, 90)
	if err != nil {
		return nil, err
	}
	lon, err := q.floatIn("focus_lon", -180, 180)
	if err != nil {
		return nil, err
	}
	switch {
	case lat == nil && lon == nil:
		return nil, nil
	case lon == nil:
		return nil, invalid("focus_lon", "is required with focus_lat (give both or neither)")
	case lat == nil:
		return nil, invalid("focus_lat", "is required with focus_lon (give both or neither)")
	}
	return &readmodel.Point{Lat: *lat, Lon: *lon}, nil
}

// boolean accepts true/false/1/0; def when absent.
func (q query) boolean(name string, def bool) (bool, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return def, err
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, invalid(name, "must be true or false")
}

// enum returns one of allowed (exact match after trimming), def when absent.
func (q query) enum(def string, allowed []string, names ...string) (string, error) {
	s, name, err := q.firstOf(names...)
	if err != nil || s == "" {
		if err == nil {
			if _, present, _ := q.get(name); present {
				return "", invalid(name, "must be one of %s", strings.Join(allowed, ", "))
			}
		}
		return def, err
	}
	s = strings.TrimSpace(s)
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", invalid(name, "must be one of %s; got %q", strings.Join(allowed, ", "), clip(s))
}

// date returns a YYYY-MM-DD calendar date, "" when absent.
func (q query) date(name string) (string, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return "", err
	}
	s = strings.TrimSpace(s)
	if !readmodel.IsDay(s) {
		return "", invalid(name, "must be a calendar date YYYY-MM-DD; got %q", clip(s))
	}
	return s, nil
}

// geo returns a required geo_id parameter, parsed once here
// (readmodel.ParseGeoRef): a location's geo_id or a property_id.
func (q query) geo(name string) (readmodel.GeoRef, error) {
	s, err := q.id(name)
	if err != nil {
		return readmodel.GeoRef{}, err
	}
	return readmodel.ParseGeoRef(s), nil
}

// id returns a required entity id parameter (geo_id): trimmed, and of a
// shape some entity can have (checkID).
func (q query) id(name string) (string, error) {
	s, err := q.text(true, 128, name)
	if err != nil {
		return "", err
	}
	return s, checkID(name, s)
}

var stateRe = regexp.MustCompile(`^[A-Za-z]{2}$`)

// state returns an upper-case two-letter code, def when absent.
func (q query) state(name, def string) (string, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return def, err
	}
	s = strings.TrimSpace(s)
	if !stateRe.MatchString(s) {
		return "", invalid(name, "must be a two-letter state code; got %q", clip(s))
	}
	return strings.ToUpper(s), nil
}

// csv splits a comma-separated list, trimming and dropping empty items and
// duplicates; each item must be in allowed when allowed is non-nil.
func (q query) csv(name string, allowed []string) ([]string, error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" || seen[item] {
			continue
		}
		if len(item) > 100 {
			return nil, invalid(name, "has an item longer than 100 characters")
		}
		if allowed != nil && !slices.Contains(allowed, item) {
			return nil, invalid(name, "has unknown value %q; allowed: %s", clip(item), strings.Join(allowed, ", "))
		}
		seen[item] = true
		out = append(out, item)
	}
	if len(out) > 50 {
		return nil, invalid(name, "lists more than 50 keys")
	}
	return out, nil
}

// dateWindow returns the from_date and to_date parameters ("" when
// absent), refusing a window whose from_date is after its to_date.
func (q query) dateWindow() (from, to string, err error) {
	if from, err = q.date("from_date"); err != nil {
		return "", "", err
	}
	if to, err = q.date("to_date"); err != nil {
		return "", "", err
	}
	return from, to, dateRange(from, to)
}

// dateRange checks from <= to.
func dateRange(from, to string) error {
	if from != "" && to != "" && from > to {
		return invalid("from_date", "must not be after to_date (%s > %s)", from, to)
	}
	return nil
}

// clip shortens user input echoed in messages.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	r := []rune(s)
	return string(r[:40]) + "..."
}
