package events

import (
	"strings"
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

// IsLeadID agrees with LeadID, and LeadID keeps its form.
func TestIsLeadID(t *testing.T) {
	long := strings.Repeat("p", 300) // past leadHash's stack buffer
	for _, c := range []struct{ permit, key string }{{"seattle-123", "permit_issued"}, {"", ""}, {long, "k"}, {"a\x00b", "c"}} {
		id := LeadID(c.permit, c.key)
		require.Len(t, id, len("lead_")+24)
		require.True(t, strings.HasPrefix(id, "lead_"))
		require.True(t, IsLeadID(id, c.permit, c.key))
		require.False(t, IsLeadID(id, c.permit+"x", c.key))
		require.False(t, IsLeadID(id[:len(id)-1], c.permit, c.key))
		require.False(t, IsLeadID("LEAD_"+id[5:], c.permit, c.key))
		require.False(t, IsLeadID(id+"0", c.permit, c.key))
	}
	// A fixed value (sha256 of "lead\x00seattle-123\x00permit_issued",
	// its first 12 bytes in hex): the ids already published stay valid.
	require.Equal(t, "lead_2add6333ef633c3df3e1fc0b", LeadID("seattle-123", "permit_issued"))
	require.True(t, IsLeadID("lead_2add6333ef633c3df3e1fc0b", "seattle-123", "permit_issued"))
}

// TestIsLeadIDAllocatesNothing: the indexer checks every lead event's id,
// so the check allocates nothing, whatever the compiler inlines (make
// test runs it built with cmd/permitd/default.pgo too, as the binary is).
func TestIsLeadIDAllocatesNothing(t *testing.T) {
	id := LeadID("seattle-123", "permit_issued")
	if n := testing.AllocsPerRun(100, func() { _ = IsLeadID(id, "seattle-123", "permit_issued") }); n != 0 {
		t.Fatalf("IsLeadID took %v allocations, want 0", n)
	}
}
