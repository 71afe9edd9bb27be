package resolve

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// qualityRow is one labelled query of testdata/quality.tsv.
type qualityRow struct {
	line     int
	rq       readmodel.ResolveQuery
	display  string // "" when no candidate is expected
	geoType  readmodel.GeoType
	category string
}

func loadQuality(tb testing.TB) []qualityRow {
	tb.Helper()
	f, err := os.Open("testdata/quality.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var rows []qualityRow
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.HasPrefix(text, "#") || strings.HasPrefix(text, "query\t") || text == "" {
			continue
		}
		cols := strings.Split(text, "\t")
		if len(cols) != 7 {
			tb.Fatalf("quality.tsv:%d: %d columns, want 7", line, len(cols))
		}
		rq := readmodel.ResolveQuery{Text: strings.TrimSpace(cols[0]), State: cols[1],
			GeoType: readmodel.GeoType(cols[2]), Limit: 10}
		if cols[6] != "" {
			var p readmodel.Point
			if _, err := fmt.Sscanf(cols[6], "%g,%g", &p.Lat, &p.Lon); err != nil {
				tb.Fatalf("quality.tsv:%d: focus %q: %v", line, cols[6], err)
			}
			rq.Focus = &p
		}
		rows = append(rows, qualityRow{
			line: line, rq: rq,
			display: cols[3], geoType: readmodel.GeoType(cols[4]), category: cols[5],
		})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return rows
}

// TestQuality resolves every labelled query against the national
// gazetteer and requires top-1 accuracy of at least 0.99 overall and 0.97
// in every category, over at least 600 rows.
func TestQuality(t *testing.T) {
	x := nationalIndex(t)
	rows := loadQuality(t)
	if len(rows) < 600 {
		t.Fatalf("quality set has %d rows, want at least 600", len(rows))
	}
	type tally struct{ ok, n int }
	per := map[string]*tally{}
	okAll := 0
	for _, r := range rows {
		cs := x.Search(r.rq)
		checkContract(t, r.rq, cs)
		var hit bool
		if r.display == "" {
			hit = len(cs) == 0
		} else {
			hit = len(cs) > 0 && cs[0].Location.DisplayName == r.display && cs[0].Location.GeoType == r.geoType
		}
		tl := per[r.category]
		if tl == nil {
			tl = &tally{}
			per[r.category] = tl
		}
		tl.n++
		if hit {
			tl.ok++
			okAll++
		} else {
			t.Logf("MISS quality.tsv:%d [%s] %q state=%q geo_type=%q: want %s (%s)\n%s", r.line, r.category, r.rq.Text,
				r.rq.State, r.rq.GeoType, r.display, r.geoType, describe(cs[:min(3, len(cs))]))
		}
	}
	cats := make([]string, 0, len(per))
	for c := range per {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var summary []string
	for _, c := range cats {
		tl := per[c]
		t.Logf("%-22s %3d/%-3d %.3f", c, tl.ok, tl.n, float64(tl.ok)/float64(tl.n))
		summary = append(summary, fmt.Sprintf("%s=%d/%d", c, tl.ok, tl.n))
	}
	acc := float64(okAll) / float64(len(rows))
	t.Logf("quality: top-1 accuracy %.4f (%d/%d); %s", acc, okAll, len(rows), strings.Join(summary, " "))
	if acc < 0.99 {
		t.Errorf("top-1 accuracy %.4f < 0.99", acc)
	}
	for _, c := range cats {
		if tl := per[c]; float64(tl.ok)/float64(tl.n) < 0.97 {
			t.Errorf("category %s: top-1 accuracy %.4f < 0.97", c, float64(tl.ok)/float64(tl.n))
		}
	}
	for _, c := range []string{"filler", "country", "state_of", "one_letter", "common_word", "city_county", "focus"} {
		if per[c] == nil || per[c].n < 15 {
			t.Errorf("category %s has %v rows, want at least 15", c, per[c])
		}
	}
}
