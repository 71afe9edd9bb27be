package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/seattle"
)

// importConfig is the import command's configuration.
type importConfig struct {
	Dataset string // seattle or gazetteer, the first argument
	Out     string
}

func (c *importConfig) bind(fs *flagSet) {
	fs.StringVar(&c.Out, "out", "-", "output NDJSON of event envelopes; - for stdout")
}

// Validate checks every field.
func (c *importConfig) Validate() error {
	var errs []error
	if c.Dataset != "seattle" && c.Dataset != "gazetteer" {
		errs = append(errs, fmt.Errorf("dataset %q: want seattle or gazetteer", c.Dataset))
	}
	if c.Out == "" {
		errs = append(errs, errors.New("out is required (- for stdout)"))
	}
	return errors.Join(errs...)
}

func runImport(ctx context.Context, e env, args []string) error {
	var cfg importConfig
	fs := newFlagSet("import", e)
	cfg.bind(fs)
	if len(args) == 0 || len(args[0]) == 0 || args[0][0] == '-' {
		fmt.Fprintln(e.stderr, "usage: permitd import seattle|gazetteer [-out FILE]")
		return errUsage
	}
	cfg.Dataset = args[0]
	if err := fs.parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return writeEvents(cfg.Out, e.stdout, func(emit func(events.Envelope) error) error {
		switch cfg.Dataset {
		case "seattle":
			rep, err := seattle.Import(ctx, data.Open, emit)
			if werr := rep.WriteText(e.stderr); err == nil {
				err = werr
			}
			return err
		default:
			rep, err := gazetteer.Import(ctx, data.Open, emit)
			fmt.Fprintf(e.stderr, "gazetteer: %d events %v, %d skipped rows, in %v\n", rep.Events, rep.Locations, rep.SkippedRows(""), rep.Elapsed)
			for _, s := range rep.Skipped {
				fmt.Fprintf(e.stderr, "  skipped %s %s: %d rows, first lines %v\n", s.File, s.Reason, s.Rows, s.Lines)
			}
			return err
		}
	})
}

// writeEvents runs produce with an emit that writes one JSON envelope per
// line to out (a file, created or truncated, or - for stdout).
func writeEvents(out string, stdout io.Writer, produce func(emit func(events.Envelope) error) error) (err error) {
	w := stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	nw := events.NewNDJSONWriter(w, 1<<20)
	if err := produce(nw.Write); err != nil {
		return err
	}
	return nw.Flush()
}
