package main

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// The command table is listed by usage in its order, which is by name,
// once each; run dispatches by name and names an unknown command.
func TestCommands(t *testing.T) {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("commands %v: want sorted, each once", names)
	}

	var out bytes.Buffer
	if err := run(t.Context(), []string{"help"}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(line) > 2 && line[:2] == "  " && len(f) > 0 {
			listed = append(listed, f[0])
		}
	}
	if !slices.Equal(listed, names) {
		t.Fatalf("help lists %v, want %v", listed, names)
	}

	if err := run(t.Context(), nil, noEnv, io.Discard, io.Discard); !errors.Is(err, errUsage) {
		t.Fatalf("no command: err = %v, want errUsage", err)
	}
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"serv"}, noEnv, io.Discard, &stderr)
	if err == nil || err.Error() != `unknown command "serv"` || !strings.Contains(stderr.String(), "usage: permitd") {
		t.Fatalf("unknown command: err = %v, stderr %q", err, stderr.String())
	}
	if err := run(t.Context(), []string{"gen", "-permits", "0"}, noEnv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "permits must be 1 to 1000000000") {
		t.Fatalf("gen dispatched with its flags: err = %v", err)
	}
}
