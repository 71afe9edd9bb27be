package api

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestSafeIDAgreesWithPattern: the hand-written check accepts exactly
// what the documented pattern does.
func TestSafeIDAgreesWithPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	for _, id := range []string{
		"a", "abc-DEF_0.9:x", strings.Repeat("a", 64), strings.Repeat("a", 65), "a b", "a/b", "é", "a\n",
		"0123456789abcdef01234567", "<script>", "a;b", "a%20b", "x\x00",
	} {
		if got, want := safeID(id), re.MatchString(id); got != want {
			t.Errorf("safeID(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestQueryKeyAgreesWithNetURL: the in-place canonical form of a query
// equals the one built from net/url's parse for every query, and two
// queries get the same key exactly when they decode to the same
// parameters (values in order).
func TestQueryKeyAgreesWithNetURL(t *testing.T) {
	queries := []string{
		"", "a=1", "a=1&b=2", "b=2&a=1", "a=1&a=2", "a=2&a=1", "b=1&a=2&a=3", "a=2&b=1&a=3",
		"query=Spokane+Valley", "query=Spokane%20Valley", "query=a%2Bb", "query=a+b",
		"q=%zz&a=1", "q=%2", "a=1;b=2", "a=1&&b=2&", "=x", "a", "a=", "a=&a",
		"a%5F=1", "a_=1", "x+y=1", "x%20y=1", "q=a%26b%3Dc", "q=a&b=c",
		"geo_id=g1&include_stale=true", "include_stale=true&geo_id=g1",
		strings.Repeat("k=v&", 30), "z=1&y=2&x=3&w=4&v=5",
	}
	slow := func(raw string) []byte {
		return appendQueryKey(nil, "%", func() url.Values { q, _ := url.ParseQuery(raw); return q })
	}
	keys := map[string]string{}
	for _, raw := range queries {
		got := appendQueryKey(nil, raw, func() url.Values { q, _ := url.ParseQuery(raw); return q })
		if want := slow(raw); string(got) != string(want) {
			t.Errorf("%q: in place %q, from net/url %q", raw, got, want)
		}
		keys[raw] = string(got)
	}
	for _, a := range queries {
		for _, b := range queries {
			qa, _ := url.ParseQuery(a)
			qb, _ := url.ParseQuery(b)
			if same := qa.Encode() == qb.Encode(); same != (keys[a] == keys[b]) {
				t.Errorf("%q and %q: same parameters %v, same key %v", a, b, same, keys[a] == keys[b])
			}
		}
	}
}
