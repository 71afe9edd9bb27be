package resolve

import (
	"math"
	"slices"
	"sort"
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

// CityOfPrefixes are the leading words a name's matching forms drop
// ("City of Sedro-Woolley" matches as "Sedro-Woolley"), when a name
// follows them.
var CityOfPrefixes = []string{"city of", "town of", "village of"}

// form is one indexed name of a location, in matching form.
type form struct {
	toks    []Token
	core    int    // leading tokens that make the bare name; the rest is a type suffix ("county")
	compact string // Texts joined, for "Sedrowoolley" = "Sedro-Woolley"
	cityOf  bool   // a "City of" prefix was removed
	alias   bool   // from Location.Aliases
}

// formsOf returns the matching forms of a location's name and aliases,
// without duplicates. ZIPs have none: they match by code.
func formsOf(loc *readmodel.Location) []form {
	if loc.GeoType == readmodel.GeoZip {
		return nil
	}
	var out []form
	add := func(name string, alias bool) {
		toks := tokenize(name)
		f := form{alias: alias}
		if len(toks) > 2 && toks[1].Text == "of" && slices.Contains(CityOfPrefixes, toks[0].Text+" of") {
			toks = toks[2:]
			f.cityOf = true
		}
		if len(toks) == 0 {
			return
		}
		f.toks, f.core = toks, len(toks)
		if loc.GeoType == readmodel.GeoCounty || (loc.GeoType == readmodel.GeoJurisdiction && !loc.Incorporated) {
			for f.core > 1 && (countySuffixes[toks[f.core-1].Text] || toks[f.core-1].Text == "census" || toks[f.core-1].Text == "and") {
				f.core--
			}
		}
		var b strings.Builder
		for _, t := range toks {
			b.WriteString(t.Text)
		}
		f.compact = b.String()
		for _, o := range out {
			if o.compact == f.compact && o.cityOf == f.cityOf && len(o.toks) == len(f.toks) {
				return
			}
		}
		out = append(out, f)
	}
	add(loc.Name, false)
	for _, a := range loc.Aliases {
		add(a, true)
	}
	return out
}

// distancer answers whether a query word is within its typo budget of an
// indexed term, and at which distance.
type distancer interface {
	distance(q, term string) (int, bool)
}

// directDistance computes the bounded optimal-string-alignment distance.
type directDistance struct{}

func (directDistance) distance(q, term string) (int, bool) {
	k := maxEdits(q)
	if k == 0 {
		return 0, false
	}
	d := osa(q, term, k)
	return d, d <= k
}

// nameMatch is how one reading matched one form.
type nameMatch struct {
	quality float64
	method  string
	reasons []string
	// typingCounty: a county-type name matched without its suffix while
	// the last word is still being typed ("Salt La").
	typingCounty bool
}

// matchForm matches a reading against a form: every query word must match
// a distinct name word (exactly, within its typo budget, or - the last
// word only - as a prefix) and at least one word of the bare name.
func matchForm(r *Reading, f *form, dist distancer) (nameMatch, bool) {
	qt := r.Tokens
	if len(qt) == 1 && len(f.toks) >= 2 && qt[0].Text == f.compact {
		return nameMatch{quality: 0.97, method: MethodAlias, reasons: []string{"compound_name"}}, true
	}
	if len(qt) > len(f.toks) || len(f.toks) > 64 {
		return nameMatch{}, false
	}
	var used uint64
	edits, abbrev, inOrder := 0, false, true
	prefixRatio := -1.0
	lastJ := -1
	for i, q := range qt {
		bestJ, bestKind, bestD := -1, 4, 0 // kind: 0 exact in place, 1 exact, 2 fuzzy, 3 prefix
		for j, n := range f.toks {
			if used&(1<<j) != 0 {
				continue
			}
			kind, d := 4, 0
			switch {
			case q.Text == n.Text || slices.Contains(q.Alts, n.Text):
				kind = 1
				if j == lastJ+1 {
					kind = 0
				}
			case r.Compact:
				continue
			case q.Exact:
				// A trailing state kept in the name matches exactly, or,
				// as the last word, as the start of one ("Salt La" is
				// Salt Lake City being typed as much as Salt, Louisiana).
				if i == len(qt)-1 && prefixOf(q, n, len(qt), j, lastJ) {
					kind = 3
				} else {
					continue
				}
			default:
				if dd, ok := dist.distance(q.Text, n.Text); ok && len(n.Text) >= 4 {
					kind, d = 2, dd
				} else if i == len(qt)-1 && prefixOf(q, n, len(qt), j, lastJ) {
					kind = 3
				}
			}
			if kind < bestKind || (kind == bestKind && kind == 2 && d < bestD) {
				bestJ, bestKind, bestD = j, kind, d
			}
		}
		if bestJ < 0 {
			return nameMatch{}, false
		}
		n := f.toks[bestJ]
		switch bestKind {
		case 0, 1:
			if q.Surface != n.Surface && (abbreviations[q.Surface] != "" || abbreviations[n.Surface] != "") {
				abbrev = true
			}
		case 2:
			edits += bestD
		case 3:
			// One letter says nothing of the word's length: the names it
			// begins score alike, and population orders them ("St L":
			// St. Louis before St. Leo).
			prefixRatio = 0
			if p := prefixText(q); len(p) > 1 {
				prefixRatio = float64(len(p)) / float64(len(n.Text))
			}
		}
		if bestJ < lastJ {
			inOrder = false
		}
		lastJ = bestJ
		used |= 1 << bestJ
	}
	matchedCore, leading := 0, true
	for j := 0; j < f.core; j++ {
		if used&(1<<j) != 0 {
			matchedCore++
			if j > 0 && used&(1<<(j-1)) == 0 {
				leading = false
			}
		} else if used>>j != 0 {
			leading = false
		}
	}
	if matchedCore == 0 {
		return nameMatch{}, false
	}
	m := nameMatch{quality: 1, method: MethodExact}
	if edits > 0 {
		m.quality = 0.92 - 0.04*float64(edits-1)
		m.method = MethodFuzzy
		m.reasons = append(m.reasons, "typo_corrected")
	}
	if prefixRatio >= 0 {
		m.quality = min(m.quality, 0.70+0.18*prefixRatio-0.04*float64(edits))
		m.method = MethodPrefix
		m.reasons = append(m.reasons, "prefix_match")
	}
	if m.method == MethodExact {
		switch {
		case abbrev || f.alias || r.Compact:
			m.quality, m.method = 0.97, MethodAlias
			if abbrev && len(qt) == 1 && len(f.toks) == 1 && abbreviations[f.toks[0].Surface] != "" {
				// "Mount" is no way to write Montana's "MT": the places
				// that have the word come first.
				m.quality = abbrevCodeQuality
			}
			if abbrev {
				m.reasons = append(m.reasons, "abbreviation_expanded")
			} else if r.Compact {
				m.reasons = append(m.reasons, "compound_name")
			} else {
				m.reasons = append(m.reasons, "alias_name")
			}
		}
	} else if abbrev {
		m.reasons = append(m.reasons, "abbreviation_expanded")
	}
	if !inOrder {
		m.quality -= 0.05
		m.reasons = append(m.reasons, "word_order")
	}
	switch {
	case matchedCore < f.core:
		m.quality *= 0.62 + 0.3*float64(matchedCore)/float64(f.core)
		if m.method == MethodExact || m.method == MethodAlias {
			if leading {
				m.method = MethodPrefix
			} else {
				m.method = MethodFuzzy
			}
		}
		m.reasons = append(m.reasons, "partial_name")
	case bitsSet(used) < len(f.toks) && prefixRatio >= 0 && !r.County:
		// The bare name of a county while its last word is still being
		// typed ("Salt La"): the suffix is a word not yet typed, and the
		// city of the same name comes first (countyTypingPenalty).
		m.quality *= 0.62 + 0.3*float64(bitsSet(used))/float64(len(f.toks))
		m.typingCounty = true
		m.reasons = append(m.reasons, "bare_name")
	case bitsSet(used) < len(f.toks):
		// The bare name of a county ("King" for "King County").
		m.quality *= 0.9
		if m.method == MethodExact {
			m.method = MethodAlias
		}
		m.reasons = append(m.reasons, "bare_name")
	}
	if m.method == MethodExact {
		m.reasons = append(m.reasons, "exact_name")
	}
	return m, true
}

// prefixText is the text of q that must begin a name word when q is
// matched as a prefix: the word as written when it is a single letter
// (an "n" being typed may begin "new" as well as stand for "north").
func prefixText(q Token) string {
	if len(q.Surface) == 1 {
		return q.Surface
	}
	return q.Text
}

// prefixOf reports whether q, the last of words query words, may match
// the name word n (at position j; the word before q matched at lastJ) as
// a prefix. A single letter must begin the name word right after the
// words before it ("Lake Forest P": Park).
func prefixOf(q, n Token, words, j, lastJ int) bool {
	p := prefixText(q)
	if !Prefixable(len(p), words) || !strings.HasPrefix(n.Text, p) {
		return false
	}
	return len(p) > 1 || j == lastJ+1
}

func bitsSet(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
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

// less is the ordering contract: Score descending, population descending,
// geo_id ascending.
func less(a, b *Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Location.Population != b.Location.Population {
		return a.Location.Population > b.Location.Population
	}
	if a.Location.GeoType == readmodel.GeoZip && b.Location.GeoType == readmodel.GeoZip && a.Location.Zipcode != b.Location.Zipcode {
		return a.Location.Zipcode < b.Location.Zipcode // the ZIPs of one prefix in code order
	}
	return a.Location.GeoID < b.Location.GeoID
}

// samePlace reports whether two locations are scopes of one place (a city
// and its jurisdiction, a county and its authority), which do not compete
// for the margin.
func samePlace(a, b *readmodel.Location) bool {
	linked := func(x, y *readmodel.Location) bool {
		return (x.CityGeoID != "" && x.CityGeoID == y.GeoID) ||
			(x.JurisdictionGeoID != "" && x.JurisdictionGeoID == y.GeoID) ||
			(x.GeoType == readmodel.GeoJurisdiction && !x.Incorporated && x.CountyGeoID != "" && x.CountyGeoID == y.GeoID)
	}
	return linked(a, b) || linked(b, a)
}

// Rank orders matches by the ordering contract, keeps at most limit, and
// assigns each its confidence and decision:
//
//   - confidence starts at Quality, less fillerConfidence (0.05) when
//     filler words of the text were dropped; halved when the text names
//     another state or ZIP place; times 0.65 when another place (not a
//     scope of the same place) scores within ambiguityMargin (reason
//     ambiguous_name); for a lower candidate, reduced with its gap to the
//     top.
//   - accept: the top candidate, matched exactly, by alias or by ZIP, not
//     ambiguous, confidence >= 0.8. reject: confidence < 0.4, or a gap of
//     0.12 or more below the top for a different place. Otherwise review.
//
// Confidence and decision read the scores without the focus boost (Base):
// a focus point orders the candidates, it does not make a name less
// ambiguous. Rank sorts matches in place.
func Rank(matches []Match, limit int) []readmodel.Candidate {
	sort.Slice(matches, func(i, j int) bool { return less(&matches[i], &matches[j]) })
	n := min(limit, len(matches))
	if n <= 0 {
		return []readmodel.Candidate{}
	}
	// byBase is the order of the scores without the focus boost; without
	// a focus it is the ranking order itself.
	var byBase []int
	for i := range matches {
		if matches[i].Base != matches[i].Score {
			byBase = make([]int, len(matches))
			for j := range byBase {
				byBase[j] = j
			}
			sort.SliceStable(byBase, func(a, b int) bool {
				x, y := &matches[byBase[a]], &matches[byBase[b]]
				if x.Base != y.Base {
					return x.Base > y.Base
				}
				return less(x, y)
			})
			break
		}
	}
	at := func(k int) int {
		if byBase == nil {
			return k
		}
		return byBase[k]
	}
	out := make([]readmodel.Candidate, n)
	top := &matches[at(0)]
	for i := 0; i < n; i++ {
		m := &matches[i]
		// Best competitor: the first other candidate that is not a scope
		// of the same place.
		var comp *Match
		for k := range matches {
			j := at(k)
			if j != i && !samePlace(matches[j].Location, m.Location) {
				comp = &matches[j]
				break
			}
		}
		reasons := append([]string(nil), m.Reasons...)
		conf := m.Quality
		if m.Dropped {
			conf -= fillerConfidence
		}
		if m.Mismatch {
			conf *= 0.5
		}
		ambiguous := comp != nil && math.Abs(m.Base-comp.Base) < ambiguityMargin
		if ambiguous {
			conf *= 0.65
			reasons = append(reasons, "ambiguous_name")
			if i == 0 && m.Location.Population > comp.Location.Population && m.Base-comp.Base < popWeight/scoreScale+1e-9 {
				reasons = append(reasons, "population_prior")
			}
		}
		gap := max(0, top.Base-m.Base)
		isTop := m == top
		related := !isTop && samePlace(top.Location, m.Location)
		if !isTop {
			if related {
				conf *= 0.85
			} else {
				conf *= max(0, 1-4*gap)
			}
		}
		conf = round4(min(1, max(0, conf)))
		decision := DecisionReview
		switch {
		case i == 0 && isTop && !ambiguous && !m.Mismatch && conf >= 0.8 &&
			(m.Method == MethodExact || m.Method == MethodAlias || m.Method == MethodPostalCode):
			decision = DecisionAccept
		case conf < 0.4, !isTop && !related && gap >= 0.12:
			decision = DecisionReject
		}
		out[i] = readmodel.Candidate{
			Location:    m.Location.Clone(),
			Score:       m.Score,
			Confidence:  conf,
			MatchMethod: m.Method,
			Decision:    decision,
			Reasons:     reasons,
		}
	}
	return out
}
