package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/signals"
)

// signalsConfig is the signals command's configuration.
type signalsConfig struct {
	commonConfig
	In   string
	Out  string
	AsOf string

	asOf   time.Time
	getenv func(string) string // PERMITD_NOW when -as-of is empty
}

func (c *signalsConfig) bind(fs *flagSet) {
	c.commonConfig.bind(fs)
	fs.StringVar(&c.In, "in", "-", "input NDJSON of event envelopes (location.upserted, permit.upserted, permit.deleted), plain, gzip or zstd; - for stdin")
	fs.StringVar(&c.Out, "out", "-", "output NDJSON of signal events; - for stdout")
	fs.StringVar(&c.AsOf, "as-of", "", "computation instant (RFC 3339 or YYYY-MM-DD); empty: PERMITD_NOW, else the system clock")
}

// Validate checks every field.
func (c *signalsConfig) Validate() error {
	var errs []error
	errs = append(errs, c.commonConfig.validate())
	if c.In == "" || c.Out == "" {
		errs = append(errs, errors.New("in and out are required (- for stdin/stdout)"))
	}
	s := c.AsOf
	if s == "" {
		s = c.getenv("PERMITD_NOW")
	}
	t, err := parseNow(s)
	if err != nil {
		errs = append(errs, fmt.Errorf("as-of: %w", err))
	}
	if t.IsZero() {
		t = time.Now().UTC()
	}
	c.asOf = t
	return errors.Join(errs...)
}

func runSignals(ctx context.Context, e env, args []string) error {
	cfg := signalsConfig{getenv: e.getenv}
	if err := loadConfig("signals", e, args, &cfg); err != nil {
		return err
	}
	log := cfg.logger(e.stderr)
	log.Info("starting permitd signals", "in", cfg.In, "out", cfg.Out, "as_of", cfg.asOf.Format(time.RFC3339))

	raw, _, closeRaw, err := openInput(cfg.In)
	if err != nil {
		return err
	}
	defer closeRaw()
	in, closeIn, err := uncompressedInput(raw, log)
	if err != nil {
		return err
	}
	defer closeIn()
	var out io.Writer = e.stdout
	var outFile *os.File
	if cfg.Out != "-" {
		f, err := os.Create(cfg.Out)
		if err != nil {
			return err
		}
		outFile = f
		out = f
	}
	rep, err := writeSignals(ctx, in, out, signals.Params{AsOf: cfg.asOf})
	if outFile != nil {
		if cerr := outFile.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	log.Info("signals written", "permits_read", rep.PermitsRead, "locations_read", rep.LocationsRead,
		"leads", rep.Leads, "lead_deletes", rep.LeadDeletes, "geo_signals", rep.GeoSignals, "catalog_entries", rep.CatalogEntries, "version_too_large", rep.VersionTooLarge)
	return nil
}

// writeSignals runs the reference pipeline over NDJSON envelopes and
// writes its events as NDJSON. A line that is not a valid envelope stops
// the run with its line number.
func writeSignals(ctx context.Context, in io.Reader, out io.Writer, p signals.Params) (signals.Report, error) {
	nw := events.NewNDJSONWriter(out, 256<<10)
	pl, err := signals.New(p, nw.Write)
	if err != nil {
		return signals.Report{}, err
	}
	err = events.EachNDJSONLine(in, func(line int, raw []byte) error {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		env, err := events.Decode(raw)
		if err == nil {
			err = pl.Add(env)
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return nil
	})
	if err != nil {
		return signals.Report{}, err
	}
	rep, err := pl.Finish(ctx)
	if err != nil {
		return rep, err
	}
	return rep, nw.Flush()
}
