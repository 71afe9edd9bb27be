// Package servelines reads what `permitd serve` prints on its stdout as
// it starts: the API address, the admin address and, when no key was
// configured, the generated development API key. The tests and the
// load and fault drivers that start serve read it here, and serve
// prints it with the prefixes here, so the two cannot drift apart.
package servelines

import (
	"bufio"
	"io"
	"strings"
)

// The line prefixes; each line ends with the value and a newline.
const (
	Serving = "serving on "           // then http://host:port of the API
	Admin   = "admin on "             // then http://host:port of the admin listener
	DevKey  = "development API key: " // then the key
)

// Lines are the values read; "" for a line not seen.
type Lines struct {
	Base   string // the API: http://host:port
	Admin  string // the admin listener: http://host:port
	DevKey string
}

// Read reads out line by line until have(l) holds or out ends (or fails),
// and returns what it read. The rest of out is then read and discarded by
// a goroutine until it ends, so a child process never blocks on a full
// stdout pipe.
func Read(out io.Reader, have func(Lines) bool) Lines {
	var l Lines
	sc := bufio.NewScanner(out)
	for !have(l) && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, Serving); ok {
			l.Base = v
		}
		if v, ok := strings.CutPrefix(line, Admin); ok {
			l.Admin = v
		}
		if v, ok := strings.CutPrefix(line, DevKey); ok {
			l.DevKey = v
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return l
}

// BaseKey holds once the API address and the development key are read.
func BaseKey(l Lines) bool { return l.Base != "" && l.DevKey != "" }

// All holds once the API and admin addresses and the development key are
// read.
func All(l Lines) bool { return l.Base != "" && l.Admin != "" && l.DevKey != "" }
