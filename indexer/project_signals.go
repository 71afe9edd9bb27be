package indexer

import (
	"context"
	"fmt"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// projectSignalFamily projects geo_signal, permit_lead and catalog upserts.
func projectSignalFamily(ctx context.Context, env events.Envelope, look Lookup) (readmodel.Batch, error) {
	return readmodel.Batch{}, fmt.Errorf("%w: no projection for %s in this build", events.ErrInvalid, env.Type)
}
