package snapshot

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The decoder's strings are copies in chunks: each keeps its bytes while
// the source buffer is written over and later strings fill the chunk
// and the next ones; a string longer than strArenaMax is a copy of its
// own, and an empty one takes nothing.
func TestDecTableStrings(t *testing.T) {
	tab := newDecTable()
	src := make([]byte, 64)
	var got, want []string
	for i := range 5000 { // several chunks
		w := fmt.Sprintf("street %d of the snapshot", i)
		n := copy(src, w)
		got = append(got, tab.str(src[:n]))
		want = append(want, w)
		clear(src) // the frame buffer is reused
	}
	require.Equal(t, want, got)
	require.Less(t, strArenaChunk, 5000*len("street 0 of the snapshot"), "the strings span chunks")
	a, b := unsafe.StringData(got[0]), unsafe.StringData(got[1])
	require.Equal(t, uintptr(unsafe.Pointer(a))+uintptr(len(got[0])), uintptr(unsafe.Pointer(b)), "one chunk, one after the other")

	long := bytes.Repeat([]byte("x"), strArenaMax+1)
	s := tab.str(long)
	long[0] = 'y'
	require.Equal(t, string(bytes.Repeat([]byte("x"), strArenaMax+1)), s)
	next := tab.str([]byte("after"))
	require.Equal(t, uintptr(unsafe.Pointer(unsafe.StringData(got[len(got)-1])))+uintptr(len(got[len(got)-1])), uintptr(unsafe.Pointer(unsafe.StringData(next))),
		"a long string leaves the chunk as it was")
	require.Empty(t, tab.str(nil))
}
