package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/permitd/permitd/api"
)

// flagSet returns a FlagSet whose defaults come from PERMITD_* variables:
// each flag -foo-bar reads PERMITD_FOO_BAR when the flag is not given.
type flagSet struct {
	*flag.FlagSet
	getenv func(string) string
}

func newFlagSet(name string, e env) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return &flagSet{FlagSet: fs, getenv: e.getenv}
}

// envName maps a flag name to its variable: kafka-brokers -> PERMITD_KAFKA_BROKERS.
func envName(flagName string) string {
	return "PERMITD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse applies the environment, then the command line (which wins).
func (fs *flagSet) parse(args []string) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := fs.getenv(envName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = envError(f, v, err)
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}

// envError says which variable held what, and what its flag takes: the
// bare "PERMITD_MAX_CONNS: parse error" named neither the value nor the
// form. A value that may be a secret is not repeated.
func envError(f *flag.Flag, v string, err error) error {
	name := envName(f.Name)
	var want string
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			want = "true or false"
		case int, int64, uint, uint64:
			want = "a whole number"
		case float64:
			want = "a number"
		case time.Duration:
			want = "a duration such as 100ms, 5s or 2m"
		}
	}
	if want != "" { // a number, a switch or a duration: no secret
		return fmt.Errorf("%s=%s: want %s (as -%s)", name, strconv.Quote(v), want, f.Name)
	}
	shown := strconv.Quote(v)
	if strings.Contains(name, "PASSWORD") || strings.Contains(name, "SECRET") || strings.Contains(name, "KEY") {
		shown = "(value not shown)"
	}
	return fmt.Errorf("%s=%s: %w", name, shown, err)
}

// commonConfig is shared by every long-running command.
type commonConfig struct {
	LogLevel  string
	LogFormat string
}

func (c *commonConfig) bind(fs *flagSet) {
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json")
}

func (c *commonConfig) validate() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("log-level: %w", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return errors.New("log-format must be text or json")
	}
	return nil
}

// handlerOptions are the log's options: its level.
func (c *commonConfig) handlerOptions() *slog.HandlerOptions {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	return &slog.HandlerOptions{Level: lvl}
}

func (c *commonConfig) logger(w io.Writer) *slog.Logger {
	opts := c.handlerOptions()
	if w == nil {
		w = os.Stderr
	}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// accessLogger is the access log's logger over w: logger's format and
// level, with the request lines written by the API's shortcut
// (api.AccessLogger), the same bytes as logger's handler would write.
func (c *commonConfig) accessLogger(w io.Writer) *slog.Logger {
	return api.AccessLogger(w, c.LogFormat == "json", c.handlerOptions())
}

// parseNow reads the service clock override: RFC 3339 or a date
// (midnight UTC), in the years nowYears allows. Empty means the system
// clock.
func parseNow(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return time.Time{}, fmt.Errorf("now: want RFC 3339 or YYYY-MM-DD, got %q", s)
		}
	}
	t = t.UTC()
	if y := t.Year(); y < nowYears[0] || y > nowYears[1] || t.Unix() < 1 {
		return time.Time{}, fmt.Errorf("now: want an instant after 1970-01-01T00:00:00Z in a year up to %d, got %q", nowYears[1], s)
	}
	return t, nil
}

// nowYears bound the service clock: the dates events carry and the API
// takes have four-digit years, and `permitd gen` writes dates up to about
// four years before its clock and two after it (issue, application,
// completion and expiration dates), which a clock of year 0000 or 9999
// took out of that range (invalid events from the generator). And the
// clock is the signals' as-of instant, which versions the geo signal rows
// in Unix seconds: a clock at or before 1970-01-01T00:00:00Z (allowed
// from 1900 until the seventy-ninth session) made versions the indexer
// refuses, and serve stopped on the bundled data's first geo signal.
var nowYears = [2]int{1970, 9000}

func validateAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("addr %q: %w", addr, err)
	}
	// A port past 65535 passed here and failed only when listened on or
	// dialled; an empty one listened on a random port.
	if n, err := strconv.ParseUint(port, 10, 64); port == "" || (err == nil && n > 65535) {
		return fmt.Errorf("addr %q: want a port from 0 to 65535", addr)
	}
	return nil
}

// mask shows that a secret is set without showing it.
func mask(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("***(%d chars)", len(s))
}

func maskList(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = mask(s)
	}
	return out
}

func splitCSV(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// configurable is a command's configuration struct.
type configurable interface {
	bind(fs *flagSet)
	Validate() error
}

// loadConfig binds cfg's flags, applies PERMITD_* variables and the
// command line, and validates: every command fails fast the same way.
func loadConfig(name string, e env, args []string, cfg configurable) error {
	fs := newFlagSet(name, e)
	cfg.bind(fs)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
