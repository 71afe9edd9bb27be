package memory

import (
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
