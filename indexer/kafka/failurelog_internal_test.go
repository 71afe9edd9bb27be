package kafka

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/syncbuf"
)

// A run of failures is logged at Warn when it starts and whenever its
// error changes, at Debug while the same error repeats, and ends with one
// Info line when the action succeeds; a success with no failure before
// it logs nothing, and the next failure starts a new run at Warn.
func TestFailureLogLogsARunOnce(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var l failureLog
	refused, gone := errors.New("connection refused"), errors.New("topic not found")
	l.succeeded(log, "ok again")
	for _, err := range []error{refused, refused, refused, gone, gone, refused} {
		l.failed(log, "failed", err, "partition", 3)
	}
	l.succeeded(log, "ok again", "partition", 3)
	l.failed(log, "failed", gone)
	var levels []string
	for line := range strings.Lines(buf.String()) {
		f := strings.Fields(line)
		levels = append(levels, f[1]+" "+f[2])
	}
	require.Equal(t, []string{
		"level=WARN msg=failed", "level=DEBUG msg=failed", "level=DEBUG msg=failed",
		"level=WARN msg=failed", "level=DEBUG msg=failed", "level=WARN msg=failed",
		`level=INFO msg="ok`,
		"level=WARN msg=failed",
	}, levels, buf.String())
	out := buf.String()
	require.Contains(t, out, `err="connection refused" partition=3 failures=1`)
	require.Contains(t, out, `err="topic not found" partition=3 failures=4`)
	require.Contains(t, out, `msg="ok again" partition=3 failures=6 failing_for=`)
	require.Contains(t, out, `err="topic not found" failures=1`)
}
