package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/gen"
)

// genConfig is the gen command's configuration.
type genConfig struct {
	Permits int
	Seed    int64
	Now     string
	Out     string

	now time.Time
}

func (c *genConfig) bind(fs *flagSet) {
	fs.IntVar(&c.Permits, "permits", 0, "number of permits to generate (required, 1 to 1000000000)")
	fs.Int64Var(&c.Seed, "seed", 1, "seed; the same seed, count and now give the same events")
	fs.StringVar(&c.Now, "now", "", "service clock's today (RFC 3339 or YYYY-MM-DD), the newest issue date; empty: system clock")
	fs.StringVar(&c.Out, "out", "-", "output NDJSON of event envelopes; - for stdout")
}

// Validate checks every field.
func (c *genConfig) Validate() error {
	var errs []error
	if c.Permits < 1 || c.Permits > gen.MaxPermits {
		errs = append(errs, fmt.Errorf("permits must be 1 to %d", gen.MaxPermits))
	}
	if c.Out == "" {
		errs = append(errs, errors.New("out is required (- for stdout)"))
	}
	t, err := parseNow(c.Now)
	errs = append(errs, err)
	c.now = t
	return errors.Join(errs...)
}

func runGen(ctx context.Context, e env, args []string) error {
	var cfg genConfig
	if err := loadConfig("gen", e, args, &cfg); err != nil {
		return err
	}
	return writeEvents(cfg.Out, e.stdout, func(emit func(events.Envelope) error) error {
		rep, err := gen.Generate(ctx, gen.Params{Permits: cfg.Permits, Seed: cfg.Seed, Now: cfg.now}, emit)
		if werr := rep.WriteText(e.stderr); err == nil {
			err = werr
		}
		return err
	})
}
