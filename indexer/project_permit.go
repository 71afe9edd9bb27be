package indexer

import (
	"context"
	"fmt"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// projectPermitFamily projects permit.upserted and property.upserted.
func projectPermitFamily(ctx context.Context, env events.Envelope, look Lookup) (readmodel.Batch, error) {
	return readmodel.Batch{}, fmt.Errorf("%w: no projection for %s in this build", events.ErrInvalid, env.Type)
}
