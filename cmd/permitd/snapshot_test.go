package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/internal/syncbuf"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// snapEvents writes an NDJSON file: from permit first to last, in ZIP
// 98101 (its locations come after them in the file); update bumps the
// version of every permit.
func snapEvents(t *testing.T, first, last int, version int64, withLocations bool) string {
	t.Helper()
	f := &eventFile{t: t}
	add := f.add
	for i := first; i <= last; i++ {
		n := fmt.Sprintf("S%05d", i)
		add(events.PermitUpserted, events.PermitDocID("test", n), version, events.Permit{
			PermitNumber: n, PermitType: "Building", IssueDate: "2025-01-02", Source: "test", Status: fmt.Sprintf("v%d", version),
			Address: events.PermitAddress{Line: fmt.Sprintf("%d PINE ST", i), City: "SEATTLE", State: "WA", Zipcode: "98101", ZipSource: "source"},
		})
	}
	if withLocations {
		state := events.GeoID("state", "WA")
		add(events.LocationUpserted, state, 1, events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120})
		add(events.LocationUpserted, events.GeoID("zip", "98101"), 1, events.Location{GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)",
			State: "WA", StateName: "Washington", Zipcode: "98101", StateGeoID: state, Lat: 47.6, Lon: -122.3})
	}
	add(events.PermitDeleted, events.PermitDocID("test", fmt.Sprintf("S%05d", first)), version+1, nil)
	return f.write()
}

// eventFile is an NDJSON file of events built in a test, from source
// "test", occurring at at (zero: 2026-01-01).
type eventFile struct {
	t   *testing.T
	at  time.Time
	buf bytes.Buffer
}

// add appends one event.
func (f *eventFile) add(typ events.Type, id string, v int64, data any) {
	f.t.Helper()
	at := f.at
	if at.IsZero() {
		at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	env, err := events.New(typ, id, v, at, "test", data)
	require.NoError(f.t, err)
	raw, err := json.Marshal(env)
	require.NoError(f.t, err)
	f.buf.Write(append(raw, '\n'))
}

// write writes the events to a file of the test's temporary directory
// and returns its path.
func (f *eventFile) write() string {
	f.t.Helper()
	file := filepath.Join(f.t.TempDir(), "events.ndjson")
	require.NoError(f.t, os.WriteFile(file, f.buf.Bytes(), 0o600))
	return file
}

func publishFile(t *testing.T, brokers, file string) {
	t.Helper()
	require.NoError(t, run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--partitions", "3", "--log-level", "error"}, kafkaNoEnv, io.Discard, io.Discard))
}

// indexOnce runs a Kafka indexer (memory backend, replay) with the
// snapshot file until ready, then stops it (writing the last snapshot);
// it returns the store and the log.
func indexOnce(t *testing.T, brokers, snap string, interval time.Duration, whileRunning func(*memory.Store)) (*memory.Store, string) {
	t.Helper()
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var cfg kafkaConfig
	fs := newFlagSet("test", env{getenv: kafkaNoEnv, stderr: io.Discard})
	cfg.bind(fs)
	args := []string{"--kafka-brokers", brokers, "--snapshot-interval", interval.String()}
	if snap != "" {
		args = append(args, "--snapshot-file", snap)
	}
	require.NoError(t, fs.parse(args))
	require.NoError(t, cfg.validate(true))
	store := memory.New(memory.Params{})
	k, err := newKafkaIndexer(cfg, "memory", store, store, log, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	check := k.Check()
	deadline := time.Now().Add(20 * time.Second)
	for !check(t.Context()).OK {
		require.True(t, time.Now().Before(deadline), "not ready: %v\n%s", check(t.Context()).Detail, logs.String())
		time.Sleep(10 * time.Millisecond)
	}
	if whileRunning != nil {
		whileRunning(store)
	}
	cancel()
	require.NoError(t, <-done)
	return store, logs.String()
}

func digest(t *testing.T, s *memory.Store) string {
	t.Helper()
	d, err := s.Digest(context.Background())
	require.NoError(t, err)
	return d
}

// A restart loads the snapshot and replays only what came after it; the
// result equals a clean replay's. A snapshot left behind by a kill -9
// during ingest (older than the log) does too; a corrupt one is refused
// with a log line and a full replay follows.
func TestSnapshotRestart(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")

	publishFile(t, brokers, snapEvents(t, 1, 300, 1, true))
	first, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "no snapshot yet")
	require.Contains(t, logs, `msg="snapshot written" path=`+snap+` reason=shutdown documents=302`)
	counts, _ := first.Counts(t.Context())
	require.Equal(t, int64(299), counts[readmodel.KindPermit])

	// More events after the snapshot: new permits and new versions.
	publishFile(t, brokers, snapEvents(t, 250, 400, 2, false))
	restarted, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "snapshot loaded; replaying what came after it")
	clean, _ := indexOnce(t, brokers, "", time.Hour, nil)
	require.Equal(t, digest(t, clean), digest(t, restarted))
	counts, _ = restarted.Counts(t.Context())
	require.Equal(t, int64(398), counts[readmodel.KindPermit]) // 1..400 less S00001 and S00250
	zip, err := restarted.Location(t.Context(), readmodel.ParseGeoRef(events.GeoID("zip", "98101")))
	require.NoError(t, err)
	require.Equal(t, int64(398), zip.PermitCount, "permits replayed after the snapshot link to the ZIP it holds")

	// kill -9 during ingest: the snapshot on disk is an older one (taken
	// while caught up, before the last events); the restart replays from
	// its offsets.
	var atKill []byte
	publishFile(t, brokers, snapEvents(t, 380, 450, 3, false))
	indexOnce(t, brokers, snap, 20*time.Millisecond, func(*memory.Store) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := os.ReadFile(snap)
			if err == nil && time.Since(modTime(t, snap)) < 5*time.Second {
				atKill = b
				break
			}
			require.True(t, time.Now().Before(deadline), "no periodic snapshot")
			time.Sleep(20 * time.Millisecond)
		}
		publishFile(t, brokers, snapEvents(t, 440, 500, 4, false)) // ingest goes on; then the kill
	})
	require.NoError(t, os.WriteFile(snap, atKill, 0o600)) // the disk as the kill left it
	afterKill, _ := indexOnce(t, brokers, snap, time.Hour, nil)
	clean, _ = indexOnce(t, brokers, "", time.Hour, nil)
	require.Equal(t, digest(t, clean), digest(t, afterKill))

	// kill -9 during a snapshot write leaves a temporary file; a corrupt
	// snapshot is refused and everything is replayed.
	require.NoError(t, os.WriteFile(snap+".tmp-999", atKill[:len(atKill)/3], 0o600))
	b := append([]byte(nil), atKill...)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(snap, b, 0o600))
	refused, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "snapshot refused; replaying every partition from the earliest offset instead")
	require.Contains(t, logs, "checksum mismatch")
	require.Equal(t, digest(t, clean), digest(t, refused))
}

// A snapshot whose checksum holds but which gives a permit id twice (no
// writer of ours makes one: the Import stores a snapshot's permits
// without looking for their ids first) is refused at Commit, and a full
// replay follows.
func TestSnapshotWithADuplicateIDRefused(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")
	publishFile(t, brokers, snapEvents(t, 1, 50, 1, true))
	clean, _ := indexOnce(t, brokers, "", time.Hour, nil)
	written := false
	_, err := snapshot.Write(snap, snapshot.Offsets{}, func(fn func(readmodel.Batch) error) error {
		return clean.Export(t.Context(), 20, func(b readmodel.Batch) error {
			if err := fn(b); err != nil || written || len(b.Permits) == 0 {
				return err
			}
			written = true
			return fn(readmodel.Batch{Permits: []readmodel.Permit{b.Permits[0].Clone()}}) // the first permit again
		})
	})
	require.NoError(t, err)
	refused, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "snapshot refused; replaying every partition from the earliest offset instead")
	require.Contains(t, logs, "permit id twice")
	require.True(t, written)
	require.Equal(t, digest(t, clean), digest(t, refused))
}

func modTime(t *testing.T, p string) time.Time {
	st, err := os.Stat(p)
	require.NoError(t, err)
	return st.ModTime()
}

// A snapshot is not written again while the read model and the
// consumer's positions are the ones it holds: neither at shutdown after
// a restart that consumed nothing, nor every interval while idle. New
// events, or a file removed meanwhile, are written.
func TestSnapshotNotWrittenAgainWhenUnchanged(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")

	publishFile(t, brokers, snapEvents(t, 1, 100, 1, true))
	first, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, `msg="snapshot written" path=`+snap+` reason=shutdown`)
	written, err := os.ReadFile(snap)
	require.NoError(t, err)

	// Restarted with nothing new, the intervals pass while idle.
	again, logs := indexOnce(t, brokers, snap, 10*time.Millisecond, func(*memory.Store) { time.Sleep(200 * time.Millisecond) })
	require.Contains(t, logs, "snapshot loaded; replaying what came after it")
	require.Contains(t, logs, `msg="snapshot unchanged; not written again" path=`+snap+` reason=shutdown`)
	require.NotContains(t, logs, "snapshot written")
	require.Equal(t, digest(t, first), digest(t, again))
	kept, err := os.ReadFile(snap)
	require.NoError(t, err)
	require.Equal(t, written, kept, "the file is the one written before (it names its creation time)")

	// New events: written at shutdown.
	publishFile(t, brokers, snapEvents(t, 90, 120, 2, false))
	_, logs = indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, `msg="snapshot written" path=`+snap+` reason=shutdown`)
	newer, err := os.ReadFile(snap)
	require.NoError(t, err)
	require.NotEqual(t, written, newer)

	// Removed while the process runs: written again at shutdown.
	_, logs = indexOnce(t, brokers, snap, time.Hour, func(*memory.Store) { require.NoError(t, os.Remove(snap)) })
	require.Contains(t, logs, `msg="snapshot written" path=`+snap+` reason=shutdown`)
	restarted, _ := indexOnce(t, brokers, snap, time.Hour, nil)
	clean, _ := indexOnce(t, brokers, "", time.Hour, nil)
	require.Equal(t, digest(t, clean), digest(t, restarted))
}

// A snapshot whose checksum holds but which has a tombstone of a kind no
// store holds (no writer of ours makes one) is refused as corrupt, and a
// full replay follows: the store's import refused it with an error of
// its own, which stopped the indexer instead (FuzzLoadEdited found it).
func TestSnapshotWithAnUnknownTombstoneRefused(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")
	publishFile(t, brokers, snapEvents(t, 1, 50, 1, true))
	clean, _ := indexOnce(t, brokers, "", time.Hour, nil)
	_, err := snapshot.Write(snap, snapshot.Offsets{}, func(fn func(readmodel.Batch) error) error {
		if err := clean.Export(t.Context(), 20, fn); err != nil {
			return err
		}
		return fn(readmodel.Batch{Deletes: []readmodel.Delete{{Kind: "parcel", ID: "p:1", Version: 3}}})
	})
	require.NoError(t, err)
	refused, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "snapshot refused; replaying every partition from the earliest offset instead")
	require.Contains(t, logs, `tombstone of unknown kind \"parcel\"`)
	require.Equal(t, digest(t, clean), digest(t, refused))
}

// TestSnapshotFileCheckedAtStart: a snapshot file that could never be
// written (its directory missing, or a directory itself) stops serve at
// start, named; it used to fail at every interval, logged, while serve
// ran on without it.
func TestSnapshotFileCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	for path, want := range map[string]string{
		filepath.Join(dir, "missing", "snap.bin"): "snapshot-file: snapshot: cannot write beside " + filepath.Join(dir, "missing", "snap.bin"),
		dir: "snapshot-file: snapshot: " + dir + " is a directory",
	} {
		var cfg kafkaConfig
		fs := newFlagSet("test", env{getenv: kafkaNoEnv, stderr: io.Discard})
		cfg.bind(fs)
		require.NoError(t, fs.parse([]string{"--kafka-brokers", "127.0.0.1:9", "--snapshot-file", path}))
		require.NoError(t, cfg.validate(true))
		store := memory.New(memory.Params{})
		_, err := newKafkaIndexer(cfg, "memory", store, store, slog.New(slog.DiscardHandler), nil)
		require.ErrorContains(t, err, want)
	}
}
