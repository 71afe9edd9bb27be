package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/seattle"
)

func init() {
	register("import", "import bundled real data as NDJSON events: import seattle|gazetteer [-out FILE]", runImport)
}

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
	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	if err := produce(func(env events.Envelope) error {
		var err error
		if line, err = appendEnvelope(line[:0], env); err != nil {
			return err
		}
		line = append(line, '\n')
		_, err = bw.Write(line)
		return err
	}); err != nil {
		return err
	}
	return bw.Flush()
}

// appendEnvelope appends json.Marshal(env) without re-compacting Data:
// the envelope's other fields, then the payload spliced in as it is
// (producers hand over compact JSON).
func appendEnvelope(b []byte, env events.Envelope) ([]byte, error) {
	data := env.Data
	env.Data = nil
	head, err := json.Marshal(env)
	if err != nil {
		return b, err
	}
	if len(data) == 0 {
		return append(b, head...), nil
	}
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	return append(b, '}'), nil
}
