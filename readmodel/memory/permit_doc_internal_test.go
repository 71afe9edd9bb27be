package memory

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// formatDay gives time's YYYY-MM-DD for every day, from the shared
// strings of 1900 to 2099 and by formatting outside them.
func TestFormatDay(t *testing.T) {
	require.Empty(t, formatDay(noDate))
	first := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, int64(firstStringDay), first.Unix()/86400)
	last := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
	require.Len(t, dayStrings(), int(last-firstStringDay))
	for d := int64(firstStringDay) - 400; d < last+400; d++ {
		want := time.Unix(d*86400, 0).UTC().Format(time.DateOnly)
		require.Equal(t, want, formatDay(int32(d)))
		require.Equal(t, int32(d), parseDay(want), "round trip")
	}
	for _, d := range []int32{-800_000, 800_000} { // years 0 to 4160
		require.Equal(t, time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly), formatDay(d))
	}
	a, b := formatDay(20_000), formatDay(20_000)
	require.Equal(t, unsafe.StringData(a), unsafe.StringData(b), "a day in range is one string")
}
