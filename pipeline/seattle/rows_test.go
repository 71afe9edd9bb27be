package seattle

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

// Row-level behaviour on small hand-written files: bad rows, a wrong
// header, errors and cancellation, and the field parsers.

// withFile serves content instead of the bundled file name.
func withFile(name, content string) func(string) (io.ReadCloser, error) {
	return func(n string) (io.ReadCloser, error) {
		if n == name {
			return io.NopCloser(strings.NewReader(content)), nil
		}
		return data.Open(n)
	}
}

func TestBadRows(t *testing.T) {
	const header = "Application/Permit Number,Permit Type,Address,Category,Action Type,Work Type,Value,Application Date,Issue Date,Final Date,Expiration Date,Status,Master Use Permit,Latitude,Longitude\n"
	good := "1,Construction,600 UNIVERSITY ST,COMMERCIAL,ADD/ALT,Plan Review,1000,12/6/10,12/6/10,,6/6/12,Permit Issued,,47.60967252,-122.3323065\n"
	rows := header +
		good + // line 2: kept
		",Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 3: missing number
		"3,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,13/45/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 4: bad application date
		"4,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,2010-12-06,,,Permit Issued,,47.6,-122.3\n" + // 5: bad issue date
		"5,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,lots,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 6: bad value
		"6,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,-5,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 7: negative value
		"7,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,north,-122.3\n" + // 8: bad coordinates
		"8,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,47.6\n" + // 9: too few fields
		good + // 10: duplicate number
		"11,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,\"1,250\",12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 11: kept, 1250
		"12,,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 12: no permit type
		"13,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,0.5,1\n" // 13: coordinates far from Washington

	im, err := runImport(withFile(data.SeattleCommercialPermits, rows))
	require.NoError(t, err)
	com, ok := im.rep.File(data.SeattleCommercialPermits)
	require.True(t, ok)
	assert.Equal(t, 12, com.Rows)
	assert.Equal(t, 2, com.Permits)
	assert.Equal(t, 10, com.BadRows)
	assert.Equal(t, []Bad{
		{Reason: "missing_permit_number", Rows: 1, Lines: []int{3}},
		{Reason: "bad_application_date", Rows: 1, Lines: []int{4}},
		{Reason: "bad_issue_date", Rows: 1, Lines: []int{5}},
		{Reason: "bad_value", Rows: 2, Lines: []int{6, 7}},
		{Reason: "bad_coordinates", Rows: 2, Lines: []int{8, 13}},
		{Reason: "malformed_row", Rows: 1, Lines: []int{9}},
		{Reason: "duplicate_permit_number", Rows: 1, Lines: []int{10}},
		{Reason: "missing_permit_type", Rows: 1, Lines: []int{12}},
	}, com.Bad)

	_, p := permitOf(t, im, SourceCommercial, "11")
	require.NotNil(t, p.Valuation)
	assert.InDelta(t, 1250, *p.Valuation, 0)

	var text bytes.Buffer
	require.NoError(t, im.rep.WriteText(&text))
	assert.Contains(t, text.String(), "bad bad_value")
	assert.Contains(t, text.String(), "[6 7]")
}

func TestMultifamilyBadRows(t *testing.T) {
	header := strings.Join(multifamilyHeader, ",") + "\n"
	row := func(num, units, cost, applied, lat string) string {
		f := make([]string, len(multifamilyHeader))
		f[1], f[4], f[5], f[6] = num, "Building", "New", "Build"
		f[7], f[10], f[11] = units, cost, applied
		f[17], f[18], f[19], f[20] = "1 MAIN ST", "SEATTLE", "WA", "98101.0"
		f[23], f[24] = lat, "-122.33"
		return strings.Join(f, ",") + "\n"
	}
	rows := header +
		row("A-1", "2", `"400,000"`, "2014-06-17", "47.61") + // 2 kept
		row("A-2", "2", "400", "2014-06-31", "47.61") + // 3 bad date
		row("A-3", "two", "400", "2014-06-17", "47.61") + // 4 bad units
		row("A-4", "2", "400", "2014-06-17", "") + // 5 lat without lon
		row("A-5", "2", "4OO", "2014-06-17", "47.61") // 6 bad value
	im, err := runImport(withFile(data.SeattleMultifamilyPermits, rows))
	require.NoError(t, err)
	mf, ok := im.rep.File(data.SeattleMultifamilyPermits)
	require.True(t, ok)
	assert.Equal(t, 5, mf.Rows)
	assert.Equal(t, 1, mf.Permits)
	assert.Equal(t, []Bad{
		{Reason: "bad_application_date", Rows: 1, Lines: []int{3}},
		{Reason: "bad_housing_units", Rows: 1, Lines: []int{4}},
		{Reason: "bad_coordinates", Rows: 1, Lines: []int{5}},
		{Reason: "bad_value", Rows: 1, Lines: []int{6}},
	}, mf.Bad)
	_, p := permitOf(t, im, SourceMultifamily, "A-1")
	assert.InDelta(t, 400000, *p.Valuation, 0)
	assert.Equal(t, "98101", p.Address.Zipcode)
}

func TestUnexpectedHeaderFails(t *testing.T) {
	n := 0
	_, err := Import(context.Background(), withFile(data.SeattleMultifamilyPermits, "PermitNum,Other\n"), func(events.Envelope) error { n++; return nil })
	require.ErrorContains(t, err, "unexpected header")
	assert.Zero(t, n, "nothing is emitted unless both files were read")
}

func TestImportStopsOnEmitError(t *testing.T) {
	stop := io.ErrShortWrite
	n := 0
	_, err := Import(context.Background(), data.Open, func(events.Envelope) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 3, n)
}

func TestImportHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Import(ctx, data.Open, func(events.Envelope) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
}

func TestNearestZIP(t *testing.T) {
	idx, err := loadZipIndex(data.Open, "WA")
	require.NoError(t, err)
	tests := []struct {
		name     string
		lat, lon float64
		zip      string
		conf     float64
	}{
		{"600 University St, downtown", 47.60967252, -122.3323065, "98101", 0.8},
		{"Capitol Hill", 47.62218901, -122.32586296, "98102", 0.8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zip, _, conf := idx.nearest(tt.lat, tt.lon)
			assert.Equal(t, tt.zip, zip)
			assert.InDelta(t, tt.conf, conf, 0)
		})
	}
	t.Run("PO-box ZIPs on the city centre are not candidates", func(t *testing.T) {
		zip, _, _ := idx.nearest(47.6062, -122.3321)
		assert.NotContains(t, []string{"98111", "98114", "98124", "98129", "98131", "98138", "98145", "98160", "98161", "98174", "98181", "98185", "98190", "98191"}, zip)
	})
}

func TestParsers(t *testing.T) {
	t.Run("dates", func(t *testing.T) {
		for _, tt := range []struct{ in, layout, want string }{
			{"12/6/10", "1/2/06", "2010-12-06"},
			{"6/17/05", "1/2/06", "2005-06-17"},
			{"", "1/2/06", ""},
			{"2024-02-29", "2006-01-02", "2024-02-29"},
		} {
			got, ok := parseDate(tt.in, tt.layout)
			assert.True(t, ok, tt.in)
			assert.Equal(t, tt.want, got, tt.in)
		}
		for _, in := range []string{"2/30/12", "12/6/2010x", "13/1/10"} {
			_, ok := parseDate(in, "1/2/06")
			assert.False(t, ok, in)
		}
	})
	t.Run("valuation", func(t *testing.T) {
		for _, tt := range []struct {
			in   string
			want float64
			note string
			null bool
		}{
			{"3,203,426", 3203426, "", false},
			{"149000", 149000, "", false},
			{"1", 0, "placeholder_1", true},
			{"0", 0, "placeholder_0", true},
			{"", 0, "missing", true},
			{"1.5", 1.5, "", false},
		} {
			v, note, ok := parseValuation(tt.in)
			require.True(t, ok, tt.in)
			assert.Equal(t, tt.note, note, tt.in)
			if tt.null {
				assert.Nil(t, v, tt.in)
			} else {
				require.NotNil(t, v, tt.in)
				assert.InDelta(t, tt.want, *v, 0, tt.in)
			}
		}
		for _, in := range []string{"abc", "-3", "NaN", "Inf"} {
			_, _, ok := parseValuation(in)
			assert.False(t, ok, in)
		}
	})
	t.Run("source zip", func(t *testing.T) {
		for in, want := range map[string]string{"98102.0": "98102", "98102": "98102", "98102-1234": "98102", "83.0": "", "": "", "9810A": ""} {
			got, ok := sourceZIP(in)
			assert.Equal(t, want != "", ok, in)
			assert.Equal(t, want, got, in)
		}
	})
}
