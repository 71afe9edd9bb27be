package indexer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/permitd/permitd/readmodel"
)

// Re-links across a restart from a snapshot.
//
// A snapshot holds the read model's documents, so an unlinked permit
// comes back unlinked, but not the message the re-link projects again
// (the document alone cannot be re-linked exactly: a permit's ZIP
// confidence and method come from its event). The remembered messages
// are therefore saved beside the snapshot, in a re-link file
// (UnlinkedPath: the snapshot's path + ".unlinked"), and handed to the
// indexer again after the snapshot is loaded (RestoreUnlinked): each is
// projected again like a message read from the source (it waits for its
// location until the indexer settles, then is remembered), so a location
// that arrives after the restart re-links it.
//
// The re-link file is written before the snapshot, each atomically
// (temporary file, fsync, rename), so the file on disk is never older
// than the snapshot; a kill between the two leaves a newer re-link file
// beside the older snapshot. To pair with that older snapshot too, the
// file also holds the messages re-linked since the state of the last
// snapshot written (a location consumed after that snapshot's offsets is
// consumed again after the restart, and needs them); SavedUnlinked
// forgets those once a newer snapshot is on disk. Extra messages are
// harmless: their re-link is stale against the linked document. A
// missing or corrupt re-link file is refused with an error log by the
// caller: the documents stay unlinked until re-published, never wrong.

// UnlinkedPath is the re-link file saved beside a snapshot.
func UnlinkedPath(snapshotPath string) string { return snapshotPath + ".unlinked" }

var unlinkedMagic = []byte("PERMITD-UNLINKED-1\n")

// ErrUnlinkedCorrupt is a re-link file that fails its checks.
var ErrUnlinkedCorrupt = errors.New("indexer: re-link file is corrupt")

// retired is a remembered message whose re-link is durable, kept for
// the next re-link file (see above).
type retired struct {
	p   parked
	seq uint64
}

// TrackRelinksForSnapshots makes the indexer keep the messages it
// re-links until a snapshot newer than their re-link is saved
// (SavedUnlinked), within Params.MaxUnlinkedBytes. Call it before the
// first batch when snapshots with re-link files are written.
func (ix *Indexer) TrackRelinksForSnapshots() {
	ix.loc.mu.Lock()
	ix.loc.trackRetired = true
	ix.loc.mu.Unlock()
}

// retireLocked records p's durable re-link (t.mu held).
func (t *locations) retireLocked(p parked) {
	if !t.trackRetired {
		return
	}
	t.retireSeq++
	t.retired = append(t.retired, retired{p, t.retireSeq})
	t.retiredBytes += p.size()
	for len(t.retired) > 0 && t.retiredBytes > t.maxUnlinkedBytes {
		t.retiredBytes -= t.retired[0].p.size()
		t.retired[0] = retired{}
		t.retired = t.retired[1:]
	}
}

// CaptureUnlinked returns the messages a re-link file saves now: every
// remembered message and every one re-linked since the last saved mark,
// and the mark to pass to SavedUnlinked once the snapshot taken after
// this capture is on disk. Take it after the snapshot's offsets and
// before its export.
func (ix *Indexer) CaptureUnlinked() ([]Message, uint64) {
	t := ix.loc
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Message, 0, len(t.unlinked)+len(t.retired))
	for _, p := range t.unlinked {
		out = append(out, p.msg)
	}
	for _, r := range t.retired {
		out = append(out, r.p.msg)
	}
	return out, t.retireSeq
}

// SavedUnlinked forgets the re-linked messages up to mark: a snapshot
// taken after the capture that returned mark is on disk.
func (ix *Indexer) SavedUnlinked(mark uint64) {
	t := ix.loc
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for n < len(t.retired) && t.retired[n].seq <= mark {
		t.retiredBytes -= t.retired[n].p.size()
		n++
	}
	t.retired = append(t.retired[:0:0], t.retired[n:]...)
}

// RestoreUnlinked hands the messages of a re-link file to the indexer
// after its snapshot is loaded, before the source starts: each is
// projected again as if read from the source (it waits for its location
// until Settle). It returns once they are handled as HandleBatch says.
func (ix *Indexer) RestoreUnlinked(ctx context.Context, msgs []Message) error {
	const chunk = 1024
	for len(msgs) > 0 {
		n := min(chunk, len(msgs))
		if err := ix.HandleBatch(ctx, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// WriteUnlinked writes msgs to path atomically (temporary file in the
// same directory, fsync, rename, directory fsync): magic, a count, each
// message's topic, partition, offset, key and value, and a SHA-256 of
// everything before it.
func WriteUnlinked(path string, msgs []Message) error {
	var buf bytes.Buffer
	buf.Write(unlinkedMagic)
	var n [binary.MaxVarintLen64]byte
	uv := func(x uint64) { buf.Write(n[:binary.PutUvarint(n[:], x)]) }
	field := func(p []byte) { uv(uint64(len(p))); buf.Write(p) }
	uv(uint64(len(msgs)))
	for _, m := range msgs {
		field([]byte(m.Topic))
		uv(uint64(m.Partition))
		uv(uint64(m.Offset))
		field(m.Key)
		field(m.Value)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])

	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("indexer: re-link file: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("indexer: re-link file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("indexer: re-link file: fsync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("indexer: re-link file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("indexer: re-link file: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// ReadUnlinked reads a re-link file written by WriteUnlinked. A missing
// file is an error wrapping os.ErrNotExist; a file that fails its magic,
// checksum or framing wraps ErrUnlinkedCorrupt.
func ReadUnlinked(path string) ([]Message, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("indexer: re-link file: %w", err)
	}
	if len(raw) < len(unlinkedMagic)+sha256.Size || !bytes.HasPrefix(raw, unlinkedMagic) {
		return nil, fmt.Errorf("%w: %s: no header", ErrUnlinkedCorrupt, path)
	}
	body, sum := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrUnlinkedCorrupt, path)
	}
	r := bytes.NewReader(body[len(unlinkedMagic):])
	bad := func(what string) error { return fmt.Errorf("%w: %s: %s", ErrUnlinkedCorrupt, path, what) }
	field := func() ([]byte, error) {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > uint64(len(body)) {
			return nil, bad("bad length")
		}
		p := make([]byte, l)
		if _, err := io.ReadFull(r, p); err != nil {
			return nil, bad("truncated")
		}
		return p, nil
	}
	count, err := binary.ReadUvarint(r)
	if err != nil || count > uint64(len(body)) {
		return nil, bad("bad count")
	}
	msgs := make([]Message, 0, count)
	for range count {
		var m Message
		topic, err := field()
		if err != nil {
			return nil, err
		}
		part, err1 := binary.ReadUvarint(r)
		off, err2 := binary.ReadUvarint(r)
		if err1 != nil || err2 != nil {
			return nil, bad("truncated")
		}
		if m.Key, err = field(); err != nil {
			return nil, err
		}
		if m.Value, err = field(); err != nil {
			return nil, err
		}
		m.Topic, m.Partition, m.Offset = string(topic), int(part), int64(off)
		msgs = append(msgs, m)
	}
	if r.Len() > 0 {
		return nil, bad("trailing bytes")
	}
	return msgs, nil
}

// countUnlinked counts the documents of b written without a location
// they name.
func countUnlinked(b *readmodel.Batch) int64 {
	var n int64
	for _, p := range b.Permits {
		if !p.Linked() {
			n++
		}
	}
	for _, p := range b.Properties {
		if !p.Linked() {
			n++
		}
	}
	for _, l := range b.Leads {
		if !l.Linked() {
			n++
		}
	}
	return n
}

// PreloadedUnlinked is the number of documents the batches given to
// Preload hold without a location they name (including leads anchored to
// a state by their producer): what a re-link file restores, or what
// stays unlinked without one.
func (ix *Indexer) PreloadedUnlinked() int64 { return ix.preloadedUnlinked.Load() }
