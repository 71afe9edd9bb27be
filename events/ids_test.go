package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsPermitDocID(t *testing.T) {
	for _, tc := range []struct {
		id, source, number string
		want               bool
	}{
		{"sea:B-1", "sea", "B-1", true},
		{"sea:B-1", "sea", "B-2", false},
		{"sea:B-1", "se", "a:B-1", false},
		{"seaxB-1", "sea", "B-1", false},
		{"sea:B-1x", "sea", "B-1", false},
		{"sea:", "sea", "", true},
		{"", "", "", false},
	} {
		require.Equal(t, tc.id == PermitDocID(tc.source, tc.number), IsPermitDocID(tc.id, tc.source, tc.number), tc)
		require.Equal(t, tc.want, IsPermitDocID(tc.id, tc.source, tc.number), tc)
	}
}
