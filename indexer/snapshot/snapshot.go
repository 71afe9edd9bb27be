// Package snapshot writes and loads snapshots of an embedded read model
// (the memory backend) with the Kafka positions it reflects, so a restart
// loads the snapshot and replays only what came after, instead of every
// partition from the earliest offset.
//
// File format (version 6), in order:
//
//	magic   "PERMITDSNAP\x00" (12 bytes)
//	version uint32 big-endian (FormatVersion)
//	frames  uvarint length, then that many bytes in the binary document
//	        codec (codec.go): first the header (creation time, consumed
//	        offset of every partition), then readmodel.Batch values
//	        (documents, and tombstones as Deletes); a zero length ends.
//	        The frames share one string table and one table of geo
//	        link lists, in order (codec.go, codec_links.go)
//	counts  the number of documents and tombstones of each kind in the
//	        frames, uint64 big-endian each, in countKinds' order (48
//	        bytes): a load presizes its tables with them (LoadSized)
//	sum     CRC-32C (Castagnoli) of every byte before it, uint32
//	        big-endian (4 bytes)
//
// The checksum guards against corruption and truncation (a torn write, a
// bad disk, a copy cut short), not against a forger: the file is the
// process's own. CRC-32C is computed by the CPU's CRC32 instruction at
// several GB/s, where SHA-256 (version 2) cost about a second per
// hundreds of MB on the development machine, on a start's critical path.
// Versions 1 (JSON frames), 2 (SHA-256 trailer), 3 (every string
// written out at each occurrence), 4 (no counts) and 5 (geo link lists
// written out at each occurrence) are refused like any other format: a full replay follows. The codec carries every exported field of the documents, so a
// change to the document types must bump FormatVersion.
//
// A snapshot is written to a temporary file in the same directory,
// fsynced, renamed over the old one and the directory fsynced: a crash at
// any point leaves the previous snapshot or the new one, never a mix.
// Load checks the magic, the version and the checksum over the whole file
// before it applies anything, so a corrupt, truncated or old-format file
// is refused (ErrCorrupt, ErrFormat) and nothing wrong is loaded. The
// counts are checked against the frames as they are read: under a right
// checksum a mismatch is a writer's bug, reported as ErrCorrupt after
// the batches were applied (the caller aborts its import then).
package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// LoadGCPercent is the garbage collector's target (GOGC) a caller may set
// while it loads a snapshot (debug.SetGCPercent), restoring its own
// after: off. The load keeps nearly all it allocates (the batches stay
// until the store's second side has taken them, memory.Import), so a
// collection during it marks a growing heap to free little: at 200,000
// permits, 930 MB allocated to the Import's Commit left 795 MB in use
// with collections at 200% (5 of them, a fifth of the load's CPU) and
// 934 MB without. A memory limit (GOMEMLIMIT) still applies: the
// collector runs when the heap nears it.
const LoadGCPercent = -1

// FormatVersion is the version this build writes and reads.
const FormatVersion uint32 = 6

// countKinds are the kinds whose counts the file holds, in order.
var countKinds = [...]readmodel.Kind{
	readmodel.KindLocation, readmodel.KindPermit, readmodel.KindProperty,
	readmodel.KindGeoSignal, readmodel.KindLead, readmodel.KindCatalog,
}

// countsSize is the size of the counts before the checksum.
const countsSize int64 = 8 * int64(len(countKinds))

// Counts are the documents and tombstones of each kind a snapshot holds
// (the file holds those of countKinds), the map memory.(*Import).Reserve
// takes.
type Counts = map[readmodel.Kind]int64

// addCounts counts b's documents and tombstones in c.
func addCounts(c Counts, b *readmodel.Batch) {
	c[readmodel.KindLocation] += int64(len(b.Locations))
	c[readmodel.KindPermit] += int64(len(b.Permits))
	c[readmodel.KindProperty] += int64(len(b.Properties))
	c[readmodel.KindGeoSignal] += int64(len(b.GeoSignals))
	c[readmodel.KindLead] += int64(len(b.Leads))
	c[readmodel.KindCatalog] += int64(len(b.Catalog))
	for _, d := range b.Deletes {
		c[d.Kind]++
	}
}

// castagnoli is the CRC-32C table (hardware accelerated where the CPU
// has the instruction).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumSize is the trailer's size.
const sumSize = 4

var magic = []byte("PERMITDSNAP\x00")

// Errors of Load.
var (
	ErrNone    = errors.New("snapshot: no snapshot file")
	ErrFormat  = errors.New("snapshot: not a snapshot of this format version")
	ErrCorrupt = errors.New("snapshot: corrupt or truncated")
)

// fileHeader is the first frame.
type fileHeader struct {
	Created time.Time
	Offsets []offsetRec
}

type offsetRec struct {
	Topic     string
	Partition int64
	Offset    int64
}

// Offsets are the next offsets to consume, by topic and partition.
type Offsets map[string]map[int]int64

// Header is what a snapshot says about itself.
type Header struct {
	Created time.Time
	Offsets Offsets
}

// Info describes a written or loaded snapshot.
type Info struct {
	Header
	Documents int    // documents and tombstones
	Counts    Counts // the same by kind
	Bytes     int64  // file size
}

// ExportFunc hands every document and tombstone of a consistent state to
// fn in batches (memory.(*Store).Export). fn keeps each batch after it
// returns (Write encodes it on another goroutine): the batches must be
// the export's own copies.
type ExportFunc func(fn func(readmodel.Batch) error) error

// writeQueue is the number of batches Write holds between the export and
// the encoder (4096 documents each, from memory's export).
const writeQueue = 4

// createTemp is os.CreateTemp (a test's to replace).
var createTemp = os.CreateTemp

// errWriteFailed stops an export whose snapshot cannot be written (the
// write's own error is returned).
var errWriteFailed = errors.New("snapshot write failed")

// CheckWritable reports why Write could never write a snapshot to path:
// path is a directory, or its directory does not take a new file (it does
// not exist, or is not writable). A process checks it at start; a path
// that could never be written used to fail at every interval, logged,
// while the process ran on without the snapshot it was configured for.
func CheckWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("snapshot: %s is a directory", path)
	}
	f, err := createTemp(filepath.Dir(path), filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("snapshot: cannot write beside %s: %w", path, err)
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("snapshot: cannot write beside %s: %w", path, err)
	}
	return nil
}

// Write writes a snapshot of export's state at offsets to path,
// atomically. The offsets must not be ahead of the state (take them
// before exporting: replaying from an older offset is harmless).
func Write(path string, offsets Offsets, export ExportFunc) (Info, error) {
	info := Info{Header: Header{Created: time.Now().UTC(), Offsets: offsets}, Counts: Counts{}}
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, sum), 1<<20)
	bw.Write(magic)
	_ = binary.Write(bw, binary.BigEndian, FormatVersion)
	var frame []byte
	put := func(p []byte) error {
		var n [binary.MaxVarintLen64]byte
		if _, err := bw.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))]); err != nil {
			return err
		}
		_, err := bw.Write(p)
		return err
	}
	fh := fileHeader{Created: info.Created}
	for topic, ps := range offsets {
		for id, o := range ps {
			fh.Offsets = append(fh.Offsets, offsetRec{Topic: topic, Partition: int64(id), Offset: o})
		}
	}
	tab := newEncTable() // the frames', in order
	if err := put(appendTabled(nil, &fh, tab)); err != nil {
		return info, fmt.Errorf("snapshot: header: %w", err)
	}
	// The export holds a reader on the store's state, and ingest waits for
	// it (memory.(*Store).Export). So the batches are encoded and written
	// on another goroutine, a few behind: the export walks the state while
	// the batches before are encoded, in about the longer of the two times
	// on two cores instead of their sum.
	frames := make(chan readmodel.Batch, writeQueue)
	var werr error
	var failed atomic.Bool
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		for b := range frames {
			if werr != nil {
				continue // the export stops at its next batch
			}
			frame = appendTabled(frame[:0], &b, tab)
			if werr = put(frame); werr != nil {
				failed.Store(true)
			}
		}
	}()
	err = export(func(b readmodel.Batch) error {
		if failed.Load() {
			return errWriteFailed
		}
		if b.Len() == 0 {
			return nil
		}
		info.Documents += b.Len()
		addCounts(info.Counts, &b)
		frames <- b // the export's copies (ExportFunc)
		return nil
	})
	close(frames)
	<-encoded
	if werr != nil {
		return info, fmt.Errorf("snapshot: %w", werr)
	}
	if err != nil {
		return info, fmt.Errorf("snapshot: export: %w", err)
	}
	if err := put(nil); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	var counts []byte
	for _, k := range countKinds {
		counts = binary.BigEndian.AppendUint64(counts, uint64(info.Counts[k]))
	}
	if _, err := bw.Write(counts); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	if _, err := tmp.Write(binary.BigEndian.AppendUint32(nil, sum.Sum32())); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return info, fmt.Errorf("snapshot: fsync: %w", err)
	}
	st, err := tmp.Stat()
	if err == nil {
		info.Bytes = st.Size()
	}
	if err := tmp.Close(); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename is durable once the directory is
		d.Close()
	}
	return info, nil
}

// Load verifies the snapshot at path, then hands its batches to apply in
// order and returns its header. ErrNone when there is no file; ErrFormat
// or ErrCorrupt (wrapped, with the detail) when it cannot be trusted, in
// which case apply was never called. An error from apply is returned as
// is (the state is then partial: start over from an empty read model).
func Load(path string, apply func(readmodel.Batch) error) (Info, error) {
	return LoadSized(path, nil, apply)
}

// LoadSized is Load that first hands reserve (when not nil) the counts
// the snapshot holds of each kind, once the file is verified and before
// the first batch, so that the destination can size its tables for them
// (memory.(*Import).Reserve) instead of growing them as the batches
// come. The counts are checked against the batches: a file whose counts
// differ from its frames is corrupt (ErrCorrupt, returned after the
// last batch was applied; the checksum makes this a writer's bug).
func LoadSized(path string, reserve func(Counts), apply func(readmodel.Batch) error) (Info, error) {
	return LoadShaped(path, reserve, func(b readmodel.Batch, _ *readmodel.LinkShapes) error { return apply(b) })
}

// LoadShaped is LoadSized that also hands apply the shapes of each
// batch's geo link lists (readmodel.LinkShapes: which permits and
// properties have the same list but for their property links, as the
// file's list table says), for a destination that converts a list once
// per shape (memory.(*Import).AddShaped). A shape is the list table's
// entry index + 1, so it holds for the whole file; the shapes are left
// empty when the documents' fields are not the ones the written-out
// decoders read (decodePermit, decodeProperty).
func LoadShaped(path string, reserve func(Counts), apply func(readmodel.Batch, *readmodel.LinkShapes) error) (Info, error) {
	info, _, err := load(path, reserve, func(b readmodel.Batch, shapes *readmodel.LinkShapes, _ func()) error { return apply(b, shapes) }, false, false)
	return info, err
}

// LoadLent is LoadShaped for a destination that copies what it keeps of
// each batch's permits and properties and of their geo links (strings
// apart, which it may keep), and then calls done: the next batches are
// decoded into the same arrays (lend.go). done is called once, from any
// goroutine, or not at all (the arrays are then the destination's). The
// batches are as LoadShaped's; nothing else of a batch is reused.
//
// It also returns, when it loaded the file, the file kept open for
// Again: the caller must Run or Close it.
func LoadLent(path string, reserve func(Counts), apply LentApply) (Info, *Again, error) {
	return load(path, reserve, apply, true, true)
}

// LentApply is what LoadLent and Again hand each batch to.
type LentApply = func(b readmodel.Batch, shapes *readmodel.LinkShapes, done func()) error

// Again is a loaded snapshot file kept open, to decode its batches once
// more (memory.(*Import).SecondFrom builds a second side from it): the
// open file is the one loaded even if a new snapshot has replaced it
// since (Write renames a new file over the path).
type Again struct {
	f         *os.File
	head      []byte
	body      int64
	held      Counts
	closeOnce sync.Once
}

// Run hands apply every batch of the file again, as LoadLent did, and
// closes it. It verifies the checksum and the counts again, as it reads:
// a file changed in place since the load (never by Write) fails with
// ErrCorrupt, after some batches may have been applied.
func (a *Again) Run(apply LentApply) error {
	defer a.Close()
	sum := crc32.Update(0, castagnoli, a.head)
	_, err := decodeFrames(a.f, a.head, a.body, a.held, nil, apply, true, &sum)
	return err
}

// Close closes the file, if Run has not.
func (a *Again) Close() error {
	var err error
	a.closeOnce.Do(func() { err = a.f.Close() })
	return err
}

// lendBatches bounds the batches a LoadLent keeps to lend again: more
// than its destination may hold at once (the decoded batches waiting for
// apply, and memory.Import's queue).
const lendBatches = 16

func load(path string, reserve func(Counts), apply LentApply, lend, keep bool) (Info, *Again, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, nil, ErrNone
	}
	if err != nil {
		return Info{}, nil, fmt.Errorf("snapshot: %w", err)
	}
	info, again, err := loadFile(f, reserve, apply, lend)
	if err != nil || !keep {
		f.Close()
		return info, nil, err
	}
	return info, again, nil
}

func loadFile(f *os.File, reserve func(Counts), apply LentApply, lend bool) (Info, *Again, error) {
	var info Info
	st, err := f.Stat()
	if err != nil {
		return info, nil, fmt.Errorf("snapshot: %w", err)
	}
	info.Bytes = st.Size()
	head := make([]byte, len(magic)+4)
	if _, err := io.ReadFull(f, head); err != nil {
		return info, nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, st.Size())
	}
	if !bytes.Equal(head[:len(magic)], magic) {
		return info, nil, fmt.Errorf("%w: no snapshot magic", ErrFormat)
	}
	if v := binary.BigEndian.Uint32(head[len(magic):]); v != FormatVersion {
		return info, nil, fmt.Errorf("%w: version %d, this build reads %d", ErrFormat, v, FormatVersion)
	}
	body := st.Size() - int64(len(head)) - countsSize - sumSize
	if body < 0 {
		return info, nil, fmt.Errorf("%w: no counts and checksum", ErrCorrupt)
	}
	// First pass: the checksum over the whole file, before anything is
	// applied.
	sum := crc32.Update(0, castagnoli, head)
	buf := make([]byte, 1<<20)
	for left := body + countsSize; left > 0; {
		n, err := f.Read(buf[:min(int64(len(buf)), left)])
		sum = crc32.Update(sum, castagnoli, buf[:n])
		left -= int64(n)
		if err != nil && left > 0 {
			return info, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	want := make([]byte, sumSize)
	if _, err := io.ReadFull(f, want); err != nil || binary.BigEndian.Uint32(want) != sum {
		return info, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	counts := make([]byte, countsSize)
	if _, err := f.ReadAt(counts, int64(len(head))+body); err != nil {
		return info, nil, fmt.Errorf("snapshot: %w", err)
	}
	held := Counts{}
	for i, k := range countKinds {
		held[k] = int64(binary.BigEndian.Uint64(counts[8*i:]))
	}
	// Second pass: decode and apply.
	dec, err := decodeFrames(f, head, body, held, reserve, apply, lend, nil)
	dec.Bytes = info.Bytes
	if err != nil {
		return dec, nil, err
	}
	return dec, &Again{f: f, head: head, body: body, held: held}, nil
}

// decodeFrames decodes the frames of f's body (after head) and hands
// apply each batch, lent when lend is set (LoadLent). With sum (the
// checksum of head), it checks the checksum over what it reads, and the
// counts after it (Again.Run).
func decodeFrames(f *os.File, head []byte, body int64, held Counts, reserve func(Counts), apply LentApply, lend bool, sum *uint32) (Info, error) {
	var info Info
	if _, err := f.Seek(int64(len(head)), io.SeekStart); err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	var src io.Reader = io.LimitReader(f, body)
	if sum != nil {
		src = io.TeeReader(src, crcWriter{sum})
	}
	r := bufio.NewReaderSize(src, 1<<20)
	next := func(buf []byte) ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		if n > uint64(body) {
			return nil, errors.New("frame longer than the file")
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n] // reused: the codec copies what it keeps
		_, err = io.ReadFull(r, buf)
		return buf, err
	}
	hb, err := next(nil)
	var fh fileHeader
	tab := newDecTable() // the frames', in order
	if err == nil {
		err = decodeTabled(hb, &fh, tab)
	}
	if err != nil {
		return info, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	info.Created = fh.Created
	info.Offsets = Offsets{}
	for _, o := range fh.Offsets {
		if info.Offsets[o.Topic] == nil {
			info.Offsets[o.Topic] = map[int]int64{}
		}
		info.Offsets[o.Topic][int(o.Partition)] = o.Offset
	}
	if reserve != nil {
		hint := Counts{}
		for k, n := range held {
			hint[k] = min(n, body) // a document takes a byte at least
		}
		reserve(hint)
	}
	info.Counts = Counts{}
	// Decoding and applying overlap: one goroutine decodes the next
	// batches while apply runs.
	type shaped struct {
		b      readmodel.Batch
		shapes *readmodel.LinkShapes
		lent   *lent // nil: not lent
	}
	batches := make(chan shaped, 4)
	var free chan *lent // given back
	if lend {
		free = make(chan *lent, lendBatches)
	}
	stop := make(chan struct{})
	var decErr error
	go func() {
		defer close(batches)
		var buf []byte
		for {
			var err error
			buf, err = next(buf)
			if err != nil {
				decErr = fmt.Errorf("%w: %v", ErrCorrupt, err)
				return
			}
			if len(buf) == 0 {
				return
			}
			var b shaped
			b.shapes = new(readmodel.LinkShapes)
			if lend {
				select {
				case b.lent = <-free:
				default:
					b.lent = new(lent)
				}
				b.b = b.lent.batch()
			}
			err = decodeLent(buf, &b.b, tab, b.shapes, b.lent)
			if b.lent != nil {
				b.lent.keep(&b.b)
			}
			if err == nil {
				err = checkKinds(&b.b)
			}
			if err != nil {
				decErr = fmt.Errorf("%w: %v", ErrCorrupt, err)
				return
			}
			select {
			case batches <- b:
			case <-stop:
				return
			}
		}
	}()
	for sb := range batches {
		b := sb.b
		info.Documents += b.Len()
		addCounts(info.Counts, &b)
		done := func() {}
		if l := sb.lent; l != nil {
			var once sync.Once
			done = func() {
				once.Do(func() {
					l.giveBack()
					select {
					case free <- l:
					default: // enough lent already
					}
				})
			}
		}
		if err := apply(b, sb.shapes, done); err != nil {
			close(stop)
			for range batches { // let the decoder finish
			}
			return info, err
		}
	}
	if decErr != nil {
		return info, decErr
	}
	for _, k := range countKinds {
		if info.Counts[k] != held[k] {
			return info, fmt.Errorf("%w: %d documents of kind %s, the file counts %d", ErrCorrupt, info.Counts[k], k, held[k])
		}
	}
	if sum != nil {
		// The rest of the body, the counts and the checksum itself.
		if _, err := io.Copy(io.Discard, r); err != nil {
			return info, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		tail := make([]byte, countsSize+sumSize)
		if _, err := io.ReadFull(f, tail); err != nil {
			return info, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		*sum = crc32.Update(*sum, castagnoli, tail[:countsSize])
		if binary.BigEndian.Uint32(tail[countsSize:]) != *sum {
			return info, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
		}
		for i, k := range countKinds {
			if int64(binary.BigEndian.Uint64(tail[8*i:])) != held[k] {
				return info, fmt.Errorf("%w: the counts changed since the load", ErrCorrupt)
			}
		}
	}
	return info, nil
}

// checkKinds refuses a tombstone of a kind the file cannot hold (one of
// countKinds): the writer makes none, and a store given one refuses the
// whole import with an error of its own, where a snapshot that cannot be
// trusted is ErrCorrupt, and a full replay.
func checkKinds(b *readmodel.Batch) error {
	for i := range b.Deletes {
		if k := b.Deletes[i].Kind; !slices.Contains(countKinds[:], k) {
			return fmt.Errorf("snapshot: a tombstone of unknown kind %q", k)
		}
	}
	return nil
}

// crcWriter adds what is written to a CRC-32C.
type crcWriter struct{ sum *uint32 }

func (w crcWriter) Write(p []byte) (int, error) {
	*w.sum = crc32.Update(*w.sum, castagnoli, p)
	return len(p), nil
}
