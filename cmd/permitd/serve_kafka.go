package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	kafkasrc "github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/internal/gctarget"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// kafkaConfig is the Kafka source's configuration, shared by `serve`
// (API plus indexer in one process) and `index` (indexer only).
type kafkaConfig struct {
	Brokers         string
	Group           string
	Topics          string
	BatchSize       int
	BatchWait       time.Duration
	MaxMessageBytes int
	DrainTimeout    time.Duration
	LagInterval     time.Duration
	Security        kafkaSecurityConfig
	// Snapshot (memory backend only): see docs/kafka.md.
	SnapshotFile     string
	SnapshotInterval time.Duration
}

// kafkaSecurityConfig is how every Kafka client of permitd (the
// consumer, the dead-letter writer, publish) reaches a managed Kafka: TLS
// and SASL. Flags map to PERMITD_* variables like every flag
// (--kafka-sasl-password: PERMITD_KAFKA_SASL_PASSWORD, the way to pass it
// without showing it in the process list); the password is masked in the
// logged configuration.
type kafkaSecurityConfig struct {
	TLS                bool
	CAFile             string
	CertFile, KeyFile  string
	InsecureSkipVerify bool
	SASLMechanism      string
	Username, Password string
}

func (c *kafkaSecurityConfig) bind(fs *flagSet) {
	fs.BoolVar(&c.TLS, "kafka-tls", false, "connect to Kafka over TLS (implied by the TLS file flags)")
	fs.StringVar(&c.CAFile, "kafka-tls-ca-file", "", "PEM bundle of the CAs that sign the brokers' certificates; empty: the system pool")
	fs.StringVar(&c.CertFile, "kafka-tls-cert-file", "", "PEM client certificate for mutual TLS (with --kafka-tls-key-file)")
	fs.StringVar(&c.KeyFile, "kafka-tls-key-file", "", "PEM private key of --kafka-tls-cert-file")
	fs.BoolVar(&c.InsecureSkipVerify, "kafka-tls-insecure-skip-verify", false, "do not verify the brokers' certificates (tests only)")
	fs.StringVar(&c.SASLMechanism, "kafka-sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty: none")
	fs.StringVar(&c.Username, "kafka-sasl-username", "", "SASL user name")
	fs.StringVar(&c.Password, "kafka-sasl-password", "", "SASL password (prefer PERMITD_KAFKA_SASL_PASSWORD; masked in logs)")
}

// security is the kafka package's value; nil when nothing is set.
func (c *kafkaSecurityConfig) security() *kafkasrc.Security {
	if *c == (kafkaSecurityConfig{}) {
		return nil
	}
	return &kafkasrc.Security{
		TLS: c.TLS, CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile, InsecureSkipVerify: c.InsecureSkipVerify,
		SASLMechanism: c.SASLMechanism, Username: c.Username, Password: c.Password,
	}
}

// validate loads the TLS files and checks the SASL settings.
func (c *kafkaSecurityConfig) validate() error {
	return c.security().Validate()
}

func (c *kafkaSecurityConfig) logValue() []any {
	return []any{"kafka_tls", c.TLS || c.CAFile != "" || c.CertFile != "", "kafka_tls_ca_file", c.CAFile,
		"kafka_tls_cert_file", c.CertFile, "kafka_sasl_mechanism", c.SASLMechanism,
		"kafka_sasl_username", c.Username, "kafka_sasl_password", mask(c.Password)}
}

func (c *kafkaConfig) bind(fs *flagSet) {
	fs.StringVar(&c.Brokers, "kafka-brokers", "", "comma-separated Kafka bootstrap brokers (host:port); empty: no Kafka source")
	fs.StringVar(&c.Group, "kafka-group", "permitd-indexer", "consumer group shared by the indexers of a durable backend; the memory backend uses none (each process replays every partition)")
	fs.StringVar(&c.Topics, "kafka-topics", strings.Join(events.Topics(), ","), "comma-separated topics to index")
	fs.IntVar(&c.BatchSize, "kafka-batch-size", 2000, "most messages of one partition per batch (1 to 100000)")
	fs.DurationVar(&c.BatchWait, "kafka-batch-wait", 20*time.Millisecond, "how long a batch may wait to fill after its first message")
	fs.IntVar(&c.MaxMessageBytes, "kafka-max-message-bytes", indexer.DefaultMaxMessageBytes, "larger messages go to the dead-letter topic")
	fs.DurationVar(&c.DrainTimeout, "kafka-drain-timeout", 10*time.Second, "on shutdown, how long the batch in hand may take to finish and commit")
	fs.DurationVar(&c.LagInterval, "kafka-lag-interval", 5*time.Second, "how often (at least 100ms) the owned partitions' high watermarks are listed for the lag metric and readiness (also while a partition is stuck)")
	c.Security.bind(fs)
	fs.StringVar(&c.SnapshotFile, "snapshot-file", "", "memory backend: snapshot file of the read model and the consumed offsets, written every --snapshot-interval and on shutdown when the read model changed since, loaded at start (then only later events are replayed); empty: none, every start replays everything")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", 5*time.Minute, "how often (at least 10ms) the snapshot is written while caught up (when the read model changed since the last)")
}

// enabled reports whether a Kafka source is configured.
func (c *kafkaConfig) enabled() bool { return c.Brokers != "" }

// The shortest periods of serve's and index's periodic Kafka work. Each
// lag listing asks the brokers for every owned partition's watermark: at
// --kafka-lag-interval 1ns an idle serve and its broker each used 0.86 of
// a core, at 10ms 0.24 and 0.20. A snapshot interval of 1ns kept an idle
// serve at 1.1 cores checking whether the read model changed; at 10ms
// the check costs nothing measurable (a snapshot itself is written only
// when the read model changed).
const (
	minLagInterval      = 100 * time.Millisecond
	minSnapshotInterval = 10 * time.Millisecond
)

// validate checks the fields; brokers are only required when required is
// true (index always needs them, serve only when --kafka-brokers is set).
func (c *kafkaConfig) validate(required bool) error {
	var errs []error
	if required && !c.enabled() {
		errs = append(errs, errors.New("kafka-brokers is required"))
	}
	if !c.enabled() {
		return errors.Join(errs...)
	}
	for _, b := range splitCSV(c.Brokers) {
		if err := validateAddr(b); err != nil {
			errs = append(errs, fmt.Errorf("kafka-brokers: %w", err))
		}
	}
	topics := splitCSV(c.Topics)
	if len(topics) == 0 {
		errs = append(errs, errors.New("kafka-topics: at least one topic"))
	}
	for _, t := range topics {
		// The topic names are fixed (events.TopicSpecs): another one is a
		// typo, and its consumer waited, never ready, for a topic no
		// publisher writes.
		if !slices.Contains(events.Topics(), t) {
			errs = append(errs, fmt.Errorf("kafka-topics: %q is not an event topic (want some of %s)", t, strings.Join(events.Topics(), ",")))
		}
	}
	if c.Group == "" {
		errs = append(errs, errors.New("kafka-group must not be empty"))
	}
	if c.BatchSize < 1 || c.BatchSize > kafkasrc.MaxBatchSize {
		errs = append(errs, fmt.Errorf("kafka-batch-size must be 1 to %d", kafkasrc.MaxBatchSize))
	}
	if c.BatchWait <= 0 || c.DrainTimeout <= 0 {
		errs = append(errs, errors.New("kafka-batch-wait and kafka-drain-timeout must be positive"))
	}
	if c.LagInterval < minLagInterval {
		errs = append(errs, fmt.Errorf("kafka-lag-interval must be at least %v", minLagInterval))
	}
	if c.MaxMessageBytes < 1024 {
		errs = append(errs, errors.New("kafka-max-message-bytes must be at least 1024"))
	}
	errs = append(errs, c.Security.validate())
	if c.SnapshotInterval < minSnapshotInterval {
		errs = append(errs, fmt.Errorf("snapshot-interval must be at least %v", minSnapshotInterval))
	}
	return errors.Join(errs...)
}

func (c *kafkaConfig) logValue() []any {
	return append([]any{"kafka_brokers", c.Brokers, "kafka_group", c.Group, "kafka_topics", c.Topics,
		"kafka_batch_size", c.BatchSize, "kafka_max_message_bytes", c.MaxMessageBytes,
		"snapshot_file", c.SnapshotFile, "snapshot_interval", c.SnapshotInterval}, c.Security.logValue()...)
}

// durableBackend reports whether a backend keeps its state across
// restarts, which decides between a shared consumer group and replay.
func durableBackend(backend string) bool { return backend != "memory" }

// kafkaIndexer is the indexer fed from Kafka: the consumer, the indexer it
// drives and the dead-letter writer.
type kafkaIndexer struct {
	Indexer  *indexer.Indexer
	Consumer *kafkasrc.Consumer
	dlq      *kafkasrc.DeadLetterWriter
	mode     string

	w        readmodel.Writer
	log      *slog.Logger
	snapPath string
	snapEach time.Duration
	exporter exporter    // nil: no snapshots
	loaded   atomic.Bool // a snapshot was loaded
	replayer replayer    // nil: the backend has no replay mode
	replayGC *replayGC   // the replay's collector phase (gctarget.Replay)
	// saved is what the snapshot file holds, once this process loaded or
	// wrote it (loadSnapshot, writeSnapshot; never both at once).
	saved *savedState
}

// replayGC holds the end of a replay's collector phase (gctarget.Replay)
// from Run's start until the consumer catches up (OnCaughtUp) or stops.
type replayGC struct{ end atomic.Pointer[func()] }

func (r *replayGC) begin(end func()) { r.end.Store(&end) }

// finish ends the phase, once; a no-op when none is open.
func (r *replayGC) finish() {
	if end := r.end.Swap(nil); end != nil {
		(*end)()
	}
}

// savedState is the store's version and the consumer's positions a
// snapshot was taken at, and its file. While the three are the same, the
// file holds the read model as it is and is not written again: a restart that consumed
// nothing (a rolling restart, a start from a shutdown snapshot) shuts
// down at once, and an idle indexer does not export its store every
// interval (ingest waits for an export: seconds at 1M permits).
type savedState struct {
	seq     uint64
	offsets snapshot.Offsets
	file    os.FileInfo // the file as it was then; nil: not known
}

// saveState is what the snapshot at path holds: the state at seq and
// offsets.
func saveState(path string, seq uint64, offsets snapshot.Offsets) *savedState {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // unknown: the next snapshot is written
	}
	return &savedState{seq: seq, offsets: offsets, file: fi}
}

// holds reports whether the snapshot at path is still the saved one
// (not removed, replaced or changed since) and holds the state at seq
// and offsets.
func (s *savedState) holds(path string, seq uint64, offsets snapshot.Offsets) bool {
	if s == nil || s.seq != seq || !maps.EqualFunc(s.offsets, offsets, maps.Equal) {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, s.file) && fi.Size() == s.file.Size() && fi.ModTime().Equal(s.file.ModTime())
}

// replayer is the memory backend's one-side-first replay
// (memory.(*Store).BeginReplay): a start without a snapshot replays into
// one side, made readable when the consumer has caught up.
type replayer interface {
	BeginReplay() bool
	ReserveReplay(counts map[readmodel.Kind]int64) bool
	EndReplay() int
}

// exporter is the memory backend's door for snapshots
// (memory.(*Store).Export).
type exporter interface {
	Export(ctx context.Context, size int, fn func(readmodel.Batch) error) error
	NewImport() *memory.Import
	ReadVersion() (epoch, seq uint64) // seq counts the writes that changed the state
	StopBuilding() bool               // no second side built in the background from now on
}

// newKafkaIndexer wires the Kafka source into w for serve and index.
//
// With a durable backend the indexers share the consumer group cfg.Group
// and resume from its committed offsets. With the memory backend (which
// loses its state on restart) each process reads every partition from the
// earliest offset and commits nothing, so API replicas never share a
// group and each holds the whole read model.
//
// index always calls it; serve calls it when --kafka-brokers is set,
// beside the embedded feed (which still runs unless -data none): run Run
// in the errgroup and add Check to the readiness checks. The Kafka
// source has its own Indexer; m (indexer.NewMetrics) may be shared with
// the feed's.
func newKafkaIndexer(cfg kafkaConfig, backend string, w readmodel.Writer, look indexer.Lookup, log *slog.Logger, m *indexer.Metrics) (*kafkaIndexer, error) {
	brokers := splitCSV(cfg.Brokers)
	sec := cfg.Security.security()
	dlq, err := kafkasrc.NewDeadLetterWriter(kafkasrc.DeadLetterParams{Brokers: brokers, Security: sec})
	if err != nil {
		return nil, err
	}
	ix, err := indexer.New(indexer.Params{
		Writer: w, Lookup: look, DeadLetter: dlq.DeadLetter, Logger: log,
		MaxMessageBytes: cfg.MaxMessageBytes, Metrics: m,
	})
	if err != nil {
		dlq.Close()
		return nil, err
	}
	group, mode := cfg.Group, "group"
	if !durableBackend(backend) {
		group, mode = "", "replay"
	}
	var rp replayer
	if r, ok := w.(replayer); ok && mode == "replay" {
		rp = r
	}
	gc := &replayGC{}
	c, err := kafkasrc.New(kafkasrc.Params{
		Brokers: brokers, Topics: splitCSV(cfg.Topics), Group: group, Parser: ix, Settle: ix.Settle,
		// The replay's state becomes readable before readiness turns
		// true (a no-op when none is open).
		OnCaughtUp: func() {
			if rp == nil {
				return
			}
			start := time.Now()
			if n := rp.EndReplay(); n > 0 {
				log.Info("replay caught up; its state is readable, the second side builds in the background",
					"batches", n, "took", time.Since(start).Round(time.Microsecond))
			}
			gc.finish()
		},
		// The replay's side is sized for what the topics hold, so its
		// tables are not grown while it writes them.
		Backlog: func(messages map[string]int64) {
			kinds := indexer.BacklogKinds(messages)
			ix.ReserveLocations(kinds[readmodel.KindLocation]) // the indexer's own table
			if rp != nil {
				rp.ReserveReplay(kinds)
			}
		},
		// Documents of the assigned partitions still waiting for a
		// location, recovered from a durable read model (indexer/relink_recover.go).
		Assigned: func(ctx context.Context, owned map[string][]int) error {
			_, err := ix.RecoverUnlinked(ctx, owned)
			return err
		},
		BatchSize: cfg.BatchSize, BatchWait: cfg.BatchWait, DrainTimeout: cfg.DrainTimeout,
		LagInterval: cfg.LagInterval,
		Logger:      log, Metrics: m, Security: sec,
	})
	if err != nil {
		dlq.Close()
		return nil, err
	}
	ix.SetLocationSource(c.AwaitLocations) // a location published while running is waited for, not missed
	k := &kafkaIndexer{Indexer: ix, Consumer: c, dlq: dlq, mode: mode, w: w, log: log,
		snapPath: cfg.SnapshotFile, snapEach: cfg.SnapshotInterval, replayer: rp, replayGC: gc}
	if cfg.SnapshotFile != "" {
		ex, ok := w.(exporter)
		if !ok || mode != "replay" {
			dlq.Close()
			return nil, fmt.Errorf("snapshot-file: only the memory backend takes snapshots (%s keeps its own state)", backend)
		}
		if err := snapshot.CheckWritable(cfg.SnapshotFile); err != nil {
			dlq.Close()
			return nil, fmt.Errorf("snapshot-file: %w", err)
		}
		k.exporter = ex
		ix.TrackRelinksForSnapshots() // re-link files beside the snapshots
	}
	return k, nil
}

// Run loads the snapshot (when configured), consumes until ctx ends,
// then drains, commits, writes the last snapshot and closes the
// dead-letter writer.
func (k *kafkaIndexer) Run(ctx context.Context) error {
	if k.exporter != nil {
		if err := k.loadSnapshot(ctx); err != nil {
			k.dlq.Close()
			return err
		}
	}
	// Without a snapshot the memory backend is empty: the replay writes
	// one side first (memory/replay.go), ended by OnCaughtUp.
	if k.replayer != nil && k.replayer.BeginReplay() {
		k.log.Info("replaying into one side of the memory backend first; readable once caught up")
		// Nobody reads until the replay is done: the collector runs
		// less often meanwhile, bounded (gctarget.Replay).
		if end, bound := gctarget.Replay(); bound > 0 {
			k.replayGC.begin(end)
			k.log.Info("garbage collector: the replay raises the target while the heap stays under an eighth of the memory",
				"bound_bytes", bound)
		}
	}
	var snaps sync.WaitGroup
	stop := make(chan struct{})
	if k.exporter != nil {
		snaps.Go(func() { k.snapshotEvery(ctx, stop) })
	}
	snaps.Go(func() { k.relinkEvery(ctx, stop) })
	err := k.Consumer.Run(ctx)
	close(stop)
	snaps.Wait()
	if k.exporter != nil {
		// The last snapshot needs the readers' side only: a second side
		// still building in the background (after a replay or this
		// start's snapshot) would share the CPU with its export, and is
		// not needed after it (memory/standby.go).
		if k.exporter.StopBuilding() {
			k.log.Info("second side's background build stopped for the shutdown snapshot")
		}
	}
	if k.replayer != nil {
		k.replayer.EndReplay() // stopped before catching up: what was applied is readable
		k.replayGC.finish()
	}
	if k.exporter != nil {
		// The consumer has drained: the last snapshot saves the replay
		// of everything consumed so far at the next start.
		k.writeSnapshot(context.WithoutCancel(ctx), "shutdown")
	}
	if cerr := k.dlq.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close dead-letter writer: %w", cerr))
	}
	return err
}

// loadSnapshot applies the snapshot and sets the consumer's start
// offsets; a missing, corrupt or old-format snapshot means a full replay.
func (k *kafkaIndexer) loadSnapshot(ctx context.Context) error {
	// The load allocates the whole read model at once and keeps nearly
	// all of it: collections of a heap that only grows would cost more
	// than the load itself on 2 cores. The collector is off for the load
	// only (snapshot.LoadGCPercent; GOMEMLIMIT still applies), and then
	// resumes as if it had found the loaded heap live (gctarget.Resume):
	// not at once, while the consumer catches up and the second side is
	// built, to mark gigabytes that are all live.
	defer gctarget.Resume(debug.SetGCPercent(snapshot.LoadGCPercent))
	start := time.Now()
	im := k.exporter.NewImport()
	// The batches' permit and property arrays are lent (LoadLent): the
	// Import copies what it keeps and gives them back, and the next
	// batches are decoded into them. It builds its second side from the
	// file again (SecondFrom), which stays open until then.
	info, again, err := snapshot.LoadLent(k.snapPath, im.Reserve, func(b readmodel.Batch, shapes *readmodel.LinkShapes, done func()) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		k.Indexer.Preload(b)
		return im.AddLent(b, shapes, done)
	})
	if err == nil {
		im.SecondFrom(again) // the second side from the file again
		err = im.Commit()
	} else {
		im.Abort()
	}
	switch {
	case err == nil:
		_, seq := k.exporter.ReadVersion()
		k.saved = saveState(k.snapPath, seq, info.Offsets)
		k.Consumer.SetStartOffsets(info.Offsets)
		k.loaded.Store(true)
		k.log.Info("snapshot loaded; replaying what came after it", "path", k.snapPath, "documents", info.Documents,
			"bytes", info.Bytes, "created", info.Created, "partitions", countOffsets(info.Offsets), "took", time.Since(start).Round(time.Millisecond))
		return k.restoreUnlinked(ctx)
	case errors.Is(err, snapshot.ErrNone):
		k.log.Info("no snapshot yet; replaying every partition from the earliest offset", "path", k.snapPath)
		return nil
	case errors.Is(err, snapshot.ErrCorrupt), errors.Is(err, snapshot.ErrFormat), errors.Is(err, memory.ErrDuplicateID):
		k.log.Error("snapshot refused; replaying every partition from the earliest offset instead", "path", k.snapPath, "err", err)
		return nil
	}
	return fmt.Errorf("load snapshot %s: %w", k.snapPath, err)
}

// restoreUnlinked hands the re-link file saved with the loaded snapshot
// to the indexer, so that documents the snapshot holds without their
// location are re-linked when it arrives (indexer/relink_save.go). A
// missing or corrupt file is logged: those documents stay unlinked
// until re-published, nothing is wrong.
func (k *kafkaIndexer) restoreUnlinked(ctx context.Context) error {
	path := indexer.UnlinkedPath(k.snapPath)
	msgs, err := indexer.ReadUnlinked(path)
	if err != nil {
		k.log.Error("re-link file refused; documents of the snapshot written without their location are re-linked only if re-published",
			"path", path, "unlinked_documents", k.Indexer.PreloadedUnlinked(), "err", err)
		return nil
	}
	if err := k.Indexer.RestoreUnlinked(ctx, msgs); err != nil {
		return fmt.Errorf("restore re-link file %s: %w", path, err)
	}
	if len(msgs) > 0 {
		k.log.Info("re-link file restored", "path", path, "messages", len(msgs), "unlinked_documents", k.Indexer.PreloadedUnlinked())
	}
	return nil
}

func countOffsets(o snapshot.Offsets) int {
	n := 0
	for _, ps := range o {
		n += len(ps)
	}
	return n
}

// relinkEvery re-links documents written without a location that the
// read model holds now although this indexer never consumed it (another
// member of the group owns the locations partitions, or serve's embedded
// feed wrote it): indexer.RelinkFromLookup, one read per geography waited
// for. Every 5 s while documents wait and rounds find something, backing
// off to every 5 min while they find nothing (back to 5 s when more
// documents wait).
func (k *kafkaIndexer) relinkEvery(ctx context.Context, stop <-chan struct{}) {
	const minEvery, maxEvery = 5 * time.Second, 5 * time.Minute
	every, waiting := minEvery, int64(0)
	t := time.NewTimer(every)
	defer t.Stop()
	for tick(ctx, stop, t.C) {
		if w := k.Indexer.Progress().Unlinked; w > waiting {
			every = minEvery
			waiting = w
		}
		n, err := k.Indexer.RelinkFromLookup(ctx)
		switch {
		case err != nil:
			k.log.Warn("re-link from the read model failed; retrying later", "err", err)
			every = min(2*every, maxEvery)
		case n > 0:
			k.log.Info("re-linked documents to locations found in the read model", "documents", n)
			every = minEvery
		default:
			every = min(2*every, maxEvery)
		}
		waiting = min(waiting, k.Indexer.Progress().Unlinked)
		t.Reset(every)
	}
}

// snapshotEvery writes a snapshot every snapEach while caught up.
func (k *kafkaIndexer) snapshotEvery(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(k.snapEach)
	defer t.Stop()
	for tick(ctx, stop, t.C) {
		if k.Consumer.CaughtUp() {
			k.writeSnapshot(ctx, "interval")
		}
	}
}

// tick waits for the next tick of c; false once stop is closed or ctx
// ends.
func tick(ctx context.Context, stop <-chan struct{}, c <-chan time.Time) bool {
	select {
	case <-stop:
		return false
	case <-ctx.Done():
		return false
	case <-c:
		return true
	}
}

// writeSnapshot writes the read model with the consumer's positions, taken
// before the export (a snapshot may be behind its offsets' events, never
// ahead: replaying an applied event is a no-op). Nothing is written while
// messages wait inside the indexer for a location: their offsets are
// passed but they are not in the read model yet.
func (k *kafkaIndexer) writeSnapshot(ctx context.Context, why string) {
	if !k.Indexer.Settled() || k.Indexer.Progress().Parked > 0 {
		k.log.Info("no snapshot while messages wait for their location", "reason", why)
		return
	}
	// The version before the positions and the export: a write after
	// it makes the store newer than the recorded version, never older.
	_, seq := k.exporter.ReadVersion()
	offsets := snapshot.Offsets{}
	for _, p := range k.Consumer.Partitions() {
		if offsets[p.Topic] == nil {
			offsets[p.Topic] = map[int]int64{}
		}
		offsets[p.Topic][p.Partition] = p.Position
	}
	if k.saved.holds(k.snapPath, seq, offsets) {
		level := slog.LevelInfo
		if why == "interval" {
			level = slog.LevelDebug // every interval while idle
		}
		k.log.Log(ctx, level, "snapshot unchanged; not written again", "path", k.snapPath, "reason", why)
		return
	}
	start := time.Now()
	// The re-link file first, never older than the snapshot (see
	// indexer/relink_save.go).
	unlinked, mark := k.Indexer.CaptureUnlinked()
	if err := indexer.WriteUnlinked(indexer.UnlinkedPath(k.snapPath), unlinked); err != nil {
		k.log.Error("snapshot failed; the previous one stays", "path", k.snapPath, "reason", why, "err", err)
		return
	}
	info, err := snapshot.Write(k.snapPath, offsets, func(fn func(readmodel.Batch) error) error {
		return k.exporter.Export(ctx, 4096, fn)
	})
	if err != nil {
		k.log.Error("snapshot failed; the previous one stays", "path", k.snapPath, "reason", why, "err", err)
		return
	}
	k.Indexer.SavedUnlinked(mark)
	k.saved = saveState(k.snapPath, seq, offsets)
	k.log.Info("snapshot written", "path", k.snapPath, "reason", why, "documents", info.Documents, "bytes", info.Bytes,
		"partitions", countOffsets(offsets), "took", time.Since(start).Round(time.Millisecond))
}

// Check is the indexer's readiness: OK once the consumer caught up with
// the high watermarks it saw at start and at least one batch is applied
// (or a snapshot was loaded).
func (k *kafkaIndexer) Check() api.ReadinessCheck {
	return func(context.Context) api.Check {
		p := k.Indexer.Progress()
		caught := k.Consumer.CaughtUp()
		return api.Check{Name: "indexer", OK: caught && (p.Batches > 0 || k.loaded.Load()), Detail: map[string]any{
			"source": "kafka", "mode": k.mode, "caught_up": caught, "lag": k.Consumer.Lag(),
			"partitions":      k.Consumer.Partitions(),
			"batches_applied": p.Batches, "events_applied": p.Applied, "events_stale": p.Stale,
			"dead_letters": p.DeadLetters, "retries": p.Retries,
			"waiting_for_location": p.Parked, "linked_after_waiting": p.Relinked,
			"unlinked_waiting_for_location": p.Unlinked, "unlinked_not_remembered": p.UnlinkedDropped,
		}}
	}
}
