package signals

import (
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

// Permit signal keys.
const (
	KeySitePrepIssued        = "site_prep_issued_nowcast"
	KeyNewConstructionIssued = "new_construction_issued_nowcast"
	KeyFramingEarly          = "framing_nowcast_early"
	KeyFramingLate           = "framing_window_late"
	KeyRoughInEarly          = "rough_in_nowcast_early"
	KeyRoughInLate           = "rough_in_window_late"
)

// Permit lead reason codes (documented in the catalog spec and
// docs/signals.md).
const (
	ReasonIssuedPermit        = "ISSUED_PERMIT"
	ReasonNewConstruction     = "NEW_CONSTRUCTION"
	ReasonAddition            = "ADDITION"
	ReasonMajorAlteration     = "MAJOR_ALTERATION"
	ReasonSiteWork            = "SITE_WORK"
	ReasonDemolition          = "DEMOLITION"
	ReasonWorkTypeStated      = "WORK_TYPE_STATED"
	ReasonDescriptionKeywords = "DESCRIPTION_KEYWORDS"
	ReasonInferredFromIssue   = "INFERRED_FROM_ISSUE_DATE"
	ReasonLargeProject        = "LARGE_PROJECT_TIMELINE"
	ReasonUnknownValuation    = "UNKNOWN_VALUATION"
	ReasonPermitExpired       = "PERMIT_EXPIRED"
	ReasonCompletionConfirms  = "COMPLETION_CONFIRMS_PROGRESS"
)

// phase is one inferred construction phase: its key, the days after
// issue at which it is dated (scaled by project size), the base
// confidence of the inference.
type phase struct {
	key        string
	days       int
	altDays    int // for alterations without structural work; 0: does not apply
	confidence float64
}

var phases = []phase{
	{key: KeyFramingEarly, days: 30, confidence: 0.55},
	{key: KeyFramingLate, days: 75, confidence: 0.70},
	{key: KeyRoughInEarly, days: 90, altDays: 30, confidence: 0.50},
	{key: KeyRoughInLate, days: 150, altDays: 60, confidence: 0.65},
}

var (
	reNewWord     = regexp.MustCompile(`\bnew\b`)
	reNewDesc     = regexp.MustCompile(`\b(new (construction|building|structure|single|multi|mixed|residen|duplex|triplex|townhouse|rowhouse|apartment|dwelling|commercial)|construct(ion of)? (a |an )?(new |\d+|one|two|three|four|five|six|seven|eight|nine|ten|single|multi|mixed|residential|commercial|apartment|duplex|triplex|townhouse|rowhouse|building|structure|dwelling)|erect)`)
	reAlterDesc   = regexp.MustCompile(`\b(alter|alteration|remodel|renovat|repair|tenant improvement|interior)`)
	reAddition    = regexp.MustCompile(`\baddition\b|\badd/alt\b|\badd\b`)
	reSiteWork    = regexp.MustCompile(`\b(grad(e|ing)|excavat\w*|shoring|clearing|site (prep\w*|work|development)|earthwork|retaining wall|below[- ]grade)`)
	reDemolition  = regexp.MustCompile(`\bdemo(lition|lish\w*)?\b`)
	reCancelled   = regexp.MustCompile(`cancel|withdr|void|denied|revoked|abandon`)
	reExpired     = regexp.MustCompile(`expire`)
	reAlterStated = regexp.MustCompile(`\balt(er|eration)?\b|\bremodel\b|\brenovation\b`)
)

// class is what the permit's text says about its work.
type class struct {
	newConstruction, addition, alteration, siteWork, demolition bool
	// stated: the classification comes from the structured permit, work or
	// action type rather than the free-text description.
	stated bool
}

func classify(p events.Permit) class {
	structured := strings.ToLower(strings.Join([]string{p.PermitType, p.WorkType, p.ActionType}, " | "))
	desc := strings.ToLower(p.Description)
	var c class
	switch {
	case reNewWord.MatchString(structured):
		c.newConstruction, c.stated = true, true
	case reNewDesc.MatchString(desc) && !reAlterDesc.MatchString(desc):
		c.newConstruction = true
	}
	if reDemolition.MatchString(structured) {
		c.demolition, c.stated = true, true
	} else if reDemolition.MatchString(desc) {
		c.demolition = true
	}
	c.siteWork = c.demolition || reSiteWork.MatchString(structured) || reSiteWork.MatchString(desc)
	if reSiteWork.MatchString(structured) {
		c.stated = true
	}
	if !c.newConstruction {
		c.addition = reAddition.MatchString(structured) && strings.Contains(desc, "addition") || strings.Contains(desc, "addition to")
		c.alteration = reAlterStated.MatchString(structured) || reAlterDesc.MatchString(desc)
		if c.alteration && reAlterStated.MatchString(structured) {
			c.stated = true
		}
	}
	return c
}

// permitFacts are what lead derivation needs of one permit.
type permitFacts struct {
	id        string
	version   int64
	occurred  time.Time
	p         events.Permit
	class     class     // classify(p)
	issue     time.Time // zero: not issued
	completed time.Time // zero: no completion
	zip       string
}

func parseDate(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// sizeFactor stretches phase timing for larger projects.
func sizeFactor(v *float64) (float64, bool) {
	switch {
	case v == nil:
		return 1, false
	case *v >= 10_000_000:
		return 2, true
	case *v >= 1_000_000:
		return 1.5, true
	}
	return 1, true
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func clampConf(f float64) float64 { return round2(min(max(f, 0.05), 0.99)) }

// derive returns the leads a permit qualifies for as of asOf, in the
// canonical key order. Leads dated after asOf are not (yet) emitted.
func derive(f permitFacts, asOf time.Time) []events.Lead {
	p := f.p
	status := strings.ToLower(p.Status)
	if f.issue.IsZero() || reCancelled.MatchString(status) || f.issue.After(asOf) {
		return nil
	}
	c := f.class
	expired := reExpired.MatchString(status)
	_, valued := sizeFactor(p.Valuation)
	base := func(key, basis string, date time.Time, conf float64, codes ...string) events.Lead {
		if expired {
			conf -= 0.15
			codes = append(codes, ReasonPermitExpired)
		}
		if c.stated {
			codes = append(codes, ReasonWorkTypeStated)
		} else {
			codes = append(codes, ReasonDescriptionKeywords)
		}
		cf := clampConf(conf)
		return events.Lead{
			SignalKey:     key,
			PermitID:      f.id,
			PermitNumber:  p.PermitNumber,
			EventDateUsed: date.Format(time.DateOnly),
			SignalBasis:   basis,
			Confidence:    &cf,
			ReasonCodes:   codes,
			Address: events.LeadAddress{
				FullAddress: p.Address.Line,
				City:        p.Address.City,
				State:       strings.ToUpper(p.Address.State),
				Zipcode:     p.Address.Zipcode,
			},
			Lat:           p.Lat,
			Lon:           p.Lon,
			AnchorGeoID:   anchorOf(p),
			SignalVersion: SignalVersion,
		}
	}
	observed := 0.80
	if c.stated {
		observed += 0.10
	}
	if valued {
		observed += 0.05
	}
	var out []events.Lead
	if c.siteWork {
		codes := []string{ReasonIssuedPermit, ReasonSiteWork}
		if c.demolition {
			codes = append(codes, ReasonDemolition)
		}
		out = append(out, base(KeySitePrepIssued, events.BasisObservedEvent, f.issue, observed, codes...))
	}
	if c.newConstruction {
		out = append(out, base(KeyNewConstructionIssued, events.BasisObservedEvent, f.issue, observed, ReasonIssuedPermit, ReasonNewConstruction))
	}
	structural := c.newConstruction || c.addition
	if !structural && !c.alteration {
		return out
	}
	size, _ := sizeFactor(p.Valuation)
	for _, ph := range phases {
		days := ph.days
		if !structural {
			if ph.altDays == 0 || !bigAlteration(p.Valuation) {
				continue
			}
			days = ph.altDays
		}
		date := f.issue.AddDate(0, 0, int(math.Round(float64(days)*size)))
		if date.After(asOf) {
			continue
		}
		if !f.completed.IsZero() && f.completed.Before(date) {
			continue // finished before the phase's inferred date: timing does not hold
		}
		conf := ph.confidence
		codes := []string{ReasonInferredFromIssue}
		switch {
		case c.newConstruction:
			codes = append(codes, ReasonNewConstruction)
		case c.addition:
			codes = append(codes, ReasonAddition)
		default:
			codes = append(codes, ReasonMajorAlteration)
		}
		if size > 1 {
			codes = append(codes, ReasonLargeProject)
		}
		if !valued {
			conf -= 0.10
			codes = append(codes, ReasonUnknownValuation)
		}
		if !f.completed.IsZero() {
			conf += 0.10
			codes = append(codes, ReasonCompletionConfirms)
		}
		if c.stated {
			conf += 0.05
		}
		out = append(out, base(ph.key, events.BasisInferredTiming, date, conf, codes...))
	}
	return out
}

// bigAlteration: alterations qualify for rough-in leads from $100,000 of
// declared valuation (unknown valuation does not qualify).
func bigAlteration(v *float64) bool { return v != nil && *v >= 100_000 }

// anchorOf is the lead's most specific geography: its ZIP, else its
// state.
func anchorOf(p events.Permit) string {
	if z := address.NormalizeZip(p.Address.Zipcode); z != "" {
		return events.GeoID("zip", z)
	}
	return events.GeoID("state", strings.ToUpper(p.Address.State))
}
