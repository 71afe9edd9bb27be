package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/permitd/permitd/readmodel"
)

// ErrOtherEncoding: the store holds documents written under an external
// version encoding other than this build's (writer.go: 3v + rank), so
// the engine would compare this build's versions with stored ones that
// mean something else (an older entity version taking over a newer one,
// a replayed unlinked copy undoing a re-link). Such a store is rebuilt by
// a replay, not reindexed (docs/operations.md, External versions).
var ErrOtherEncoding = errors.New("opensearch: documents written under another external version encoding")

// versionSampleSize is how many documents of each kind CheckVersions
// reads.
const versionSampleSize = 100

// versionSampleBody reads a sample of an index's documents (index order:
// the cheapest) with their _version and entity version only.
func versionSampleBody() obj {
	return obj{"size": versionSampleSize, "version": true, "_source": obj{"includes": []string{"version"}},
		"sort": []any{"_doc"}, "track_total_hits": false}
}

// CheckVersions reads a sample of every document index (one _msearch)
// and fails with ErrOtherEncoding when a document's _version is not
// 3v, 3v+1 or 3v+2 of its entity version v. The encodings before this
// one (2v and 2v+1; the entity version itself) give every document of
// version 2 or more away, and an unlinked one of version 1 (2); a
// linked document or a tombstone of version 1 under 2v+1 (3) reads as
// an unlinked one here, which only a later write of that version can
// take over. serve and index run it at start, before they read or write
// (cmd/permitd).
func (s *Store) CheckVersions(ctx context.Context) error {
	reqs := make([]msearchReq, 0, len(readmodel.Kinds))
	for _, k := range readmodel.Kinds {
		reqs = append(reqs, msearchReq{index: s.read(k), body: versionSampleBody()})
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return fmt.Errorf("opensearch: reading a sample of the stored versions: %w", err)
	}
	for i, k := range readmodel.Kinds {
		for _, h := range rs[i].Hits.Hits {
			var src struct {
				Version int64 `json:"version"`
			}
			if err := json.Unmarshal(h.Source, &src); err != nil {
				return fmt.Errorf("opensearch: %s %s: %w", k, h.ID, err)
			}
			if h.Version == nil {
				return fmt.Errorf("opensearch: %s %s read without _version", k, h.ID)
			}
			if r := rankOf(src.Version, *h.Version); r < rankUnlinked || r > rankTombstone {
				return fmt.Errorf("%w: %s %s of version %d is stored at _version %d, where this build writes %d to %d: rebuild the indices by a replay (docs/operations.md, External versions)",
					ErrOtherEncoding, s.read(k), h.ID, src.Version, *h.Version, 3*src.Version, 3*src.Version+2)
			}
		}
	}
	return nil
}
