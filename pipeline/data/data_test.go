package data

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenLineCounts(t *testing.T) {
	// Physical lines (newline-terminated or final partial line), header
	// included: the counts /work/shared/data/README.md documents plus the
	// header row where the file has one.
	tests := []struct {
		name  string
		lines int
		first string
	}{
		{Counties, 3221, "USPS|GEOID|ANSICODE|NAME|ALAND|AWATER|ALAND_SQMI|AWATER_SQMI|INTPTLAT|INTPTLONG"},
		{Cities, 30411, "city,city_ascii,state_id,state_name,county_fips,county_name,lat,lng,population,density,source,military,incorporated,timezone,ranking,zips,id"},
		{PostalCodes, 41490, "US\t99553\tAkutan\tAlaska\tAK\tAleutians East\t013\t\t\t54.143\t-165.7854\t1"},
		{ZipCounties, 54148, "zip,fips,county,state"},
		{SeattleCommercialPermits, -1, ""},
		{SeattleMultifamilyPermits, -1, ""},
	}
	require.Len(t, Names, len(tests))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := Open(tc.name)
			require.NoError(t, err)
			defer rc.Close()
			sc := bufio.NewScanner(rc)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			n := 0
			for sc.Scan() {
				if n == 0 && tc.first != "" {
					require.Equal(t, tc.first, sc.Text())
				}
				n++
			}
			require.NoError(t, sc.Err())
			if tc.lines >= 0 {
				require.Equal(t, tc.lines, n)
			} else {
				require.Greater(t, n, 1000)
			}
		})
	}
}

// TestMatchesShared checks the bundled copies against the originals in
// ../shared/data beside the repository (looked for up to three levels
// above it, as a git worktree lives deeper than the main checkout;
// PERMITD_SHARED_DATA overrides). Without them the test skips, unless CI
// is set: CI has ../shared beside the repository, so there the
// comparison must happen (as test/e2e does).
func TestMatchesShared(t *testing.T) {
	dir := os.Getenv("PERMITD_SHARED_DATA")
	if dir == "" {
		dir = sharedData(t)
	}
	if _, err := os.Stat(dir); dir == "" || err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the original data is not beside the repository (%q; set PERMITD_SHARED_DATA): %v", dir, err)
		}
		t.Skipf("original data provider (../shared/data) not found beside the repository (%q; set PERMITD_SHARED_DATA): %v", dir, err)
	}
	for _, name := range Names {
		want, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		rc, err := Open(name)
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.True(t, bytes.Equal(want, got), "%s differs from %s", name, dir)
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := Open("nope.csv")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// sharedData finds shared/data in a directory above the repository root
// (two levels above this package), or returns "".
func sharedData(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	dir := filepath.Dir(filepath.Dir(wd)) // the repository root
	for range 3 {
		dir = filepath.Dir(dir)
		if d := filepath.Join(dir, "shared", "data"); len(Names) > 0 && fileExists(filepath.Join(d, Names[0])) {
			return d
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
