package readmodel

import (
	"strings"
	"unicode"
)

// PermitSort is the order of permit pages.
type PermitSort string

// Permit orders. Both end with permit_id ascending.
const (
	// SortIssueDate: issue_date in the direction of PermitQuery.Desc,
	// undated last (the default).
	SortIssueDate PermitSort = ""
	// SortValuationDesc: valuation descending, unknown valuation last;
	// PermitQuery.Desc is ignored. Cursor keys carry the valuation
	// (PermitKey.HasValuation, Valuation).
	SortValuationDesc PermitSort = "valuation_desc"
)

// PermitFilter narrows permit search (and, later, the monthly series and
// export) beyond the geography and the date window. Every set field must
// hold (AND); a list holds when any of its values does (OR). Values come
// folded (FoldValue, ContractorKey): backends compare folded forms.
type PermitFilter struct {
	PermitTypes []string // FoldValue forms; any of
	WorkTypes   []string // FoldValue forms; any of
	Statuses    []string // FoldValue forms; any of
	// MinValuation / MaxValuation are inclusive; either excludes permits
	// whose valuation is unknown.
	MinValuation *float64
	MaxValuation *float64
	Contractor   string // ContractorKey form; "" for none
	// Text is the full-text query q as the caller wrote it (1..200
	// characters), "" for none: a permit passes when q is its permit
	// number (IsPermitNumber) or its description matches q (ParseText).
	Text string
	// Near and RadiusM keep permits within RadiusM metres (great circle,
	// DistanceM) of Near; BBox keeps permits inside the box. Permits
	// without coordinates fail both (permit_geo.go).
	Near    *GeoPoint
	RadiusM float64
	BBox    *BBox
}

// IsZero reports whether f filters nothing.
func (f *PermitFilter) IsZero() bool {
	return len(f.PermitTypes) == 0 && len(f.WorkTypes) == 0 && len(f.Statuses) == 0 &&
		f.MinValuation == nil && f.MaxValuation == nil && f.Contractor == "" && f.Text == "" && !f.HasGeometry()
}

// Match is the reference meaning of f for one permit: what every backend
// must return.
func (f *PermitFilter) Match(p *Permit) bool {
	if !anyFold(f.PermitTypes, p.PermitType) || !anyFold(f.WorkTypes, p.WorkType) || !anyFold(f.Statuses, p.Status) {
		return false
	}
	if f.MinValuation != nil && (p.Valuation == nil || *p.Valuation < *f.MinValuation) {
		return false
	}
	if f.MaxValuation != nil && (p.Valuation == nil || *p.Valuation > *f.MaxValuation) {
		return false
	}
	if f.Contractor != "" && ContractorKey(p.Contractor) != f.Contractor {
		return false
	}
	if f.Text != "" && !IsPermitNumber(f.Text, p.PermitNumber) && !ParseText(f.Text).Match(EnglishTerms(p.RawDescription)) {
		return false
	}
	return f.geoMatch(p)
}

// IsPermitNumber reports whether q names the permit number: equal to it
// ignoring case and q's outer blanks.
func IsPermitNumber(q, number string) bool {
	return number != "" && strings.EqualFold(strings.TrimSpace(q), number)
}

// TextQuery is a full-text query q analysed (english.go): every one of
// Words must be a word of the permit's description, and some word of it
// must begin with Prefix (the last word of q,
// analysed the same way, so "kitch" and "kitchens" both find "kitchen").
// A q with no word left after analysis (only stop words or punctuation)
// matches nothing. This is OpenSearch's match_bool_prefix with operator
// and over an english-analysed field.
type TextQuery struct {
	Words  []string // distinct, in order
	Prefix string   // "" when q has no word
}

// ParseText analyses q.
func ParseText(q string) TextQuery {
	terms := EnglishTerms(q)
	if len(terms) == 0 {
		return TextQuery{}
	}
	var words []string
	for _, w := range terms[:len(terms)-1] {
		if !slicesContains(words, w) {
			words = append(words, w)
		}
	}
	return TextQuery{Words: words, Prefix: terms[len(terms)-1]}
}

// Match reports whether a description that analyses to these words
// passes.
func (t TextQuery) Match(termLists ...[]string) bool {
	if t.Prefix == "" {
		return false
	}
	has := func(pred func(string) bool) bool {
		for _, l := range termLists {
			for _, w := range l {
				if pred(w) {
					return true
				}
			}
		}
		return false
	}
	for _, w := range t.Words {
		if !has(func(x string) bool { return x == w }) {
			return false
		}
	}
	return has(func(x string) bool { return strings.HasPrefix(x, t.Prefix) })
}

func slicesContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func anyFold(want []string, v string) bool {
	if len(want) == 0 {
		return true
	}
	fv := FoldValue(v)
	for _, w := range want {
		if w == fv {
			return true
		}
	}
	return false
}

// FoldValue is the case-insensitive form of a permit_type, work_type or
// status: lower case (Unicode simple folding of each letter), outer
// blanks trimmed. Inner blanks are kept as they are.
func FoldValue(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}

// ContractorKey is the case- and punctuation-insensitive form of a
// contractor name: its letters (lower-cased) and digits only, so
// "ACME Roofing, Inc." and "acme roofing inc" are one key.
func ContractorKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			b.WriteRune(unicode.ToLower(r))
		case unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
