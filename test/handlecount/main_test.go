package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMixFileRoundTrip(t *testing.T) {
	var b []byte
	b = append(b, mixMagic...)
	for _, f := range []string{"permitd.locations.v1", "g1", `{"a":1}`, "permitd.permits.v1", "", "{}"} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mix.bin")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	recs, err := readMix(path)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "permitd.locations.v1", string(recs[0].topic))
	require.Equal(t, "g1", string(recs[0].key))
	require.Equal(t, `{"a":1}`, string(recs[0].value))
	require.Equal(t, "permitd.permits.v1", string(recs[1].topic))
	require.Empty(t, recs[1].key)
	require.Equal(t, "{}", string(recs[1].value))

	// A record cut short, and a file of another format, are refused.
	require.NoError(t, os.WriteFile(path, b[:len(b)-1], 0o644))
	_, err = readMix(path)
	require.ErrorContains(t, err, "truncated")
	require.NoError(t, os.WriteFile(path, []byte("permitd-mix 0\n"), 0o644))
	_, err = readMix(path)
	require.ErrorContains(t, err, "not a mix file")
}

// cachegrind's summary as valgrind 3.19 prints it with --cache-sim=yes.
const summary319 = `==5413== 
==5413== I   refs:      9,542,111,279
==5413== I1  misses:       90,568,685
==5413== LLi misses:           21,980
==5413== I1  miss rate:          0.95%
==5413== LLi miss rate:          0.00%
==5413== 
==5413== D   refs:      3,251,543,997  (2,163,815,027 rd   + 1,087,728,970 wr)
==5413== D1  misses:       53,290,462  (   37,638,886 rd   +    15,651,576 wr)
==5413== LLd misses:       11,718,516  (    5,146,940 rd   +     6,571,576 wr)
==5413== D1  miss rate:           1.6% (          1.7%     +           1.4%  )
==5413== LLd miss rate:           0.4% (          0.2%     +           0.6%  )
==5413== 
==5413== LL refs:         143,859,147  (  128,207,571 rd   +    15,651,576 wr)
==5413== LL misses:        11,740,496  (    5,168,920 rd   +     6,571,576 wr)
==5413== LL miss rate:            0.1% (          0.0%     +           0.6%  )
`

func TestParseCounts(t *testing.T) {
	c, err := parseCounts(summary319)
	require.NoError(t, err)
	require.Equal(t, counts{ir: 9542111279, dr: 3251543997, d1: 53290462, lld: 11718516}, c)
	_, err = parseCounts("==1== valgrind: the program crashed\n")
	require.ErrorContains(t, err, "no cachegrind summary")

	c.events = 1000
	base := counts{ir: 542111279, dr: 251543997, d1: 3290462, lld: 1718516}
	require.Equal(t, "9000000 instructions, 3000000 data refs, 50000.00 D1 misses, 10000.000 LL data misses an event", c.less(base).perEvent())
}
