package events

import (
	"bufio"
	"encoding/json"
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

// EachNDJSONLine calls fn with every non-empty line of r and its number
// (from 1); raw is valid only during the call. An error of fn stops the
// read and is returned as it is; a read error (a line over 16 MiB, say)
// is returned as "line N: ...".
func EachNDJSONLine(r io.Reader, fn func(line int, raw []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxNDJSONLine)
	line := 0
	for sc.Scan() {
		line++
		if raw := sc.Bytes(); len(raw) > 0 {
			if err := fn(line, raw); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}
