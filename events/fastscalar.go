package events

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"
)

// The fast decoder's scalars (see fastdecode.go): strings (plain, cached
// and escaped), numbers, event types and timestamps.

// strCache hands out the strings it decoded recently instead of
// allocating them again: an event's short strings (states, types,
// statuses, sources, cities) mostly repeat from one event to the next. It
// is two-way set-associative by hash and used by one goroutine at a
// time (fastEvent takes one from strCaches).
type strCache struct {
	// slots holds the sets, two slots each: set i is slots[2i] and
	// slots[2i+1]; first[i] is true when slots[2i] was handed out or
	// filled more recently than slots[2i+1], whose string a miss then
	// replaces (the least recently used). Two values that hash alike and
	// recur (VELOCITY_ABOVE_BASELINE and VELOCITY_BELOW_BASELINE share
	// their first and last eight bytes) keep a slot each instead of
	// taking turns in one.
	slots [1 << strCacheBits]string
	first [1 << (strCacheBits - 1)]bool
	// env is fastEvent's envelope while it decodes: decoding through
	// unsafe pointers would move a local one to the heap.
	env Envelope
	// floats is what is left of the block a lent payload's pointers to
	// numbers (a permit's valuation and coordinates, a lead's confidence)
	// are taken from: one allocation for floatBlock of them, where each
	// was one. A block is never handed out twice, so a pointer stays
	// valid for as long as it is held; the documents copy the numbers
	// they keep (memory's cloneBatch), so a block goes soon after its
	// batch is written.
	floats []float64
	// lists is what is left of the block a lent payload's lists of
	// strings (a lead's reason codes, a location's aliases and counties)
	// are taken from (list), on the same terms as floats.
	lists []string
}

// listBlock is the number of strings a block of lists holds (4 KiB);
// a list of more than listBlock/8 takes an array of its own. A list was
// an allocation of its own, 0.52 of an event's in BenchmarkHandleMix
// (10.42 allocations an event before, 9.90 after). A kept list keeps
// its block: the indexer's location table keeps a location's counties,
// a few megabytes of blocks for the whole gazetteer.
const listBlock = 256

// list returns an empty list with room for n strings (its capacity, so
// an append copies) from the block.
func (c *strCache) list(n int) []string {
	if n > listBlock/8 {
		return make([]string, 0, n)
	}
	if len(c.lists) < n {
		c.lists = make([]string, listBlock)
	}
	l := c.lists[:0:n]
	c.lists = c.lists[n:]
	return l
}

// floatBlock is the number of float64s a block holds (512 bytes).
const floatBlock = 64

// float returns a pointer to a new zero float64 from the block.
func (c *strCache) float() unsafe.Pointer {
	if len(c.floats) == 0 {
		c.floats = make([]float64, floatBlock)
	}
	p := &c.floats[0]
	c.floats = c.floats[1:]
	return unsafe.Pointer(p)
}

// maxCached is the longest string strCache keeps; longer ones are mostly
// unique (descriptions, addresses). Values of 25 to 64 bytes recur too
// (work types such as "Mechanical/Electrical/Plumbing", contractors,
// jurisdictions): at 24, the read model's interning missed its address
// cache 377,120 times in BenchmarkHandleMix's 491,489 events and the
// mix took 12.79 allocations an event; at 32, 344,854 and 12.48; at 64,
// 12.35, and no fewer at 128 or 1,024.
const maxCached = 64

// strCacheBits sizes a strCache: 8,192 slots (128 KiB). The real mix's
// short strings (dates, ZIPs, geo_ids, cities, codes) recur over
// thousands of values: in BenchmarkHandleMix, 4.44 of an event's 13.45
// short strings missed and were allocated with 512 slots, 3.32 with
// 4,096 and 2.61 with 16,384; 22.50, 21.38 and 20.67 allocations an
// event (direct-mapped). Two ways in the same 16,384 slots took the
// misses from 1,905,830 to 1,823,247 and the allocations from 11.93 an
// event to 11.77. But a look-up's time is mostly the slot's cache line,
// at a random place in the table: with 16,384 slots (256 KiB, a quarter
// of a core's L2 cache on the machine of then, shared with the ingest)
// strCache.str was 11.7% of a HandleMix profile, with 4,096 8.75%, for
// 0.7 more allocations an event (8.8 to 9.5). The mix through Kafka,
// alternated (IngestMix, 2026-12-04 23:11 to 23:17 UTC): 158,153,
// 173,249 and 160,289 events/s at 0.3718, 0.3507 and 0.3502 of raw
// with 4,096 slots, against 158,715, 160,036 and 156,920 at 0.3458,
// 0.3237 and 0.3274 with 16,384. On a machine with 1 MiB of L2 a core
// (docs/kafka-history.md, "Sixty-third session"), 8,192 slots took
// BenchmarkHandleMix from 9.440 allocations an event to 9.115, and leaned
// better in both whole-run comparisons, neither shown beyond the noise:
// IngestMix's ingest/reader-raw B/A 1.0528 (0.9828 to 1.1277, better in
// 5 of 6 pairs), HandleMix's CPU an event B/A 0.9608 (0.8442 to 1.0935,
// 4 of 6). 16,384 slots on that machine (docs/kafka-history.md, "Sixty-fourth
// session"): HandleMix B/A 1.0545 (1.0157 to 1.0947, worse in 6 of 6
// pairs), IngestMix's ratio B/A 1.0310 (0.9861 to 1.0779).
const strCacheBits = 13

var strCaches = sync.Pool{New: func() any { return new(strCache) }}

// shortHash mixes the length and the first and last eight bytes of b
// (all of it when shorter): cheap, and good enough to spread a cache's
// strings; a collision only costs a miss.
func shortHash(b []byte) uint64 {
	var h uint64
	if len(b) >= 8 {
		h = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[len(b)-8:]), 29)
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	return (h ^ uint64(len(b))) * 0x9e3779b97f4a7c15
}

// str returns b as a string, from the cache when it holds it.
func (c *strCache) str(b []byte) string {
	if c == nil || len(b) > maxCached {
		return string(b)
	}
	i := shortHash(b) >> (64 - strCacheBits + 1) // the set
	way := c.slots[2*i : 2*i+2 : 2*i+2]
	if way[0] == string(b) { // compared without allocating: not a switch's tag
		c.first[i] = true
		return way[0]
	}
	if way[1] == string(b) {
		c.first[i] = false
		return way[1]
	}
	s := string(b)
	if c.first[i] {
		way[1] = s
	} else {
		way[0] = s
	}
	c.first[i] = !c.first[i]
	return s
}

// str passes over a string without escapes or control characters and
// returns its contents (an escaped string gives up: ok is false). Its
// contents must be valid UTF-8 (else ok is false): the strings are the
// only place a byte above 0x7f can be in input the decoder accepts, so
// checking them as they are passed over is the whole input's check
// (fastEvent, fastDecode), without a pass of its own.
func (d *decoder) str() (s []byte, ok bool) {
	if d.peek() != '"' {
		return nil, false
	}
	d.i++
	start := d.i
	var high uint64 // the bytes passed over, or'ed: a non-ASCII byte sets a top bit
	// Eight bytes at a time, to the first quote, backslash or control
	// character.
	for d.i+8 <= len(d.b) {
		x := binary.LittleEndian.Uint64(d.b[d.i:])
		m := hasZeroByte(x^(lsb*'"')) | hasZeroByte(x^(lsb*'\\')) | ((x - lsb*0x20) &^ x & msb)
		if m == 0 {
			high |= x
			d.i += 8
			continue
		}
		// The lowest byte flagged is the first special one: a borrow can
		// flag a byte only above one that is.
		k := bits.TrailingZeros64(m) >> 3
		high |= x & (1<<(8*k) - 1)
		d.i += k
		if d.b[d.i] != '"' {
			return nil, false // an escape or a control character
		}
		d.i++
		s = d.b[start : d.i-1]
		if high&msb != 0 && !utf8.Valid(s) {
			return nil, false
		}
		return s, true
	}
	// The last bytes, fewer than eight, one at a time.
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			d.i++
			s = d.b[start : d.i-1]
			if high&msb != 0 && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		}
		if c < 0x20 || c == '\\' {
			return nil, false
		}
		high |= uint64(c)
		d.i++
	}
	return nil, false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZeroByte is non-zero when one of x's bytes is zero.
func hasZeroByte(x uint64) uint64 { return (x - lsb) &^ x & msb }

// number passes over a JSON number; digits counts the integer part,
// integer is false when it has a fraction or exponent.
func (d *decoder) number() (digits int, integer, ok bool) {
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
		digits = 1
	case c >= '1' && c <= '9':
		digits = d.digits()
	default:
		return 0, false, false
	}
	integer = true
	if d.peek() == '.' {
		integer = false
		d.i++
		if d.digits() == 0 {
			return 0, false, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		integer = false
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if d.digits() == 0 {
			return 0, false, false
		}
	}
	// A number ends at a delimiter: "1x" is not a number.
	if d.i == len(d.b) {
		return digits, integer, true
	}
	switch d.b[d.i] {
	case ' ', '\t', '\n', '\r', ',', ']', '}':
		return digits, integer, true
	}
	return 0, false, false
}

// digits passes over a run of decimal digits and returns its length.
func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// internType returns the constant for a known event type, saving an
// allocation per event.
func internType(b []byte) Type {
	for _, t := range Types {
		if string(t) == string(b) {
			return t
		}
	}
	return Type(b)
}

// decodeTime decodes a JSON time like time.Time's UnmarshalJSON, which it
// leaves every form but the common one to: "YYYY-MM-DDTHH:MM:SSZ" with
// every part in range.
func decodeTime(b []byte, t *time.Time) bool {
	if len(b) != 22 || b[0] != '"' || b[5] != '-' || b[8] != '-' || b[11] != 'T' ||
		b[14] != ':' || b[17] != ':' || b[20] != 'Z' || b[21] != '"' {
		return t.UnmarshalJSON(b) == nil
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(b[1:5]), num(b[6:8]), num(b[9:11])
	hour, minute, sec := num(b[12:14]), num(b[15:17]), num(b[18:20])
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return t.UnmarshalJSON(b) == nil
	}
	v := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if v.Day() != day { // the 31st of a 30-day month, say: normalised, so not this form
		return t.UnmarshalJSON(b) == nil
	}
	*t = v
	return true
}

// exactFloat converts a plain decimal (no exponent) of at most 15
// significant digits and 22 fraction digits, a JSON number already
// checked: its digits and its power of ten are exact float64s, so one
// IEEE division rounds it correctly, as strconv.ParseFloat does (which
// takes the same path after more parsing). ok is false for anything else.
func exactFloat(b []byte) (f float64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var mant uint64
	digits, frac, point := 0, 0, false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if mant != 0 || c != '0' {
				digits++
			}
			mant = mant*10 + uint64(c-'0')
			if point {
				frac++
			}
		case c == '.' && !point:
			point = true
		default:
			return 0, false // an exponent
		}
	}
	if digits > 15 || frac > 22 {
		return 0, false
	}
	f = float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// unescape reads a string value with escapes as encoding/json does, for
// the escapes it can reproduce exactly: \" \\ \/ \b \f \n \r \t and
// \uXXXX outside the surrogate range (a surrogate, paired or not, gives
// up: encoding/json pairs or replaces them). A control character gives up
// too, and so do contents that are not valid UTF-8, as in str.
func (d *decoder) unescape() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	d.i++
	start := d.i
	var out []byte
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(d.b[start : d.i-1]) { // escapes are ASCII: the contents as written
				return "", false
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			var r rune
			for _, h := range d.b[d.i : d.i+4] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				return "", false
			}
			d.i += 4
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}
