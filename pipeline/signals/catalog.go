package signals

import (
	"encoding/json"
	"sort"

	"github.com/permitd/permitd/events"
)

// keySpec is the catalog spec of one signal key. Its JSON is the `spec`
// object clients read.
type keySpec struct {
	Family          string            `json:"family"`
	Description     string            `json:"description"`
	Basis           string            `json:"basis,omitempty"`
	EventDateUsed   string            `json:"event_date_used,omitempty"`
	Window          string            `json:"window"`
	Qualifies       string            `json:"qualifies"`
	Confidence      string            `json:"confidence"`
	ScoreFormula    string            `json:"score,omitempty"`
	Decision        string            `json:"decision,omitempty"`
	ReasonCodes     map[string]string `json:"reason_codes"`
	ValueFields     map[string]string `json:"value_fields,omitempty"`
	Methodology     string            `json:"methodology"`
	TimingGuidance  string            `json:"timing_guidance,omitempty"`
	DefaultFreshDay int               `json:"default_freshness_days,omitempty"`
}

var leadReasons = map[string]string{
	ReasonIssuedPermit:        "the permit's issue date is recorded",
	ReasonNewConstruction:     "the permit is for new construction",
	ReasonAddition:            "the permit is for an addition",
	ReasonMajorAlteration:     "the permit is an alteration of at least $100,000",
	ReasonSiteWork:            "the permit includes site work (demolition, grading, excavation, shoring, clearing)",
	ReasonDemolition:          "the permit includes demolition",
	ReasonWorkTypeStated:      "the classification comes from the structured permit, work or action type",
	ReasonDescriptionKeywords: "the classification comes from keywords of the free-text description",
	ReasonInferredFromIssue:   "the phase date is inferred from the issue date plus the phase offset",
	ReasonLargeProject:        "declared valuation of $1M or more stretches the phase offsets (x1.5; x2 from $10M)",
	ReasonUnknownValuation:    "no valuation: default timeline, lower confidence",
	ReasonPermitExpired:       "the permit expired: work may not have proceeded",
	ReasonCompletionConfirms:  "a completion date after the phase date confirms the project progressed",
}

const methodologyDoc = "docs/signals.md"

func permitSpec(key string) keySpec {
	codes := map[string]string{}
	add := func(cs ...string) {
		for _, c := range cs {
			codes[c] = leadReasons[c]
		}
	}
	s := keySpec{Family: events.FamilyPermit, Methodology: methodologyDoc, DefaultFreshDay: 60}
	observedConf := "0.80 base; +0.10 WORK_TYPE_STATED; +0.05 when a valuation is declared; -0.15 PERMIT_EXPIRED; clamped to 0.05..0.99, 2 decimals"
	inferred := func(days, altDays int, base string) {
		s.Basis = events.BasisInferredTiming
		s.EventDateUsed = "issue_date + offset days x size factor (1; 1.5 from $1M; 2 from $10M)"
		s.Window = "emitted once event_date_used <= the run's as-of date; freshness counts from event_date_used"
		s.Confidence = base + "; -0.10 UNKNOWN_VALUATION; +0.10 COMPLETION_CONFIRMS_PROGRESS; +0.05 WORK_TYPE_STATED; -0.15 PERMIT_EXPIRED; clamped to 0.05..0.99, 2 decimals"
		s.TimingGuidance = "a nowcast: with the default 60-day window, the permits whose phase most likely began in the last 60 days"
		add(ReasonInferredFromIssue, ReasonNewConstruction, ReasonAddition, ReasonLargeProject, ReasonUnknownValuation, ReasonCompletionConfirms, ReasonWorkTypeStated, ReasonDescriptionKeywords, ReasonPermitExpired)
		if altDays > 0 {
			add(ReasonMajorAlteration)
		}
	}
	switch key {
	case KeySitePrepIssued:
		s.Description = "Site preparation (demolition, grading, excavation, shoring, clearing) permitted: the permit was issued."
		s.Basis, s.EventDateUsed = events.BasisObservedEvent, "issue_date"
		s.Window, s.Qualifies, s.Confidence = "issue_date <= as-of", "issued permits (not cancelled, withdrawn, void, denied or revoked) whose type or description names site work", observedConf
		add(ReasonIssuedPermit, ReasonSiteWork, ReasonDemolition, ReasonWorkTypeStated, ReasonDescriptionKeywords, ReasonPermitExpired)
	case KeyNewConstructionIssued:
		s.Description = "New construction permitted: the permit was issued."
		s.Basis, s.EventDateUsed = events.BasisObservedEvent, "issue_date"
		s.Window, s.Qualifies, s.Confidence = "issue_date <= as-of", "issued permits (not cancelled, withdrawn, void, denied or revoked) for new construction", observedConf
		add(ReasonIssuedPermit, ReasonNewConstruction, ReasonWorkTypeStated, ReasonDescriptionKeywords, ReasonPermitExpired)
	case KeyFramingEarly:
		s.Description = "Framing has likely started (early estimate): 30 days after issue."
		s.Qualifies = "issued new construction or addition permits, not completed before the phase date"
		inferred(30, 0, "0.55 base")
	case KeyFramingLate:
		s.Description = "Framing is very likely under way (late end of the framing-start window): 75 days after issue."
		s.Qualifies = "issued new construction or addition permits, not completed before the phase date"
		inferred(75, 0, "0.70 base")
	case KeyRoughInEarly:
		s.Description = "Rough-in (plumbing, electrical, HVAC) has likely started (early estimate): 90 days after issue; 30 for alterations."
		s.Qualifies = "issued new construction, addition, or alteration permits of at least $100,000, not completed before the phase date"
		inferred(90, 30, "0.50 base")
	case KeyRoughInLate:
		s.Description = "Rough-in is very likely under way (late end of the window): 150 days after issue; 60 for alterations."
		s.Qualifies = "issued new construction, addition, or alteration permits of at least $100,000, not completed before the phase date"
		inferred(150, 60, "0.65 base")
	}
	s.ReasonCodes = codes
	return s
}

func geoSpec(key string) keySpec {
	s := keySpec{Family: events.FamilyGeo, Methodology: methodologyDoc}
	switch key {
	case KeyPermitVelocity:
		s.Description = "Issued permits of the last 90 days against the geography's own baseline (average 90 days of the 360 days before)."
		s.Window = "90 days ending at computed_at; baseline the 360 days before"
		s.Qualifies = "geographies with at least one issued permit in the 450 days before computed_at"
		s.ScoreFormula = "ratio / (1 + ratio); ratio = recent_90d / baseline_90d_avg (2 when there is no baseline but recent activity)"
		s.Confidence = "n / (n + 12), n = permits in both windows"
		s.Decision = "positive: ratio >= 1.25 with n >= 10; negative: ratio <= 0.8; else neutral"
		s.ValueFields = map[string]string{"recent_90d": "issued permits, last 90 days", "baseline_90d_avg": "average per 90 days over the prior 360", "ratio": "recent / baseline", "window_days": "90"}
		s.ReasonCodes = map[string]string{ReasonVelocityAbove: "ratio >= 1.25", ReasonVelocityBelow: "ratio <= 0.8", ReasonVelocityAt: "ratio between", ReasonNoBaseline: "no permits in the baseline window", ReasonLowSample: "fewer than 10 permits in both windows"}
	case KeyNewConstructionHotspot:
		s.Description = "New-construction permits of the last 365 days ranked among peer geographies (same state and geo type)."
		s.Window = "365 days ending at computed_at"
		s.Qualifies = "geographies with at least one issued permit in the 450 days before computed_at"
		s.ScoreFormula = "mid-rank percentile of new_construction_365d among peers"
		s.Confidence = "n / (n + 4) x peers / (peers + 5); without new construction 0.5 x peers / (peers + 5)"
		s.Decision = "positive: top quintile with at least 3; negative: none; else neutral"
		s.ValueFields = map[string]string{"new_construction_365d": "new-construction permits issued, last 365 days", "peer_median": "median among peers", "percentile": "mid-rank percentile", "peer_count": "peers ranked"}
		s.ReasonCodes = map[string]string{ReasonHotspotTop: "percentile >= 0.8 and at least 3", ReasonAbovePeers: "above the peer median", ReasonBelowPeers: "at or below the peer median", ReasonNoNewBuild: "no new construction", ReasonFewPeers: "fewer than 5 peers"}
	case KeyValuationMomentum:
		s.Description = "Declared valuation of permits issued in the last 180 days against the 180 days before."
		s.Window = "180 days ending at computed_at; prior the 180 days before"
		s.Qualifies = "geographies with at least one issued permit in the 450 days before computed_at"
		s.ScoreFormula = "ratio / (1 + ratio); ratio = recent / prior (2 when there is no prior but recent valuation)"
		s.Confidence = "n / (n + 10), n = permits with a valuation in the 360 days"
		s.Decision = "positive: ratio >= 1.2; negative: ratio <= 0.8; neutral otherwise or with fewer than 3 valued permits"
		s.ValueFields = map[string]string{"valuation_recent_180d": "USD, last 180 days", "valuation_prior_180d": "USD, the 180 days before", "ratio": "recent / prior", "permits_with_valuation": "permits with a declared valuation in the 360 days"}
		s.ReasonCodes = map[string]string{ReasonValuationUp: "ratio >= 1.2", ReasonValuationDown: "ratio <= 0.8", ReasonValuationFlat: "ratio between", ReasonValuationSparse: "fewer than 3 valued permits"}
	}
	return s
}

// Catalog returns the catalog entries of one state: every geo and permit
// signal key, active, ordered by signal_key.
func Catalog(state string) []events.CatalogEntry {
	var out []events.CatalogEntry
	add := func(key string, spec keySpec) {
		raw, _ := json.Marshal(spec)
		out = append(out, events.CatalogEntry{
			State: state, SignalKey: key, Family: spec.Family,
			ActiveSignalVersion: SignalVersion, ActiveWeightsProfileID: WeightsProfileID,
			Status: "active", Spec: raw,
		})
	}
	for _, k := range GeoSignalKeys {
		add(k, geoSpec(k))
	}
	for _, k := range events.PermitSignalKeys {
		add(k, permitSpec(k))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SignalKey < out[j].SignalKey })
	return out
}
