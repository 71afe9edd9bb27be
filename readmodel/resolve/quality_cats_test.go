package resolve

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// newCategories adds the rows of the words people add (filler, country,
// state_of), of typing (one_letter, common_word, city_county) and of the
// focus point. Each rule names the place a careful reader would mean and
// leaves out the texts that rule cannot decide; rng (fixed seed) only picks
// among equivalent spellings and focus offsets.
func newCategories(x *Index, rng *rand.Rand, locs, cities []readmodel.Location, byType map[readmodel.GeoType][]readmodel.Location,
	nameCount, displayCount, countyName map[string]int, cityStates map[string][]string,
	add func(q, st, gt string, l readmodel.Location, cat string), addFocus func(q string, l readmodel.Location, lat, lon float64)) {
	okDisplay := func(l readmodel.Location) bool { return displayCount[l.DisplayName+"|"+string(l.GeoType)] == 1 }
	unique := func(l readmodel.Location) bool {
		return nameCount[Normalize(l.Name)] == 1 && okDisplay(l) && l.Population >= 5000
	}
	// fillerFree: no word of the name is a filler word, and no other
	// place is named by the name with a filler word ("The X").
	fillerFree := func(l readmodel.Location) bool {
		ws := words(l.Name)
		if out, d := dropFillers(ws); d.any || len(out) != len(ws) {
			return false
		}
		n := Normalize(l.Name)
		return nameCount["the "+n] == 0 && countyName["the "+n] == 0
	}
	pick := func(opts []string) string { return opts[rng.IntN(len(opts))] }

	// filler: a unique city name wrapped in street-style or vague words.
	wrap := []func(string, readmodel.Location) string{
		func(n string, l readmodel.Location) string { return "near " + n },
		func(n string, l readmodel.Location) string { return "downtown " + n + ", " + l.State },
		func(n string, l readmodel.Location) string { return "greater " + n + " area" },
		func(n string, l readmodel.Location) string { return "the " + n },
		func(n string, l readmodel.Location) string { return n + " metro area" },
		func(n string, l readmodel.Location) string { return n + " downtown area" },
		func(n string, l readmodel.Location) string { return n + " -- " + l.State + " !!" },
		func(n string, l readmodel.Location) string { return "around " + n + " (" + l.StateName + ")" },
	}
	n, k := 0, 0
	for _, l := range cities {
		if n == 40 {
			break
		}
		if !unique(l) || !fillerFree(l) || words(l.Name)[0] == "main" {
			continue
		}
		if k++; k%2 != 0 {
			continue
		}
		add(wrap[rng.IntN(len(wrap))](l.Name, l), "", "", l, "filler")
		n++
	}

	// country: a city with its state and a country, or a unique city with
	// a country alone.
	countries := []string{"USA", "United States", "U.S.A.", "US", "United States of America", "America", "U.S."}
	n = 0
	for _, l := range cities {
		if n == 36 {
			break
		}
		st := cityStates[Normalize(l.Name)]
		if !okDisplay(l) || l.Population < 5000 || !fillerFree(l) || countIn(st, l.State) != 1 {
			continue
		}
		if rng.IntN(4) != 0 {
			continue
		}
		c := pick(countries)
		switch {
		case len(st) == 1 && nameCount[Normalize(l.Name)] == 1 && n%3 == 0:
			add(l.Name+" "+c, "", "", l, "country")
		case n%2 == 0:
			add(l.Name+", "+l.State+", "+c, "", "", l, "country")
		default:
			add(l.Name+", "+l.StateName+", "+c, "", "", l, "country")
		}
		n++
	}

	// state_of: every state as "State of X", "X State" or "the State of
	// X"; and cities "X, Y State".
	forms := []string{"State of %s", "%s State", "the State of %s", "%s state, USA"}
	for _, s := range byType[readmodel.GeoState] {
		if s.State == "DC" {
			continue
		}
		add(strings.Replace(forms[rng.IntN(len(forms))], "%s", s.Name, 1), "", "", s, "state_of")
	}
	n = 0
	for _, l := range cities {
		if n == 12 {
			break
		}
		st := cityStates[Normalize(l.Name)]
		if len(st) < 2 || !okDisplay(l) || l.Population < 20000 || !fillerFree(l) || countIn(st, l.State) != 1 || rng.IntN(3) != 0 {
			continue
		}
		add(l.Name+", "+l.StateName+" State", "", "", l, "state_of")
		n++
	}

	// one_letter: a city of three or more words typed up to the first
	// letter of its last word, when every place reachable that way (a
	// name with the words before and a word after them that starts with
	// the letter) is the city or one of its scopes.
	n = 0
	for _, l := range cities {
		if n == 30 {
			break
		}
		ws := words(l.Name)
		if len(ws) < 3 || !okDisplay(l) || l.Population < 1000 || !fillerFree(l) {
			continue
		}
		before, letter := ws[:len(ws)-1], ws[len(ws)-1][:1]
		if _, k := trailingState(tokenize(strings.Join(before, " ")), 1); k > 0 {
			continue
		}
		if !onlyReaches(x, before, letter, l) {
			continue
		}
		q := strings.Join(strings.Fields(l.Name)[:len(strings.Fields(l.Name))-1], " ")
		if len(strings.Fields(q)) != len(before) {
			continue // hyphens or dots: the typed words are not the name's
		}
		add(q+" "+strings.ToUpper(letter), "", "", l, "one_letter")
		n++
	}

	// common_word: a word of more than maxPrefixExact postings typed
	// alone that names places exactly: the most populous of them, when it
	// has at least twice the population of the next.
	exact := map[string][]readmodel.Location{}
	for _, l := range locs {
		if l.GeoType == readmodel.GeoCity || l.GeoType == readmodel.GeoState {
			exact[Normalize(l.Name)] = append(exact[Normalize(l.Name)], l)
		}
	}
	var common []string
	for term, p := range x.terms {
		if len(p) > maxPrefixExact && len(exact[term]) > 0 && len(term) >= 4 {
			common = append(common, term)
		}
	}
	slices.Sort(common)
	n = 0
	for _, term := range common {
		ls := exact[term]
		best, next := ls[0], int64(0)
		for _, l := range ls[1:] {
			next = max(next, l.Population)
		}
		if best.Population < 2*next || best.Population < 1000 || !okDisplay(best) || countyName[term+" county"] > 0 {
			continue
		}
		if n%3 == 0 {
			add(strings.ToUpper(term[:1])+term[1:], "", "", best, "common_word")
		} else {
			add(term, "", "", best, "common_word")
		}
		n++
		if n == 30 {
			break
		}
	}

	// city_county: a city and the county of the same name in its state
	// ("Spokane", "Spokane County"; "Salt Lake City", "Salt Lake
	// County"). Typed up to part of the last shared word, the city; with
	// "Co" or "County", the county.
	countyOf := map[string]readmodel.Location{}
	for _, c := range byType[readmodel.GeoCounty] {
		bare := strings.TrimSuffix(c.Name, " County")
		if bare != c.Name && okDisplay(c) {
			countyOf[c.State+"|"+Normalize(bare)] = c
		}
	}
	n = 0
	for _, l := range cities {
		if n == 30 {
			break
		}
		name := Normalize(l.Name)
		bare := strings.TrimSuffix(name, " city")
		c, ok := countyOf[l.State+"|"+bare]
		if !ok || !unique(l) || countyName[Normalize(c.Name)] != 1 || !fillerFree(l) {
			continue
		}
		bw := strings.Fields(strings.TrimSuffix(l.Name, " City"))
		last := strings.ToLower(bw[len(bw)-1])
		if len(last) < 5 || strings.ContainsAny(strings.Join(bw, " "), "-.'") {
			continue
		}
		cut := len(last) - 2
		typed := append(append([]string{}, bw[:len(bw)-1]...), bw[len(bw)-1][:cut])
		before := words(strings.Join(bw[:len(bw)-1], " "))
		if !onlyReachesCityOrCounty(x, before, last[:cut], l, c) || typoOfAnother(x, last[:cut], last) {
			continue
		}
		add(strings.Join(typed, " "), "", "", l, "city_county")
		if n%2 == 0 && l.State != "CO" { // "X Co" is X, Colorado as well
			add(strings.Join(bw, " ")+" Co", "", "", c, "city_county")
		}
		n++
	}

	// focus: a name several cities share, with the focus a few km from
	// one that is not the most populous and has no namesake within 300
	// km; and a unique name with the focus on another city at least 300
	// km away (the exact match is not hidden).
	byName := map[string][]readmodel.Location{}
	for _, l := range cities {
		byName[Normalize(l.Name)] = append(byName[Normalize(l.Name)], l)
	}
	n = 0
	for _, l := range cities {
		if n == 24 {
			break
		}
		same := byName[Normalize(l.Name)]
		if len(same) < 2 || same[0].GeoID == l.GeoID || !okDisplay(l) || l.Population < 2000 || !fillerFree(l) ||
			nameCount[Normalize(l.Name)] != len(same) || l.Lat == 0 {
			continue
		}
		near := false
		for _, o := range same {
			if o.GeoID != l.GeoID && distanceKm(l.Lat, l.Lon, o.Lat, o.Lon) < 300 {
				near = true
			}
		}
		if near || rng.IntN(3) != 0 {
			continue
		}
		lat, lon := l.Lat+(rng.Float64()-0.5)*0.1, l.Lon+(rng.Float64()-0.5)*0.1
		addFocus(l.Name, l, round4(lat), round4(lon))
		n++
	}
	n = 0
	for i, l := range cities {
		if n == 12 {
			break
		}
		if !unique(l) || l.Lat == 0 || !fillerFree(l) || i%5 != 0 {
			continue
		}
		o := cities[(i*7+3)%200]
		if distanceKm(l.Lat, l.Lon, o.Lat, o.Lon) < 300 {
			continue
		}
		addFocus(l.Name, l, o.Lat, o.Lon)
		n++
	}
}

// typoOfAnother reports whether the typed word w is within its typo
// budget of an indexed term other than the one being typed ("Kalamaz" is
// Kalama with a typo as much as Kalamazoo being typed).
func typoOfAnother(x *Index, w, target string) bool {
	k := maxEdits(w)
	if k == 0 {
		return false
	}
	for term := range x.terms {
		if term != target && len(term) >= 4 && osa(w, term, k) <= k {
			return true
		}
	}
	return false
}

// onlyReaches reports whether every location with a name that has the
// words before (canonical) and, right after them, a word beginning with
// letter is l or one of its scopes.
func onlyReaches(x *Index, before []string, letter string, l readmodel.Location) bool {
	return reachable(x, before, letter, func(o *readmodel.Location) bool {
		return o.GeoID == l.GeoID || o.CityGeoID == l.GeoID || o.GeoID == l.JurisdictionGeoID
	})
}

// onlyReachesCityOrCounty: as onlyReaches, for the city's and the
// county's scopes, or names with more words than the city's.
func onlyReachesCityOrCounty(x *Index, before []string, prefix string, city, county readmodel.Location) bool {
	n := len(words(city.Name))
	return reachable(x, before, prefix, func(o *readmodel.Location) bool {
		return o.GeoID == city.GeoID || o.CityGeoID == city.GeoID || o.GeoID == city.JurisdictionGeoID ||
			o.GeoID == county.GeoID || o.CountyGeoID == county.GeoID && o.GeoType == readmodel.GeoJurisdiction && !o.Incorporated ||
			len(words(o.Name)) > n+1
	})
}

func reachable(x *Index, before []string, prefix string, ok func(*readmodel.Location) bool) bool {
	var slots []int32
	if len(before) == 0 {
		for i := range x.docs.n {
			slots = append(slots, i)
		}
	} else {
		slots = x.terms[canonical(before[0])]
	}
	for _, s := range slots {
		d := x.docs.at(s)
		if !d.live || d.loc.GeoType == readmodel.GeoZip {
			continue
		}
		for _, f := range d.forms {
			if formReaches(f, before, prefix) && !ok(&d.loc) {
				return false
			}
		}
	}
	return true
}

func formReaches(f form, before []string, prefix string) bool {
	used := make([]bool, len(f.toks))
	last := -1
	for _, w := range before {
		c := canonical(w)
		found := false
		for j, t := range f.toks {
			if !used[j] && t.Text == c {
				used[j], found, last = true, true, max(last, j)
				break
			}
		}
		if !found {
			return false
		}
	}
	for j, t := range f.toks {
		if !used[j] && strings.HasPrefix(t.Text, prefix) && (len(prefix) > 1 || j == last+1) {
			return true
		}
	}
	return false
}
