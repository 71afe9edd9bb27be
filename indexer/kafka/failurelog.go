package kafka

import (
	"context"
	"log/slog"
	"time"
)

// failureLog logs a run of failures of one action that is tried again
// and again (a partition's fetch, the watermark listing, a batch that
// the read model or the dead-letter topic does not take, a commit)
// without a line
// for every try: at Warn the first failure and any whose error reads
// differently from the one before, at Debug the same error again, and
// at Info the first success after them, with how many there were and how
// long they lasted. With a line at every try, a broker gone for an hour
// filled serve's log with about 16,500 warnings: one for each of the 46
// default partitions at every backoff of 10 s, and one for the watermark
// listing every 5 s. The retries are still counted one by one
// (permitd_indexer_retries_total). Not safe for concurrent use: each
// action has its own.
type failureLog struct {
	count int
	since time.Time
	last  string
}

// failed logs a failure of the action: msg with err, attrs and the
// failures so far.
func (l *failureLog) failed(log *slog.Logger, msg string, err error, attrs ...any) {
	text := err.Error()
	if l.count == 0 {
		l.since = time.Now()
	}
	l.count++
	level := slog.LevelDebug
	if l.count == 1 || text != l.last {
		level = slog.LevelWarn
	}
	l.last = text
	log.Log(context.Background(), level, msg, append(append([]any{"err", err}, attrs...), "failures", l.count)...)
}

// succeeded logs msg at Info with attrs, the failures before it and how
// long they lasted, when the action had failed; then the run is over.
func (l *failureLog) succeeded(log *slog.Logger, msg string, attrs ...any) {
	if l.count == 0 {
		return
	}
	log.Info(msg, append(attrs, "failures", l.count, "failing_for", time.Since(l.since).Round(time.Millisecond))...)
	*l = failureLog{}
}
