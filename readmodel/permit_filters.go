package readmodel

import (
	"strings"
	"unicode"
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
}

// IsZero reports whether f filters nothing.
func (f *PermitFilter) IsZero() bool {
	return len(f.PermitTypes) == 0 && len(f.WorkTypes) == 0 && len(f.Statuses) == 0 &&
		f.MinValuation == nil && f.MaxValuation == nil && f.Contractor == ""
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
	return f.Contractor == "" || ContractorKey(p.Contractor) == f.Contractor
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
