// Dead letters: messages that cannot be decoded and documents the store refuses, handed to the dead-letter function.

package indexer

import (
	"context"
	"errors"
	"fmt"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// deadLetters sends every message whose error wraps events.ErrInvalid
// to the dead-letter sink; any other error (a lookup failed, ctx ended)
// fails the batch for the source to retry, dead-lettering nothing.
func (ix *Indexer) deadLetters(ctx context.Context, msgs []Message, errs []error) error {
	for i, err := range errs {
		if err == nil {
			continue
		}
		m := msgs[i]
		if !errors.Is(err, events.ErrInvalid) {
			return fmt.Errorf("indexer: project %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		m := msgs[i]
		if err := ix.p.DeadLetter(ctx, m, err); err != nil {
			return fmt.Errorf("indexer: dead-letter %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
		ix.deadLetter.Add(1)
		ix.p.Metrics.deadLetter(m.Topic)
	}
	return nil
}

// docKey names one document version of a batch.
type docKey struct {
	kind    readmodel.Kind
	id      string
	version int64
}

// deadLetterRefused sends every message whose projected documents include
// one the read model refused for good to the dead-letter sink, with the
// item's reason. It projects the batch's messages again to find them:
// the path is rare, and the batch keeps no per-message bookkeeping for it.
// A refused document that no message produced fails the batch rather
// than being dropped unseen.
func (ix *Indexer) deadLetterRefused(ctx context.Context, msgs []Message, errs []error, refused *readmodel.ItemErrors) error {
	left := make(map[docKey]readmodel.ItemError, len(refused.Items))
	for _, it := range refused.Items {
		left[docKey{it.Kind, it.ID, it.Version}] = it
	}
	for i, m := range msgs {
		if errs[i] != nil || len(left) == 0 {
			continue // already dead-lettered, or nothing left to find
		}
		var b readmodel.Batch
		if err := ix.decode(ctx, m, &b, missFinal); err != nil {
			return fmt.Errorf("indexer: project %s/%d@%d again: %w", m.Topic, m.Partition, m.Offset, err)
		}
		var reasons []error
		for _, k := range docKeys(&b) {
			if it, ok := left[k]; ok {
				reasons = append(reasons, fmt.Errorf("read model refused %s %q v%d: %s", it.Kind, it.ID, it.Version, it.Reason))
				delete(left, k)
			}
		}
		if len(reasons) == 0 {
			continue
		}
		if err := ix.p.DeadLetter(ctx, m, errors.Join(reasons...)); err != nil {
			return fmt.Errorf("indexer: dead-letter %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
		ix.deadLetter.Add(1)
		ix.p.Metrics.deadLetter(m.Topic)
	}
	if len(left) > 0 {
		return fmt.Errorf("indexer: %d refused documents match no message of the batch: %w", len(left), refused)
	}
	return nil
}

// docKeys lists the documents and deletes of b.
func docKeys(b *readmodel.Batch) []docKey {
	out := make([]docKey, 0, b.Len())
	for _, x := range b.Locations {
		out = append(out, docKey{readmodel.KindLocation, x.GeoID, x.Version})
	}
	for _, x := range b.Permits {
		out = append(out, docKey{readmodel.KindPermit, x.PermitID, x.Version})
	}
	for _, x := range b.Properties {
		out = append(out, docKey{readmodel.KindProperty, x.PropertyID, x.Version})
	}
	for _, x := range b.GeoSignals {
		out = append(out, docKey{readmodel.KindGeoSignal, x.ID(), x.Version})
	}
	for _, x := range b.Leads {
		out = append(out, docKey{readmodel.KindLead, x.LeadID, x.Version})
	}
	for _, x := range b.Catalog {
		out = append(out, docKey{readmodel.KindCatalog, x.ID(), x.Version})
	}
	for _, x := range b.Deletes {
		out = append(out, docKey{x.Kind, x.ID, x.Version})
	}
	return out
}
