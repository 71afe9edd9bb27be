package resolve

import (
	"math"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// Match methods (the spec's match_method values this package produces).
const (
	MethodExact      = "exact"
	MethodAlias      = "alias"
	MethodPrefix     = "prefix"
	MethodFuzzy      = "fuzzy"
	MethodPostalCode = "postal_code"
)

// Decisions.
const (
	DecisionAccept = "accept"
	DecisionReview = "review"
	DecisionReject = "reject"
)

// Scoring constants; see the package documentation for how they combine.
const (
	scoreScale      = 1.2  // raw score / scoreScale = Score; no raw score reaches it
	popWeight       = 0.03 // population prior at 10 million inhabitants
	stateMatchBonus = 0.04
	stateMismatch   = 0.30
	countyBonus     = 0.03 // "X County" asked, a county found
	cityOfBonus     = 0.06 // "City of X" asked, the city's jurisdiction found
	cityOfPenalty   = 0.15 // "City of X" asked, a county or state found
	zipBonus        = 0.08 // a ZIP in the text, this ZIP found
	zipCityBonus    = 0.04
	zipCityPenalty  = 0.20
	ambiguityMargin = 0.04 // Score difference under which two places tie

	fillerPenalty       = 0.08 // a reading without the text's filler words
	fillerConfidence    = 0.05 // confidence given up when filler words were dropped
	stateWordBonus      = 0.06 // "state" / "state of" dropped, a state found
	countyTypingPenalty = 0.02 // a county matched by a partial last word, County not typed
	abbrevCodeQuality   = 0.60 // a word spelled out matched only a one-word abbreviated alias ("Mount": MT)

	// Focus point: focusWeight * 2^(-d/focusHalfKm), at most lifting a
	// match whose quality is under exactTier to focusCap.
	focusWeight = 0.08
	focusHalfKm = 50.0
	exactTier   = 0.97
	focusCap    = 0.969
)

// typePrior orders equally good name matches: a state before a city, a
// city before a county, a county before its jurisdiction.
var typePrior = map[readmodel.GeoType]float64{
	readmodel.GeoState:        0.03,
	readmodel.GeoCity:         0.02,
	readmodel.GeoCounty:       0.01,
	readmodel.GeoJurisdiction: 0,
	readmodel.GeoZip:          0,
}

// Match is one location scored against a query, before ranking.
type Match struct {
	// Location is read, never written; Rank returns clones.
	Location *readmodel.Location
	// Score is the ranking score in 0..1 (rounded to 4 decimals), with
	// the focus boost; Base the same without it (equal without a focus).
	Score, Base float64
	// Quality is how well the text matches the name or ZIP alone, 0..1.
	Quality float64
	Method  string
	Reasons []string
	// Mismatch: the text names a state (or a ZIP's place) this location is
	// not in; it is kept as a weak alternative.
	Mismatch bool
	// Dropped: the match left filler words of the text out.
	Dropped bool
}

// Score scores one location against a parsed query with the same scorer
// the memory index uses; ok is false when the location does not match (or
// fails a hard filter). A search backend calls it on its fuzzy hits and
// passes the matches to Rank.
func Score(q Query, loc readmodel.Location) (Match, bool) {
	return scoreLoc(&q, &loc, formsOf(&loc), directDistance{})
}

func popPrior(pop int64) float64 {
	if pop <= 0 {
		return 0
	}
	return popWeight * min(1, math.Log10(float64(pop)+1)/7)
}

func passes(q *Query, loc *readmodel.Location) bool {
	if q.FilterState != "" && loc.State != q.FilterState {
		return false
	}
	return q.FilterType == "" || loc.GeoType == q.FilterType
}

func scoreLoc(q *Query, loc *readmodel.Location, forms []form, dist distancer) (Match, bool) {
	if !passes(q, loc) {
		return Match{}, false
	}
	var best Match
	bestRaw := math.Inf(-1)
	consider := func(raw float64, m Match) {
		if raw > bestRaw {
			bestRaw, best = raw, m
		}
	}
	if loc.GeoType == readmodel.GeoZip && q.ZipPrefix != "" {
		if !strings.HasPrefix(loc.Zipcode, q.ZipPrefix) {
			return Match{}, false
		}
		// Scored like a name prefix: typed/whole length r.
		quality := round4(0.70 + 0.18*float64(len(q.ZipPrefix))/5)
		consider(quality, Match{Quality: quality, Method: MethodPrefix, Reasons: []string{"postal_code_prefix"}})
	} else if loc.GeoType == readmodel.GeoZip {
		if q.Zip == "" || loc.Zipcode != q.Zip {
			return Match{}, false
		}
		reasons := []string{"postal_code"}
		if q.Plus4 != "" {
			reasons = append(reasons, "zip_plus4")
		}
		if q.Dropped {
			reasons = append(reasons, "filler_dropped")
		}
		raw := 1 + zipBonus
		consider(raw, Match{Quality: 1, Method: MethodPostalCode, Reasons: reasons, Dropped: q.Dropped})
		city := tokenize(loc.City)
		for i := range q.Readings {
			r := &q.Readings[i]
			if r.Compact {
				continue
			}
			m := Match{Quality: 1, Method: MethodPostalCode, Reasons: append([]string(nil), reasons...), Dropped: q.Dropped}
			adj := 0.0
			st := r.State
			toks := r.Tokens
			if code, k := trailingState(toks, 0); st == "" && k > 0 && k == len(toks) {
				st, toks = code, nil
			}
			if st != "" {
				if loc.State == st {
					adj += stateMatchBonus
					m.Reasons = append(m.Reasons, "state_match")
				} else {
					adj -= stateMismatch
					m.Mismatch = true
					m.Reasons = append(m.Reasons, "state_mismatch")
				}
			}
			if len(toks) > 0 {
				rr := Reading{Tokens: toks}
				cf := form{toks: city, core: len(city)}
				// A ZIP's place name need not be an indexed term: measure directly.
				if nm, ok := matchForm(&rr, &cf, directDistance{}); ok && nm.quality >= 0.85 {
					adj += zipCityBonus
					m.Reasons = append(m.Reasons, "city_match")
				} else {
					adj -= zipCityPenalty
					m.Mismatch = true
					m.Quality = 0.6
					m.Reasons = append(m.Reasons, "city_mismatch")
				}
			}
			consider(raw+adj, m)
		}
	} else {
		for i := range q.Readings {
			r := &q.Readings[i]
			for fi := range forms {
				f := &forms[fi]
				nm, ok := matchForm(r, f, dist)
				if !ok {
					continue
				}
				raw := nm.quality + typePrior[loc.GeoType] + popPrior(loc.Population)
				reasons := nm.reasons
				mism := false
				if r.Dropped {
					raw -= fillerPenalty
					reasons = append(reasons, "filler_dropped")
				}
				if r.StateWord && loc.GeoType == readmodel.GeoState {
					raw += stateWordBonus
					reasons = append(reasons, "state_word")
				}
				if nm.typingCounty {
					raw -= countyTypingPenalty
				}
				if r.State != "" {
					if loc.State == r.State {
						raw += stateMatchBonus
						reasons = append(reasons, "state_match")
					} else {
						raw -= stateMismatch
						mism = true
						reasons = append(reasons, "state_mismatch")
					}
				}
				if r.County && loc.GeoType == readmodel.GeoCounty {
					raw += countyBonus
					reasons = append(reasons, "county_suffix")
				}
				if q.CityOf {
					switch {
					case loc.GeoType == readmodel.GeoJurisdiction && f.cityOf:
						raw += cityOfBonus
						reasons = append(reasons, "city_of_prefix")
					case loc.GeoType == readmodel.GeoCounty || loc.GeoType == readmodel.GeoState:
						raw -= cityOfPenalty
					}
				}
				consider(raw, Match{Quality: nm.quality, Method: nm.method, Reasons: reasons, Mismatch: mism, Dropped: r.Dropped})
			}
		}
	}
	if math.IsInf(bestRaw, -1) {
		return Match{}, false
	}
	if q.FilterState != "" {
		best.Reasons = append(best.Reasons, "state_filter")
	}
	if q.FilterType != "" {
		best.Reasons = append(best.Reasons, "geo_type_filter")
	}
	best.Location = loc
	best.Base = round4(min(1, max(0, bestRaw/scoreScale)))
	best.Score = best.Base
	if q.Focus != nil {
		if boost := focusBoost(q.Focus, loc); boost > 0 {
			if best.Quality < exactTier {
				// Never above an exact name match of the same kind of
				// reading (one without filler words scores 0.08 less).
				limit := focusCap
				if best.Dropped {
					limit -= fillerPenalty
				}
				boost = min(boost, max(0, limit-bestRaw))
			}
			if boost >= 0.01 {
				best.Reasons = append(best.Reasons, "near_focus")
			}
			best.Score = round4(min(1, max(0, (bestRaw+boost)/scoreScale)))
		}
	}
	return best, true
}

// focusBoost is the raw score a location gains from the focus point:
// focusWeight * 2^(-d/focusHalfKm) for a great-circle distance of d km
// (0.08 at the point, 0.04 at 50 km, 0.01 at 150 km); 0 for a location
// without coordinates (lat and lon both 0).
func focusBoost(f *readmodel.Point, loc *readmodel.Location) float64 {
	if loc.Lat == 0 && loc.Lon == 0 {
		return 0
	}
	return focusWeight * math.Exp2(-distanceKm(f.Lat, f.Lon, loc.Lat, loc.Lon)/focusHalfKm)
}

// distanceKm is the haversine distance between two points in degrees.
func distanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0088
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Sqrt(min(1, a)))
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
