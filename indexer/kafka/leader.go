package kafka

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/spareprocs"
)

// A fetcher reads its partition over a connection of its own to the
// partition's leader (leaderConn) and takes each fetch answer apart in
// place: the answer's record batches are read from the socket into one
// pooled buffer (answerBuf) and the messages' keys and values are slices
// of it. kafka-go's Client.Fetch, on which fetchers were built before,
// copies an answer's records into pages of its own, decodes them a byte at
// a time through its reader interfaces, and the fetcher then copied each
// key and value out again: in the real mix's replay about a tenth of the
// ingest's CPU (docs/kafka-history.md, "Ninetieth session").
//
// The connection is set up as kafka-go's transport sets up its own: the
// transport's dialer, TLS configuration and SASL mechanism, the broker's
// API versions first. The fetcher keeps using the Client for what is not a
// fetch (the metadata naming the leader, the offsets) and for the fetch
// itself when the leader does not take Fetch v11 or an answer holds record
// batches of the old message formats (magic 0 or 1): clientFetch.

// fetchVersion is the version of the Fetch requests a fetcher sends its
// leader: the highest kafka-go knows (Kafka 2.3 and later, and every
// broker that takes Kafka 4's clients).
const fetchVersion = 11

// errOldFormat says an answer held a record batch of message format 0 or
// 1, which the fetch in place does not take apart: the fetcher fetches
// it again with kafka-go's Client.
var errOldFormat = errors.New("kafka: a record batch of an old message format")

// errNoFetchV11 says the leader does not take Fetch v11.
var errNoFetchV11 = errors.New("kafka: the leader does not take Fetch v11")

// leaderConn is a fetcher's connection to its partition's leader: its
// reads go through a small buffer for the answers' headers, and the
// record batches, the bulk of an answer, from the socket straight into
// the answer's buffer.
type leaderConn struct {
	conn net.Conn
	br   *bufio.Reader
	corr int32
	// unwatch ends the close of conn on the fetcher's end (its ctx).
	unwatch func() bool
}

// close closes the connection.
func (l *leaderConn) close() {
	l.unwatch()
	_ = l.conn.Close()
}

// dialLeader looks up the partition's leader (metadata) and connects to
// it as the consumer's transport would: dialer, TLS, API versions, SASL.
// The connection closes when ctx ends, which ends a fetch waiting on it.
func (f *fetcher) dialLeader(ctx context.Context) (*leaderConn, error) {
	meta, err := f.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{f.topic}})
	if err != nil {
		return nil, err
	}
	var leader kafkago.Broker
	for _, t := range meta.Topics {
		if t.Name != f.topic {
			continue
		}
		if t.Error != nil {
			return nil, t.Error
		}
		for _, p := range t.Partitions {
			if p.ID == f.id {
				if p.Error != nil {
					return nil, p.Error
				}
				leader = p.Leader
			}
		}
	}
	if leader.Host == "" {
		return nil, fmt.Errorf("kafka: no leader for %s/%d: %w", f.topic, f.id, kafkago.LeaderNotAvailable)
	}
	tr := f.c.transport
	addr := net.JoinHostPort(leader.Host, strconv.Itoa(leader.Port))
	dialCtx, cancel := context.WithTimeout(ctx, cmp.Or(tr.DialTimeout, 5*time.Second))
	defer cancel()
	dial := tr.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(dialCtx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = conn.Close()
		}
	}()
	if cfg := tr.TLS; cfg != nil {
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = leader.Host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dialCtx); err != nil {
			return nil, err
		}
		conn = tc
	}
	if dl, has := dialCtx.Deadline(); has {
		_ = conn.SetDeadline(dl)
	}
	pc := protocol.NewConn(conn, tr.ClientID)
	m, err := pc.RoundTrip(new(apiversions.Request))
	if err != nil {
		return nil, err
	}
	res := m.(*apiversions.Response)
	if res.ErrorCode != 0 {
		return nil, fmt.Errorf("kafka: API versions of %s: %w", addr, kafkago.Error(res.ErrorCode))
	}
	versions := make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	fetchOK := false
	for _, k := range res.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		versions[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
		if key == protocol.Fetch && k.MinVersion <= fetchVersion && fetchVersion <= k.MaxVersion {
			fetchOK = true
		}
	}
	if !fetchOK {
		return nil, errNoFetchV11
	}
	pc.SetVersions(versions)
	if mech := tr.SASL; mech != nil {
		md := &sasl.Metadata{Host: leader.Host, Port: leader.Port}
		if err := authenticate(sasl.WithMetadata(dialCtx, md), pc, mech); err != nil {
			return nil, err
		}
	}
	_ = conn.SetDeadline(time.Time{})
	ok = true
	// protocol.Conn reads through a buffer of its own; the broker sends
	// nothing unasked, so none of it is left once its answers are read.
	l := &leaderConn{conn: conn, br: bufio.NewReaderSize(conn, 4<<10)}
	l.unwatch = context.AfterFunc(ctx, func() { _ = conn.Close() })
	return l, nil
}

// authenticate logs in with mech (a SASL handshake, then the mechanism's
// exchange), as kafka-go's transport does.
func authenticate(ctx context.Context, pc *protocol.Conn, mech sasl.Mechanism) error {
	m, err := pc.RoundTrip(&saslhandshake.Request{Mechanism: mech.Name()})
	if err != nil {
		return err
	}
	if code := m.(*saslhandshake.Response).ErrorCode; code != 0 {
		return kafkago.Error(code)
	}
	sess, state, err := mech.Start(ctx)
	if err != nil {
		return err
	}
	for done := false; !done; {
		m, err := pc.RoundTrip(&saslauthenticate.Request{AuthBytes: state})
		if err != nil {
			if errors.Is(err, io.EOF) {
				return kafkago.SASLAuthenticationFailed
			}
			return err
		}
		res := m.(*saslauthenticate.Response)
		if res.ErrorCode != 0 {
			return fmt.Errorf("%w: %s", kafkago.Error(res.ErrorCode), res.ErrorMessage)
		}
		if done, state, err = sess.Next(ctx, res.AuthBytes); err != nil {
			return err
		}
	}
	return nil
}

// fetchRequest writes a Fetch v11 request for the partition from pos,
// encoded by kafka-go (in one write), with the fields its Client.Fetch
// sets, save the session: none (id 0, final epoch).
func (l *leaderConn) fetchRequest(clientID, topic string, id int, pos int64, maxBytes int, wait time.Duration) error {
	l.corr++
	return protocol.WriteRequest(l.conn, fetchVersion, l.corr, clientID, &fetch.Request{
		ReplicaID: -1, MaxWaitTime: int32(wait.Milliseconds()), MinBytes: 1, MaxBytes: int32(maxBytes),
		SessionID: 0, SessionEpoch: -1,
		Topics: []fetch.RequestTopic{{Topic: topic, Partitions: []fetch.RequestPartition{{
			Partition: int32(id), CurrentLeaderEpoch: -1, FetchOffset: pos, LogStartOffset: -1, PartitionMaxBytes: int32(maxBytes),
		}}}},
	})
}

// answerHead is what a Fetch v11 answer says of its one partition before
// its record batches.
type answerHead struct {
	code    int16 // the answer's error, else the partition's
	hwm     int64
	records int // the record batches' bytes (0 for none)
	rest    int // bytes after them (other partitions, not asked for)
}

// readHead reads a Fetch v11 answer up to its partition's record
// batches.
func (l *leaderConn) readHead(topic string, id int) (answerHead, error) {
	w := wire{r: l.br, left: 4}
	size := w.i32()
	w.left = int(size)
	corr := w.i32()
	if w.err == nil && corr != l.corr {
		return answerHead{}, fmt.Errorf("kafka: fetch answer to request %d, not %d", corr, l.corr)
	}
	w.i32() // throttle time
	var h answerHead
	h.code = w.i16()
	w.i32() // session
	topics := w.i32()
	if w.err == nil && h.code == 0 && topics != 1 {
		return h, fmt.Errorf("kafka: a fetch answer of %d topics, not 1", topics)
	}
	if h.code == 0 {
		name := w.str()
		parts := w.i32()
		if w.err == nil && (name != topic || parts != 1) {
			return h, fmt.Errorf("kafka: a fetch answer for %s (%d partitions), not %s/%d", name, parts, topic, id)
		}
		if p := w.i32(); w.err == nil && int(p) != id {
			return h, fmt.Errorf("kafka: a fetch answer for partition %d, not %d", p, id)
		}
		h.code = w.i16()
		h.hwm = w.i64()
		w.skip(16) // last stable offset, log start offset
		if n := w.i32(); n > 0 {
			w.skip(16 * int(n)) // aborted transactions
		}
		w.i32() // preferred read replica
		h.records = max(0, int(w.i32()))
	}
	if w.err == nil && h.records > w.left {
		w.err = fmt.Errorf("kafka: a fetch answer's records of %d bytes in %d", h.records, w.left)
	}
	h.rest = w.left - h.records
	return h, w.err
}

// wire reads the protocol's fixed fields from r, at most left bytes.
type wire struct {
	r    *bufio.Reader
	left int
	err  error
	b    [8]byte
}

func (w *wire) next(n int) []byte {
	if w.err != nil {
		return w.b[:n:n]
	}
	if n > w.left {
		w.err = fmt.Errorf("kafka: a fetch answer ends %d bytes early", n-w.left)
		return w.b[:n:n]
	}
	if _, err := io.ReadFull(w.r, w.b[:n]); err != nil {
		w.err = err
	}
	w.left -= n
	return w.b[:n:n]
}

func (w *wire) i16() int16 { return int16(binary.BigEndian.Uint16(w.next(2))) }
func (w *wire) i32() int32 { return int32(binary.BigEndian.Uint32(w.next(4))) }
func (w *wire) i64() int64 { return int64(binary.BigEndian.Uint64(w.next(8))) }

func (w *wire) skip(n int) {
	if w.err != nil {
		return
	}
	if n < 0 || n > w.left {
		w.err = fmt.Errorf("kafka: a fetch answer ends early")
		return
	}
	if _, err := w.r.Discard(n); err != nil {
		w.err = err
	}
	w.left -= n
}

func (w *wire) str() string {
	n := int(w.i16())
	if w.err != nil || n <= 0 {
		return ""
	}
	if n > w.left {
		w.err = fmt.Errorf("kafka: a fetch answer ends early")
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(w.r, b); err != nil {
		w.err = err
	}
	w.left -= n
	return string(b)
}

// fetchInPlace asks the leader for the partition's messages from pos,
// reads the answer's record batches into a buffer the answer's messages
// share and hands over those at or after pos, advancing pos.
func (f *fetcher) fetchInPlace(ctx context.Context) (fetchedAnswer, error) {
	a := fetchedAnswer{mark: mark{next: f.pos}}
	if f.leader == nil {
		l, err := f.dialLeader(ctx)
		if err != nil {
			return a, err
		}
		f.leader = l
	}
	l := f.leader
	fail := func(err error) (fetchedAnswer, error) {
		l.close()
		f.leader = nil
		return a, err
	}
	_ = l.conn.SetDeadline(time.Now().Add(f.client.Timeout)) // fetchClient's
	if err := l.fetchRequest(f.c.transport.ClientID, f.topic, f.id, f.pos, f.c.p.MaxFetchBytes, f.c.p.FetchWait); err != nil {
		return fail(err)
	}
	h, err := l.readHead(f.topic, f.id)
	if err != nil {
		return fail(err)
	}
	if h.code != 0 {
		if _, err := l.br.Discard(h.records + h.rest); err != nil {
			return fail(err)
		}
		err := kafkago.Error(h.code)
		if !errors.Is(err, kafkago.OffsetOutOfRange) {
			// The leader may have moved: look it up again.
			return fail(err)
		}
		return f.outOfRange(ctx, err)
	}
	a.hwm = h.hwm
	buf, p := f.c.answerBuf(h.records)
	buf = buf[:h.records]
	if _, err := io.ReadFull(l.br, buf); err != nil {
		f.c.giveBack(p)
		return fail(err)
	}
	if _, err := l.br.Discard(h.rest); err != nil {
		f.c.giveBack(p)
		return fail(err)
	}
	// Taking the answer apart is CPU work: a turn while the Ps are raised
	// (live writes; internal/spareprocs), as the parse and the decode.
	defer spareprocs.Hold()()
	a.buf = p
	err = f.messages(&a, buf)
	a.next = f.pos
	if len(a.msgs) == 0 {
		f.c.giveBack(p)
		a.buf = nil
	}
	return a, err
}

// giveBack returns one pooled buffer no message holds (nil: none).
func (c *Consumer) giveBack(p *[]byte) {
	if p != nil {
		c.releaseAnswers([]*[]byte{p})
	}
}

// castagnoli is the CRC table of a record batch's checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordBatchHead is the size of a record batch (v2) before its records,
// from its first offset on.
const recordBatchHead = 61

// messages appends to a.msgs the messages at or after pos of the record
// batches in rb (the last may be cut short by the fetch's size: it is
// left for the next fetch), advancing pos past each whole batch,
// transaction markers (control batches) included. Keys and values are
// slices of rb, or of a batch's own buffer when it was compressed.
func (f *fetcher) messages(a *fetchedAnswer, rb []byte) error {
	if n := recordsAfter(rb, f.pos); n > 0 {
		a.msgs = f.spare(n)
	}
	for {
		var b recordBatch
		if b, rb = nextBatch(rb); b == nil {
			return nil // none left, or cut short
		}
		// The magic byte is where the old formats have theirs too.
		if len(b) > magicAt && b[magicAt] != 2 {
			return errOldFormat
		}
		if len(b) < recordBatchHead {
			return fmt.Errorf("kafka: a record batch of %d bytes at offset %d", len(b), b.base())
		}
		if sum := binary.BigEndian.Uint32(b[17:]); crc32.Checksum(b[21:], castagnoli) != sum {
			return fmt.Errorf("kafka: record batch at offset %d: checksum mismatch", b.base())
		}
		if b.last() < f.pos {
			continue // read before
		}
		if !b.control() {
			recs := b[recordBatchHead:]
			if codec := compress.Compression(b.attrs() & 7); codec != 0 {
				var err error
				if recs, err = decompress(codec, recs); err != nil {
					return fmt.Errorf("kafka: record batch at offset %d: %w", b.base(), err)
				}
			}
			if err := f.batchRecords(a, b.base(), b.count(), recs); err != nil {
				return fmt.Errorf("kafka: record batch at offset %d: %w", b.base(), err)
			}
		}
		f.pos = max(f.pos, b.last()+1)
	}
}

// recordBatch is a whole record batch, from its first offset on; its
// fields below are read from a batch (v2) of at least recordBatchHead
// bytes.
type recordBatch []byte

// magicAt is where a record batch's magic byte (its format) is.
const magicAt = 16

// nextBatch splits rb's first record batch off; nil when rb holds no
// whole one (none left, or cut short by the fetch's size).
func nextBatch(rb []byte) (recordBatch, []byte) {
	if len(rb) <= magicAt {
		return nil, rb
	}
	end := 12 + int(binary.BigEndian.Uint32(rb[8:]))
	if end > len(rb) {
		return nil, rb
	}
	return recordBatch(rb[:end]), rb[end:]
}

func (b recordBatch) base() int64   { return int64(binary.BigEndian.Uint64(b)) }
func (b recordBatch) attrs() uint16 { return binary.BigEndian.Uint16(b[21:]) }
func (b recordBatch) control() bool { return b.attrs()&0x20 != 0 }
func (b recordBatch) last() int64   { return b.base() + int64(int32(binary.BigEndian.Uint32(b[23:]))) }
func (b recordBatch) count() int    { return int(int32(binary.BigEndian.Uint32(b[57:]))) }

// minRecord is the fewest bytes a record takes: its length, attributes,
// timestamp and offset deltas, key and value lengths and header count.
const minRecord = 7

// recordsAfter is how many records the whole record batches of rb that
// end at or after pos hold, by their heads: room for the answer's
// messages. A record takes at least minRecord bytes (uncompressed): a
// count beyond that is not believed.
func recordsAfter(rb []byte, pos int64) int {
	n := 0
	for {
		var b recordBatch
		if b, rb = nextBatch(rb); b == nil || len(b) < recordBatchHead {
			return n
		}
		if b.last() >= pos && !b.control() {
			n += max(0, min(b.count(), (len(b)-recordBatchHead)/minRecord))
		}
	}
}

// decompress is a compressed batch's records.
func decompress(codec compress.Compression, b []byte) ([]byte, error) {
	c := codec.Codec()
	if c == nil {
		return nil, fmt.Errorf("compression %d not supported", codec)
	}
	r := c.NewReader(bytes.NewReader(b))
	defer r.Close()
	return io.ReadAll(r)
}

// batchRecords appends the messages at or after pos of a batch's count
// records (rb, from its first offset base).
func (f *fetcher) batchRecords(a *fetchedAnswer, base int64, count int, rb []byte) error {
	for range count {
		n, k := binary.Varint(rb)
		if k <= 0 || n < 0 || int64(len(rb)-k) < n {
			return errBadRecord
		}
		rec := rb[k : k+int(n)]
		rb = rb[k+int(n):]
		// attributes, timestamp delta, offset delta, key, value
		if len(rec) < 1 {
			return errBadRecord
		}
		rec = rec[1:]
		if _, k = binary.Varint(rec); k <= 0 {
			return errBadRecord
		}
		rec = rec[k:]
		delta, k := binary.Varint(rec)
		if k <= 0 {
			return errBadRecord
		}
		rec = rec[k:]
		key, rec, ok := varBytes(rec)
		if !ok {
			return errBadRecord
		}
		value, _, ok := varBytes(rec)
		if !ok {
			return errBadRecord
		}
		if off := base + delta; off >= f.pos {
			a.msgs = append(a.msgs, indexer.Message{Topic: f.topic, Partition: f.id, Offset: off, Key: key, Value: value})
			f.pos = off + 1
		}
	}
	return nil
}

// errBadRecord says a record does not decode.
var errBadRecord = errors.New("a record does not decode")

// varBytes reads a varint length and that many bytes (-1: null, nil),
// returned as a slice of its own capacity, so an append to one never
// writes into the next.
func varBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Varint(b)
	if k <= 0 || n < -1 || int64(len(b)-k) < n {
		return nil, nil, false
	}
	b = b[k:]
	if n < 0 {
		return nil, b, true
	}
	return b[:n:n], b[n:], true
}
