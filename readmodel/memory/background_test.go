package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// backgroundHook counts the second sides' builds Params.Background is
// told of, and their ends.
type backgroundHook struct {
	s            *memory.Store
	began, ended atomic.Int32
	pendingAtEnd atomic.Bool // the side was not in place when the end was told
	endedCh      chan struct{}
}

func newBackgroundHook() *backgroundHook { return &backgroundHook{endedCh: make(chan struct{}, 8)} }

func (h *backgroundHook) hook() func() {
	h.began.Add(1)
	return func() {
		h.pendingAtEnd.Store(h.s.SecondSidePending())
		h.ended.Add(1)
		h.endedCh <- struct{}{}
	}
}

// hookedStore is a Store told of its work by a backgroundHook, whose
// second sides' builds tell held and then wait for release.
func hookedStore(t *testing.T) (s *memory.Store, h *backgroundHook, held <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	rel, hd := make(chan struct{}), make(chan struct{}, 1)
	t.Cleanup(memory.HoldStandby(func() { hd <- struct{}{}; <-rel }))
	h = newBackgroundHook()
	s = memory.New(memory.Params{Background: h.hook})
	h.s = s
	return s, h, hd, rel
}

// writeStep applies a write that changes nothing (a delete of no permit).
func writeStep(t *testing.T, s *memory.Store) {
	t.Helper()
	apply(t, s, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "none", Version: 1}}})
}

// waitEnd waits for a build's end to be told.
func (h *backgroundHook) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case <-h.endedCh:
	case <-time.After(time.Minute):
		t.Fatal("the build's end was not told")
	}
}

// Params.Background is told when a second side's build starts in the
// background, after a replay, an Import's Commit (kept and lent
// batches), and when it has ended: once each, the end after the side is
// in place (or the build abandoned), never while the build is held. A
// write step is told of too, but not a replay's.
func TestBackgroundHookSpansTheSecondSidesBuild(t *testing.T) {
	ctx := context.Background()
	want, err := newStore(t).Digest(ctx)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		fill func(t *testing.T, s *memory.Store, h *backgroundHook)
	}{
		{"replay", func(t *testing.T, s *memory.Store, h *backgroundHook) {
			require.True(t, s.BeginReplay())
			applyBase(t, s)
			require.Zero(t, h.began.Load(), "a replay's writes are not beside readers")
			s.EndReplay()
		}},
		{"import", func(t *testing.T, s *memory.Store, h *backgroundHook) {
			im := s.NewImport()
			require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
			require.NoError(t, im.Commit())
		}},
		{"lent import", func(t *testing.T, s *memory.Store, h *backgroundHook) {
			im := s.NewImport()
			require.NoError(t, newStore(t).Export(ctx, 100, func(b readmodel.Batch) error {
				return im.AddLent(b, nil, func() {})
			}))
			require.NoError(t, im.Commit())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, h, held, release := hookedStore(t)
			tc.fill(t, s, h)
			<-held
			require.EqualValues(t, 1, h.began.Load(), "begun as the build starts")
			require.Zero(t, h.ended.Load(), "not ended while the build is held")
			close(release)
			h.waitEnd(t)
			require.EqualValues(t, 1, h.ended.Load())
			require.False(t, h.pendingAtEnd.Load(), "ended once the side was in place")
			got, err := s.Digest(ctx)
			require.NoError(t, err)
			require.Equal(t, want, got)
			// The side is in place: a write is told of, and builds
			// nothing in the background.
			writeStep(t, s)
			h.waitEnd(t)
			require.EqualValues(t, 2, h.began.Load(), "the build and the write")
			require.EqualValues(t, 2, h.ended.Load())
		})
	}
}

// A build abandoned by StopBuilding ends too; none begins after it.
func TestBackgroundHookEndsAnAbandonedBuild(t *testing.T) {
	s, h, held, release := hookedStore(t)
	require.True(t, s.BeginReplay())
	applyBase(t, s)
	s.EndReplay()
	<-held
	require.True(t, s.StopBuilding())
	close(release)
	h.waitEnd(t)
	writeStep(t, s)
	h.waitEnd(t)
	require.EqualValues(t, 2, h.began.Load(), "the build and the write (which builds the side itself, not in the background)")
	require.EqualValues(t, 2, h.ended.Load())
}
