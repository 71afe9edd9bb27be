package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// AppendJSON appends the JSON of env to b, byte-identical to
// json.Marshal(env) for the compact Data producers hand over (events.New
// marshals it), without validating and compacting Data again: the other
// fields, then Data spliced in as it is.
func (env Envelope) AppendJSON(b []byte) ([]byte, error) {
	data := env.Data
	env.Data = nil
	head, err := json.Marshal(env)
	if err != nil {
		return b, err
	}
	if len(data) == 0 {
		return append(b, head...), nil
	}
	b = append(b, head[:len(head)-1]...) // drop the closing brace
	b = append(b, `,"data":`...)
	b = append(b, data...)
	return append(b, '}'), nil
}

// NDJSONWriter writes envelopes one JSON line each, buffered: the format
// importers, generators and `permitd publish` share. Call Flush at the
// end.
type NDJSONWriter struct {
	w    *bufio.Writer
	line []byte
}

// NewNDJSONWriter buffers up to size bytes before writing to w.
func NewNDJSONWriter(w io.Writer, size int) *NDJSONWriter {
	return &NDJSONWriter{w: bufio.NewWriterSize(w, size)}
}

// Write writes env and a newline.
func (n *NDJSONWriter) Write(env Envelope) error {
	var err error
	if n.line, err = env.AppendJSON(n.line[:0]); err != nil {
		return err
	}
	n.line = append(n.line, '\n')
	_, err = n.w.Write(n.line)
	return err
}

// Flush writes what is buffered.
func (n *NDJSONWriter) Flush() error { return n.w.Flush() }

// maxNDJSONLine is the longest line EachNDJSONLine reads: well above the
// indexer's 1 MiB message limit, so an oversized event is read and
// reported rather than stopping the file.
const maxNDJSONLine = 16 << 20

// ErrLineTooLong is a line of more than 16 MiB (its newline and a
// carriage return before it not counted): no event that long can be
// published (the indexer takes at most 1 MiB), so its bytes are passed
// over unread.
var ErrLineTooLong = errors.New("line longer than 16 MiB")

// TooLong is the reason a line of n bytes over 16 MiB is not an event,
// as the line's other reasons are worded (it wraps ErrInvalid and
// ErrLineTooLong).
func TooLong(n int64) error {
	return fmt.Errorf("%w: %w (%d bytes)", ErrInvalid, ErrLineTooLong, n)
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// blank reports whether b is empty or holds only spaces, tabs and
// carriage returns (JSON's whitespace without the newline): such a line
// is passed over like an empty one (a line of spaces used to be reported
// as "unexpected end of JSON input"). An event's line starts with '{', so
// this looks at one byte.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// EachNDJSONLine calls fn with every line of r that is not blank (empty,
// or only spaces, tabs and carriage returns) and its number (from 1),
// without its newline (and a carriage return before it), and the first
// line without a UTF-8 byte order mark that opens it; raw is valid only
// during the call. An error of fn stops the read and is
// returned as it is; a line over 16 MiB stops it with "line N:
// ErrLineTooLong", a read error with "line N: ...".
func EachNDJSONLine(r io.Reader, fn func(line int, raw []byte) error) error {
	return EachNDJSONLineOver(r, fn, func(line int, _ int64) error {
		return fmt.Errorf("line %d: %w", line, ErrLineTooLong)
	})
}

// EachNDJSONLineOver is EachNDJSONLine that hands a line over 16 MiB
// to long (its number and its length) instead of fn, and reads on when
// long returns nil: a file's every line is accounted for (`permitd
// publish` counts it among the lines not published, --dry-run reports
// it), not the ones before it only.
func EachNDJSONLineOver(r io.Reader, fn func(line int, raw []byte) error, long func(line int, n int64) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var joined []byte // a line longer than the reader's buffer, gathered up to one past the limit
	for line := 1; ; line++ {
		frag, err := br.ReadSlice('\n')
		raw, n := frag, int64(len(frag))
		var prev byte // the last byte of the part before frag, in a gathered line
		if err == bufio.ErrBufferFull {
			joined = joined[:0]
			for err == bufio.ErrBufferFull {
				if len(joined) <= maxNDJSONLine+1 {
					joined = append(joined, frag...)
				}
				prev = frag[len(frag)-1]
				frag, err = br.ReadSlice('\n')
				n += int64(len(frag))
			}
			if len(joined) <= maxNDJSONLine+1 {
				joined = append(joined, frag...)
			}
			raw = joined // the whole line whenever it is not over the limit
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if n == 0 {
			return nil // the end, after the last newline
		}
		// The line's length without its newline and a carriage return
		// before it (the last line may have neither).
		size, end := n, frag
		if err == nil {
			size, end = size-1, frag[:len(frag)-1]
		}
		last := prev
		if len(end) > 0 {
			last = end[len(end)-1]
		}
		if size > 0 && last == '\r' {
			size--
		}
		switch {
		case size > maxNDJSONLine:
			if err := long(line, size); err != nil {
				return err
			}
		case size > 0:
			text := raw[:size]
			if line == 1 {
				// A byte order mark some editors write: not the event's.
				text = bytes.TrimPrefix(text, utf8BOM)
			}
			if blank(text) {
				break
			}
			if err := fn(line, text); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}
