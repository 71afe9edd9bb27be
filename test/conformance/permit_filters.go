package conformance

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// Permit search filters (issue 14). Expected pages come from the
// fixture's documents and readmodel.PermitFilter.Match.
func init() {
	Scenarios = append(Scenarios, Scenario{"permits/filters", permitFilters}, Scenario{"permits/valuation_desc", permitValuationSort})
}

// permitValuationSort walks sort=valuation_desc pages: valuation
// descending, unknown last, permit_id ascending on ties.
func permitValuationSort(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	for _, geo := range []string{WA, Seattle, PropUniv} {
		ps := permitsUnder(e, geo)
		slices.SortFunc(ps, func(a, b readmodel.Permit) int {
			switch {
			case (a.Valuation == nil) != (b.Valuation == nil):
				if a.Valuation == nil {
					return 1
				}
				return -1
			case a.Valuation != nil && *a.Valuation != *b.Valuation:
				if *a.Valuation > *b.Valuation {
					return -1
				}
				return 1
			}
			return strings.Compare(a.PermitID, b.PermitID)
		})
		var want, got []string
		for _, p := range ps {
			want = append(want, p.PermitID)
		}
		q := readmodel.PermitQuery{GeoID: geo, Limit: 4, Sort: readmodel.SortValuationDesc}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 200, "walk does not end")
			page, err := e.B.SearchPermits(e.Ctx(), q)
			require.NoError(t, err)
			for _, h := range page.Permits {
				got = append(got, h.Permit.PermitID)
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
		require.Equal(t, want, got, geo)
	}
}

func permitFilters(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	// Filter values drawn from the fixture, written in other cases.
	var types, works, statuses, contractors []string
	var vals []float64
	var words []string
	for _, p := range permitsUnder(e, WA) {
		for _, w := range strings.Fields(strings.ToLower(p.RawDescription)) {
			if len(w) >= 4 && !slices.Contains(words, w) && strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
				words = append(words, w)
			}
		}
		if len(words) > 0 && p.PermitNumber != "" {
			words = append(words[:1], words[0]+" "+p.PermitNumber)
		}
		add := func(list *[]string, v string) {
			if v = readmodel.FoldValue(v); v != "" && !slices.Contains(*list, v) {
				*list = append(*list, v)
			}
		}
		add(&types, p.PermitType)
		add(&works, p.WorkType)
		add(&statuses, p.Status)
		if k := readmodel.ContractorKey(p.Contractor); k != "" && !slices.Contains(contractors, k) {
			contractors = append(contractors, k)
		}
		if p.Valuation != nil {
			vals = append(vals, *p.Valuation)
		}
	}
	require.NotEmpty(t, types, "fixture permits have types")
	require.NotEmpty(t, statuses, "fixture permits have statuses")
	slices.Sort(vals)
	median := 0.0
	if len(vals) > 0 {
		median = vals[len(vals)/2]
	}
	f := func(p *float64) *float64 { return p }
	cases := []struct {
		name   string
		geo    string
		desc   bool
		filter readmodel.PermitFilter
	}{
		{"one type", WA, true, readmodel.PermitFilter{PermitTypes: types[:1]}},
		{"types any of", Seattle, false, readmodel.PermitFilter{PermitTypes: types[:min(2, len(types))]}},
		{"status", King, true, readmodel.PermitFilter{Statuses: statuses[:1]}},
		{"work type and status", WA, false, readmodel.PermitFilter{WorkTypes: works[:1], Statuses: statuses}},
		{"min valuation", WA, true, readmodel.PermitFilter{MinValuation: f(&median)}},
		{"valuation range", Seattle, true, readmodel.PermitFilter{MinValuation: f(&vals[0]), MaxValuation: f(&median)}},
		{"unknown value", WA, true, readmodel.PermitFilter{Statuses: []string{"no such status"}}},
		{"property", PropUniv, true, readmodel.PermitFilter{PermitTypes: types}},
	}
	if len(words) >= 2 {
		for _, q := range []string{words[0], words[0][:3], strings.ToUpper(words[0]) + "s", words[1], "zzzz " + words[0]} {
			cases = append(cases, struct {
				name   string
				geo    string
				desc   bool
				filter readmodel.PermitFilter
			}{"q " + q, WA, true, readmodel.PermitFilter{Text: q}})
		}
	}
	if len(contractors) > 0 {
		cases = append(cases, struct {
			name   string
			geo    string
			desc   bool
			filter readmodel.PermitFilter
		}{"contractor", WA, true, readmodel.PermitFilter{Contractor: contractors[0]}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := permitsUnder(e, tc.geo)
			sortPermits(ps, tc.desc)
			var want []string
			for _, p := range ps {
				if tc.filter.Match(&p) {
					want = append(want, p.PermitID)
				}
			}
			var got []string
			q := readmodel.PermitQuery{GeoID: tc.geo, Desc: tc.desc, Limit: 3, Filter: tc.filter}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 200, "walk does not end")
				page, err := e.B.SearchPermits(e.Ctx(), q)
				require.NoError(t, err)
				for _, h := range page.Permits {
					got = append(got, h.Permit.PermitID)
				}
				if page.Next == nil {
					break
				}
				require.Len(t, page.Permits, 3, "a page with Next is full")
				q.After = page.Next
			}
			require.Equal(t, want, got, "filter %+v", tc.filter)
			if !strings.HasPrefix(tc.name, "unknown") && !strings.HasPrefix(tc.name, "q ") && tc.name != "property" {
				require.NotEmpty(t, got, "the fixture gives this case permits")
			}
		})
	}
}
