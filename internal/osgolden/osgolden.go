// Package osgolden is test support for OpenSearch request bodies: golden
// files under testdata/ with an -update flag, and a check of every golden
// against the official OpenSearch API specification with osvalidate
// (../shared/tools/osvalidate) in -strict mode when the shared tree is
// there.
//
// Golden files are named by kind, and the kind picks the schema:
//
//	*.search.json    _search body          (osvalidate -kind search)
//	*.template.json  _index_template body  (-kind template)
//	*.index.json     PUT <index> body      (-kind index)
//	*.aggs.json      an aggregations object (-kind aggs)
//	*.bulk.ndjson    _bulk NDJSON           (-kind bulk)
//
// A body the spec rejects although OpenSearch accepts it is listed in a
// quirks map with the reason; the check then asserts it still fails, so a
// spec fix shows up.
package osgolden

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ from the code")

// Compare checks got against testdata/<name>, rewriting it with -update.
func Compare(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if !bytes.HasSuffix(got, []byte("\n")) {
		got = append(got, '\n')
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("golden %s differs from the code (run go test -update and review the diff):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// KindOf maps a golden file name to its osvalidate kind; "" when the name
// has no known suffix.
func KindOf(name string) string {
	for _, s := range []struct{ suffix, kind string }{
		{".search.json", "search"}, {".template.json", "template"}, {".index.json", "index"},
		{".aggs.json", "aggs"}, {".bulk.ndjson", "bulk"},
	} {
		if strings.HasSuffix(name, s.suffix) {
			return s.kind
		}
	}
	return ""
}

// SharedDir finds the shared tree (../shared from the repository root) by
// walking up from the working directory; "" when absent.
func SharedDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(dir, "..", "shared")
			if _, err := os.Stat(filepath.Join(shared, "tools", "osvalidate", "main.go")); err == nil {
				return shared
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// validator builds osvalidate once per test binary into a temp dir.
func validator(t *testing.T, shared string) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "osvalidate")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "osvalidate")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = filepath.Join(shared, "tools", "osvalidate")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building osvalidate: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// ValidateAll runs osvalidate -strict over every golden file in testdata/.
// quirks maps a file name to the spec quirk that makes a correct body
// fail; such a file must still fail (else the quirk is gone: drop it).
// Without ../shared the test is skipped loudly.
func ValidateAll(t *testing.T, quirks map[string]string) {
	t.Helper()
	shared := SharedDir()
	if shared == "" {
		t.Skip("OpenSearch spec check skipped: ../shared/tools/osvalidate not found next to the repository; golden bodies are unchecked against the spec")
	}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]string{}
	for _, e := range entries {
		if k := KindOf(e.Name()); k != "" {
			byKind[k] = append(byKind[k], e.Name())
		}
	}
	if len(byKind) == 0 {
		t.Fatal("no golden files in testdata/")
	}
	bin := validator(t, shared)
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		for _, name := range byKind[kind] {
			t.Run(name, func(t *testing.T) {
				cmd := exec.Command(bin, "-spec", filepath.Join(shared, "opensearch-spec"), "-kind", kind, "-strict", filepath.Join("testdata", name))
				out, err := cmd.CombinedOutput()
				reason, quirk := quirks[name]
				switch {
				case quirk && err == nil:
					t.Errorf("%s is listed as a spec quirk (%s) but now passes osvalidate -strict: drop the quirk", name, reason)
				case quirk:
					t.Logf("known spec quirk, %s: %s", reason, strings.TrimSpace(string(out)))
				case err != nil:
					t.Errorf("osvalidate -strict -kind %s %s:\n%s", kind, name, out)
				}
			})
		}
	}
}
