package memory

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/readmodel"
)

// Two short link lists whose hashes collide keep their own handles: the
// second goes to the map keyed by the whole list. A collision of the
// 64-bit hash is forced by pointing the first list's handle at the
// second's hash.
func TestLinkSetsHashCollision(t *testing.T) {
	syms, ls := newSymbols(), newLinkSets()
	zip := []readmodel.GeoLink{{GeoID: "zip_94110", GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "zip"}}
	city := []readmodel.GeoLink{{GeoID: "city_sf", GeoType: readmodel.GeoCity, Confidence: 0.8, Method: "name"}}

	a := ls.id(syms, zip, "")
	require.NotZero(t, a)
	require.Equal(t, a, ls.id(syms, zip, ""), "the same list, the same handle")

	var k smallSet
	k.n = 1
	k.links[0] = clink{geo: syms.id("city_sf"), conf: toMillionths(0.8), method: syms.id("name"), typ: syms.id(string(readmodel.GeoCity))}
	ls.byHash[linkHash(k.links[:1])] = a // the city list's hash now names the ZIP list

	b := ls.id(syms, city, "")
	require.NotEqual(t, a, b, "a colliding list is not taken for the other")
	require.Equal(t, b, ls.id(syms, city, ""), "found again through the whole-list map")
	require.Equal(t, a, ls.id(syms, zip, ""))
	require.Equal(t, city, ls.expand(syms, b, ""))
	require.Equal(t, zip, ls.expand(syms, a, ""))
}

// normCity interns each city's normalized form once, and gives the same
// handle as interning the normalized string.
func TestNormCity(t *testing.T) {
	syms := newSymbols()
	for _, city := range []string{"St. Louis", "San Francisco", "", "Winston-Salem", "St. Louis"} {
		id := syms.id(city)
		n := syms.normCity(id)
		require.Equal(t, address.NormalizeCity(city), syms.str(n), city)
		require.Equal(t, n, syms.normCity(id), "memoized")
		want, ok := syms.lookup(address.NormalizeCity(city))
		require.True(t, ok)
		require.Equal(t, want, n)
	}
}

// With the link cache, every list gets the handle it gets
// without: a list seen before by the addresses of its strings, one whose
// strings are equal but new, one that differs only in a confidence, a
// method or a geo_id, and links to the document's own property, whose id
// is a new string for every document.
func TestLinkCacheMatchesIntern(t *testing.T) {
	cached, plain := newLinkSets(), newLinkSets()
	cached.fast = new(linkCache)
	csyms, psyms := newSymbols(), newSymbols()
	fresh := func(s string) string { return string([]byte(s)) } // equal bytes, another address
	zip, city, method := "zip_94110", "city_sf", "zip"
	list := func(prop string, conf float64) []readmodel.GeoLink {
		return []readmodel.GeoLink{
			{GeoID: prop, GeoType: readmodel.GeoProperty, Confidence: 1, Method: method},
			{GeoID: zip, GeoType: readmodel.GeoZip, Confidence: conf, Method: method},
			{GeoID: city, GeoType: readmodel.GeoCity, Confidence: 0.5, Method: method},
		}
	}
	prop := func(i int) string { return fresh("prop_0000000000000000000000000000000" + string(rune('0'+i))) }
	cases := [][]readmodel.GeoLink{
		list(prop(1), 0.9),
		list(prop(2), 0.9), // another property: the same handle
		list(prop(3), 0.8), // a confidence
		list(prop(4), 0.9),
	}
	other := list(prop(5), 0.9)
	other[2].GeoID = fresh(city) // equal bytes, new address
	cases = append(cases, other)
	other = list(prop(6), 0.9)
	other[1].Method = "name" // a method
	cases = append(cases, other)
	other = list(prop(7), 0.9)
	other[1].GeoID = "zip_94103" // a geo_id
	cases = append(cases, other)
	other = list(prop(8), 0.9)
	other[0].GeoID = prop(9) // another property's link: not the document's own
	cases = append(cases, other)
	for i, links := range cases {
		p := prop(i%8 + 1)
		if i == 7 {
			p = prop(8)
		}
		want := plain.id(psyms, links, p)
		got := cached.id(csyms, links, p)
		require.Equal(t, want, got, "case %d", i)
		require.Equal(t, want, cached.id(csyms, links, p), "case %d again, from the cache", i)
	}
	require.Equal(t, plain.sets, cached.sets)
}

// A slot matches only the list it holds, by the addresses of the strings
// and the links to the document's own property (slots are shared by the
// lists whose hashes meet in them).
func TestLinkSlotMatches(t *testing.T) {
	fresh := func(s string) string { return string([]byte(s)) }
	zip, method := "zip_94110", "zip"
	base := func(prop string) []readmodel.GeoLink {
		return []readmodel.GeoLink{
			{GeoID: prop, GeoType: readmodel.GeoProperty, Confidence: 1, Method: method},
			{GeoID: zip, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: method},
		}
	}
	var c linkCache
	p1 := fresh("prop_00000000000000000000000000000001")
	sl, self := c.slot(base(p1), p1)
	require.Equal(t, uint8(1), self)
	sl.links, sl.self, sl.id = base(p1), self, 7

	p2 := fresh("prop_00000000000000000000000000000002")
	_, self2 := c.slot(base(p2), p2)
	require.True(t, sl.matches(base(p2), self2), "another document's own property")

	for name, change := range map[string]func(l []readmodel.GeoLink){
		"geo_id by address": func(l []readmodel.GeoLink) { l[1].GeoID = fresh(zip) },
		"confidence":        func(l []readmodel.GeoLink) { l[1].Confidence = 0.8 },
		"method":            func(l []readmodel.GeoLink) { l[1].Method = fresh(method) },
		"geo type":          func(l []readmodel.GeoLink) { l[1].GeoType = readmodel.GeoCity },
		"shorter":           func(l []readmodel.GeoLink) { l[1] = l[0] },
	} {
		l := base(p2)
		change(l)
		if name == "shorter" {
			l = l[:1]
		}
		_, s := c.slot(l, p2)
		require.False(t, sl.matches(l, s), name)
	}
	// The first link names a property, but not the document's: compared
	// by address, and the self bits differ.
	l := base(p1)
	_, s := c.slot(l, p2)
	require.Zero(t, s&1)
	require.False(t, sl.matches(l, s))
}

// A side's own symbols and link sets take their address caches once they
// hold cacheFrom entries, and give the handles they gave before: a
// string seen again at its address, and one of equal bytes at another.
// A view's copy for another goroutine (importStages.view) takes none.
func TestSideTakesCachesWhenLarge(t *testing.T) {
	pi := newPermitIndexes()
	syms, ls := pi.syms, pi.links
	names := make([]string, cacheFrom)
	for i := range names {
		names[i] = "zip_" + strconv.Itoa(10000+i)
	}
	lists := make([][]readmodel.GeoLink, cacheFrom-1) // with handle 0's, cacheFrom lists
	ids := make([]uint32, len(lists))
	for i, g := range names[:len(lists)] {
		lists[i] = []readmodel.GeoLink{{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 1, Method: "zip"}}
		ids[i] = ls.id(syms, lists[i], "")
	}
	require.NotNil(t, syms.fast, "a side's symbols past cacheFrom take the cache")
	require.Nil(t, ls.fast, "the next list finds cacheFrom lists and takes the cache")
	extra := []readmodel.GeoLink{{GeoID: "zip_99999", GeoType: readmodel.GeoZip, Confidence: 1, Method: "zip"}}
	x := ls.id(syms, extra, "")
	require.NotNil(t, ls.fast)
	for i := range lists {
		require.Equal(t, ids[i], ls.id(syms, lists[i], ""), "the same strings, the same handle")
		copied := []readmodel.GeoLink{{GeoID: strings.Clone(names[i]), GeoType: readmodel.GeoZip, Confidence: 1, Method: strings.Clone("zip")}}
		require.Equal(t, ids[i], ls.id(syms, copied, ""), "equal strings elsewhere, the same handle")
		require.Equal(t, lists[i], ls.expand(syms, ids[i], ""))
	}
	require.Equal(t, x, ls.id(syms, extra, ""))
	id, ok := syms.lookup(names[7])
	require.True(t, ok)
	require.Equal(t, id, syms.id(strings.Clone(names[7])))
	require.Equal(t, id, syms.id(names[7]))

	small := newPermitIndexes()
	for i := range cacheFrom - 2 {
		small.syms.id(names[i])
	}
	require.Nil(t, small.syms.fast, "a small side takes no cache")

	st := &importStages{d: &side{pi: pi}}
	v := st.view()
	require.False(t, v.pi.syms.cached, "a view's symbols take no cache")
	require.False(t, v.pi.links.cached, "a view's link sets take no cache")
}
