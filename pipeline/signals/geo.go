package signals

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/permitd/permitd/events"
)

// Geo signal keys.
const (
	KeyPermitVelocity         = "permit_velocity"
	KeyNewConstructionHotspot = "new_construction_hotspot"
	KeyValuationMomentum      = "valuation_momentum"
)

// GeoSignalKeys lists the geo signal keys, ascending.
var GeoSignalKeys = []string{KeyNewConstructionHotspot, KeyPermitVelocity, KeyValuationMomentum}

// Geo signal reason codes.
const (
	ReasonVelocityAbove   = "VELOCITY_ABOVE_BASELINE"
	ReasonVelocityBelow   = "VELOCITY_BELOW_BASELINE"
	ReasonVelocityAt      = "VELOCITY_AT_BASELINE"
	ReasonNoBaseline      = "NO_BASELINE_ACTIVITY"
	ReasonLowSample       = "LOW_SAMPLE"
	ReasonHotspotTop      = "TOP_QUINTILE_OF_PEERS"
	ReasonAbovePeers      = "ABOVE_PEER_MEDIAN"
	ReasonBelowPeers      = "AT_OR_BELOW_PEER_MEDIAN"
	ReasonNoNewBuild      = "NO_NEW_CONSTRUCTION"
	ReasonFewPeers        = "FEW_PEERS"
	ReasonValuationUp     = "VALUATION_RISING"
	ReasonValuationDown   = "VALUATION_FALLING"
	ReasonValuationFlat   = "VALUATION_FLAT"
	ReasonValuationSparse = "VALUATION_SPARSE"
)

// Windows in days before AsOf.
const (
	velocityRecentDays   = 90
	velocityBaselineDays = 360 // the four 90-day windows before the recent one
	hotspotDays          = 365
	momentumDays         = 180
)

type geoInfo struct {
	geoType, state string
	// anchors of a ZIP: itself, its jurisdiction, city, county and state.
	up []string
}

// permitPoint is what geo signals need of one permit (its latest
// snapshot).
type permitPoint struct {
	day       int32 // issue day; math.MinInt32 when not issued
	newBuild  bool
	valuation float64 // NaN when unknown
	zip       string
	state     string
}

type geoAcc struct {
	asOf    time.Time
	asOfDay int32
	geos    map[string]geoInfo
	permits map[string]permitPoint
}

func newGeoAcc(asOf time.Time) *geoAcc {
	return &geoAcc{asOf: asOf, asOfDay: int32(asOf.Unix() / 86400), geos: map[string]geoInfo{}, permits: map[string]permitPoint{}}
}

func (g *geoAcc) location(id string, l events.Location) {
	info := geoInfo{geoType: l.GeoType, state: l.State}
	if l.GeoType == "zip" {
		info.up = []string{id}
		for _, u := range []string{l.JurisdictionGeoID, l.CityGeoID, l.CountyGeoID, l.StateGeoID} {
			if u != "" && !slices.Contains(info.up, u) {
				info.up = append(info.up, u)
			}
		}
	}
	g.geos[id] = info
}

func (g *geoAcc) permit(f permitFacts) {
	pt := permitPoint{day: math.MinInt32, newBuild: f.class.newConstruction, valuation: math.NaN(), zip: f.zip, state: strings.ToUpper(f.p.Address.State)}
	if !f.issue.IsZero() && !reCancelled.MatchString(strings.ToLower(f.p.Status)) {
		pt.day = int32(f.issue.Unix() / 86400)
	}
	if v := f.p.Valuation; v != nil && *v > 0 {
		pt.valuation = *v
	}
	g.permits[f.id] = pt
}

func (g *geoAcc) remove(id string) { delete(g.permits, id) }

// geosOf lists the geographies a permit counts in: its ZIP's anchors when
// the ZIP is a known location; else its state when known; without any
// location events, its derived ZIP and state ids.
func (g *geoAcc) geosOf(pt permitPoint) []string {
	stateID := events.GeoID("state", pt.state)
	if len(g.geos) == 0 {
		if pt.zip != "" {
			return []string{events.GeoID("zip", pt.zip), stateID}
		}
		return []string{stateID}
	}
	if pt.zip != "" {
		if info, ok := g.geos[events.GeoID("zip", pt.zip)]; ok {
			return info.up
		}
	}
	if _, ok := g.geos[stateID]; ok {
		return []string{stateID}
	}
	return nil
}

type geoCounts struct {
	recent, baseline   int     // issued permits: last 90 days, the 360 before
	newBuild           int     // new-construction permits, last 365 days
	valRecent, valPrev float64 // declared valuation, last 180 days, the 180 before
	valued             int     // permits with a valuation in those 360 days
}

// rows computes every geo signal row, ordered by geo_id then signal_key.
func (g *geoAcc) rows() []events.GeoSignal {
	acc := map[string]*geoCounts{}
	for _, pt := range g.permits {
		if pt.day == math.MinInt32 {
			continue
		}
		age := g.asOfDay - pt.day
		if age < 0 || age >= velocityRecentDays+velocityBaselineDays {
			continue
		}
		for _, id := range g.geosOf(pt) {
			c := acc[id]
			if c == nil {
				c = &geoCounts{}
				acc[id] = c
			}
			if age < velocityRecentDays {
				c.recent++
			} else {
				c.baseline++
			}
			if pt.newBuild && age < hotspotDays {
				c.newBuild++
			}
			if !math.IsNaN(pt.valuation) && age < 2*momentumDays {
				c.valued++
				if age < momentumDays {
					c.valRecent += pt.valuation
				} else {
					c.valPrev += pt.valuation
				}
			}
		}
	}
	// Peers for the hotspot: geographies of the same type and state.
	peers := map[string][]int{}
	for id, c := range acc {
		peers[g.peerKey(id)] = append(peers[g.peerKey(id)], c.newBuild)
	}
	for _, p := range peers {
		sort.Ints(p)
	}
	ids := make([]string, 0, len(acc))
	for id := range acc {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []events.GeoSignal
	for _, id := range ids {
		c := acc[id]
		out = append(out,
			g.row(id, KeyNewConstructionHotspot, hotspot(c, peers[g.peerKey(id)])),
			g.row(id, KeyPermitVelocity, velocity(c)),
			g.row(id, KeyValuationMomentum, momentum(c)),
		)
	}
	return out
}

func (g *geoAcc) peerKey(id string) string {
	info, ok := g.geos[id]
	if !ok {
		return "derived"
	}
	return info.state + "|" + info.geoType
}

type computed struct {
	value      map[string]any
	score      float64
	confidence float64
	decision   string
	reasons    []string
}

func (g *geoAcc) row(id, key string, c computed) events.GeoSignal {
	v, _ := json.Marshal(c.value)
	return events.GeoSignal{
		GeoID:         id,
		SignalKey:     key,
		Value:         v,
		Score:         round4(c.score),
		Confidence:    round4(c.confidence),
		Decision:      c.decision,
		Reasons:       c.reasons,
		ComputedAt:    g.asOf,
		SignalVersion: SignalVersion,
	}
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// sampleConfidence grows with the number of observations: n/(n+k).
func sampleConfidence(n int, k float64) float64 { return float64(n) / (float64(n) + k) }

// velocity compares the last 90 days' issued permits with the average 90
// days of the year before.
func velocity(c *geoCounts) computed {
	base := float64(c.baseline) / 4
	ratio := growth(float64(c.recent), base)
	r := computed{
		value: map[string]any{
			"recent_90d": c.recent, "baseline_90d_avg": round4(base), "ratio": round4(ratio), "window_days": velocityRecentDays,
		},
		score:      ratio / (1 + ratio),
		confidence: sampleConfidence(c.recent+c.baseline, 12),
		decision:   events.DecisionNeutral,
	}
	r.judge(ratio, 1.25, 0.8, ReasonVelocityAbove, ReasonVelocityBelow, ReasonVelocityAt)
	if c.baseline == 0 {
		r.reasons = append(r.reasons, ReasonNoBaseline)
	}
	if c.recent+c.baseline < 10 {
		r.reasons = append(r.reasons, ReasonLowSample)
		if r.decision != events.DecisionNegative {
			r.decision = events.DecisionNeutral
		}
	}
	return r
}

// hotspot ranks the last year's new-construction permits among peers
// (same state and geo type): score is the mid-rank percentile.
func hotspot(c *geoCounts, peers []int) computed {
	less := sort.SearchInts(peers, c.newBuild)
	equal := sort.SearchInts(peers, c.newBuild+1) - less
	pct := (float64(less) + 0.5*float64(equal)) / float64(len(peers))
	median := 0.0
	if n := len(peers); n > 0 {
		median = float64(peers[n/2])
		if n%2 == 0 {
			median = (float64(peers[n/2-1]) + float64(peers[n/2])) / 2
		}
	}
	r := computed{
		value: map[string]any{
			"new_construction_365d": c.newBuild, "peer_median": median, "percentile": round4(pct), "peer_count": len(peers),
		},
		score:      pct,
		confidence: sampleConfidence(c.newBuild, 4) * sampleConfidence(len(peers), 5),
		decision:   events.DecisionNeutral,
	}
	switch {
	case c.newBuild == 0:
		r.reasons = append(r.reasons, ReasonNoNewBuild)
		r.decision = events.DecisionNegative
		r.confidence = sampleConfidence(len(peers), 5) * 0.5
	case pct >= 0.8 && c.newBuild >= 3:
		r.reasons = append(r.reasons, ReasonHotspotTop)
		r.decision = events.DecisionPositive
	case float64(c.newBuild) > median:
		r.reasons = append(r.reasons, ReasonAbovePeers)
	default:
		r.reasons = append(r.reasons, ReasonBelowPeers)
	}
	if len(peers) < 5 {
		r.reasons = append(r.reasons, ReasonFewPeers)
	}
	return r
}

// momentum compares declared valuation of the last 180 days with the 180
// before.
func momentum(c *geoCounts) computed {
	ratio := growth(c.valRecent, c.valPrev)
	r := computed{
		value: map[string]any{
			"valuation_recent_180d": math.Round(c.valRecent), "valuation_prior_180d": math.Round(c.valPrev),
			"ratio": round4(ratio), "permits_with_valuation": c.valued,
		},
		score:      ratio / (1 + ratio),
		confidence: sampleConfidence(c.valued, 10),
		decision:   events.DecisionNeutral,
	}
	if c.valued < 3 {
		r.reasons = append(r.reasons, ReasonValuationSparse)
	} else {
		r.judge(ratio, 1.2, 0.8, ReasonValuationUp, ReasonValuationDown, ReasonValuationFlat)
	}
	return r
}

// growth is recent against prior: their ratio, or 2 when only recent is
// non-zero (new activity without a baseline counts as doubling), or 0.
func growth(recent, prior float64) float64 {
	switch {
	case prior > 0:
		return recent / prior
	case recent > 0:
		return 2
	}
	return 0
}

// judge gives r the reason and decision of ratio's band: positive at or
// above up, negative at or below down, neutral between.
func (r *computed) judge(ratio, up, down float64, above, below, between string) {
	switch {
	case ratio >= up:
		r.reasons = append(r.reasons, above)
		r.decision = events.DecisionPositive
	case ratio <= down:
		r.reasons = append(r.reasons, below)
		r.decision = events.DecisionNegative
	default:
		r.reasons = append(r.reasons, between)
	}
}
