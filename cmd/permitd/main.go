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
	"sort"
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
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

// commands is filled by register calls in each subcommand's file.
var commands = map[string]command{}

func register(name, summary string, fn func(ctx context.Context, e env, args []string) error) {
	commands[name] = command{summary: summary, run: fn}
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
	cmd, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return cmd.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: permitd <command> [flags]")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
}
