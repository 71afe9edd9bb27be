// Command permitd is the building-permit intelligence service: the API,
// the indexer and the pipelines that publish events.
//
//	permitd serve      API plus the embedded indexer fed from the bundled data
//	permitd <command>  see `permitd help`
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "permitd:", err)
		}
		os.Exit(1)
	}
}

// env is what every subcommand receives.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

// commands are the subcommands, in the order usage lists them.
var commands = []command{
	{"gen", "generate synthetic permits as NDJSON events: gen -permits N -seed S [-now DATE] [-out FILE]", runGen},
	{"import", "import bundled real data as NDJSON events: import seattle|gazetteer [-out FILE]", runImport},
	{"index", "run the indexer only: Kafka topics into the configured backend", runIndex},
	{"keys", "issue (create --plan NAME), list and revoke API keys", runKeys},
	{"opensearch", "manage the OpenSearch read model: init (templates, indices, aliases) or reindex (rebuild and swap)", runOpenSearch},
	{"publish", "publish NDJSON event envelopes to their Kafka topics: publish -brokers H:P -file FILE [-dry-run]", runPublish},
	{"serve", "serve the API with the embedded indexer (bundled data by default)", runServe},
	{"signals", "read location and permit events (NDJSON), write signal events (catalog, permit leads, geo signals)", runSignals},
}

var errUsage = errors.New("usage")

// run dispatches to a subcommand; it is main without the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	for _, cmd := range commands {
		if cmd.name == args[0] {
			return cmd.run(ctx, e, args[1:])
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: permitd <command> [flags]")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
}
