package indexer_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

// Each entity topic's messages bound its family's documents; other
// topics are left out.
func TestBacklogKinds(t *testing.T) {
	got := indexer.BacklogKinds(map[string]int64{
		"permitd.locations.v1": 98016, "permitd.permits.v1": 1000, "permitd.properties.v1": 600,
		"permitd.geo-signals.v1": 30, "permitd.permit-leads.v1": 1800, "permitd.catalog.v1": 4,
		"permitd.dead-letter.v1": 7, "someone.elses.topic": 9, "permitd.permits.v2": 0,
	})
	require.Equal(t, map[readmodel.Kind]int64{
		readmodel.KindLocation: 98016, readmodel.KindPermit: 1000, readmodel.KindProperty: 600,
		readmodel.KindGeoSignal: 30, readmodel.KindLead: 1800, readmodel.KindCatalog: 4,
	}, got)
	require.Empty(t, indexer.BacklogKinds(nil))
}
