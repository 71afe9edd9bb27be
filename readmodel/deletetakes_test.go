package readmodel_test

import (
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// TestDeleteTakes: a delete takes over an older row, and over a live
// document of its own version, never over a tombstone of its version or
// a newer row.
func TestDeleteTakes(t *testing.T) {
	for _, tc := range []struct {
		version, stored int64
		tombstone, want bool
	}{
		{5, 4, false, true}, {5, 4, true, true},
		{5, 5, false, true}, {5, 5, true, false},
		{5, 6, false, false}, {5, 6, true, false},
	} {
		if got := readmodel.DeleteTakes(tc.version, tc.stored, tc.tombstone); got != tc.want {
			t.Errorf("DeleteTakes(%d, %d, tombstone %v) = %v, want %v", tc.version, tc.stored, tc.tombstone, got, tc.want)
		}
	}
}
