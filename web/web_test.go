package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
)

type manifest struct {
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestBuiltAssetsAreCurrent holds web/dist to its sources without npm:
// build.mjs recorded the hash of every input (sources, build script,
// package files) and output; a source changed without `make web`, a new
// source, or a built file edited by hand fails here.
func TestBuiltAssetsAreCurrent(t *testing.T) {
	raw, err := fs.ReadFile(dist, "dist/BUILD.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	const stale = "; run `make web` and commit web/dist"
	var inputs []string
	srcs, err := os.ReadDir("src")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range srcs {
		inputs = append(inputs, "src/"+e.Name())
	}
	inputs = append(inputs, "build.mjs", "package.json", "package-lock.json")
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sha(b), m.Inputs[in]; got != want {
			t.Errorf("web/%s changed since web/dist was built (sha256 %s, built from %s)%s", in, got, want, stale)
		}
	}
	for in := range m.Inputs {
		if !slices.Contains(inputs, in) {
			t.Errorf("web/dist was built from web/%s, which is gone%s", in, stale)
		}
	}
	var outputs []string
	err = fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "dist/BUILD.json" {
			return err
		}
		name := strings.TrimPrefix(p, "dist/")
		outputs = append(outputs, name)
		b, err := fs.ReadFile(dist, p)
		if err != nil {
			return err
		}
		if got, want := sha(b), m.Outputs[name]; got != want {
			t.Errorf("web/dist/%s differs from what the build wrote (sha256 %s, want %s)%s", name, got, want, stale)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(outputs) != len(m.Outputs) {
		t.Errorf("web/dist holds %v; the build wrote %d files%s", outputs, len(m.Outputs), stale)
	}
}

func TestServe(t *testing.T) {
	cases := []struct {
		path  string
		found bool
		ctype string
		has   string
	}{
		{"/docs", true, "text/html; charset=utf-8", `src="/docs/assets/swagger-ui-bundle.js"`},
		{"/docs/assets/docs.js", true, "text/javascript; charset=utf-8", `url: "/v1/openapi.json"`},
		{"/docs/assets/swagger-ui.css", true, "text/css; charset=utf-8", ".swagger-ui"},
		{"/explore", true, "text/html; charset=utf-8", `src="/explore/assets/explore.js"`},
		{"/explore/", true, "text/html; charset=utf-8", "permitd explorer"},
		{"/explore/assets/uPlot.iife.min.js", true, "text/javascript; charset=utf-8", "uPlot"},
		{"/explore/assets/nope.js", false, "", ""},
		{"/explore/assets/../docs.html", false, "", ""},
		{"/docs/assets/", false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			found := Serve(w, httptest.NewRequest(http.MethodGet, c.path, nil))
			if found != c.found {
				t.Fatalf("found %v, want %v", found, c.found)
			}
			if !found {
				if w.Body.Len() != 0 || len(w.Header()) != 0 {
					t.Fatalf("wrote %d bytes and headers %v for a path it does not serve", w.Body.Len(), w.Header())
				}
				return
			}
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != c.ctype || !strings.Contains(w.Body.String(), c.has) {
				t.Fatalf("%d %q, body has %q: %v", w.Code, w.Header().Get("Content-Type"), c.has, strings.Contains(w.Body.String(), c.has))
			}
			for k, v := range map[string]string{"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"} {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			// Revalidation: the ETag answers 304 with no body.
			r := httptest.NewRequest(http.MethodGet, c.path, nil)
			r.Header.Set("If-None-Match", w.Header().Get("ETag"))
			w2 := httptest.NewRecorder()
			Serve(w2, r)
			if w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
				t.Errorf("If-None-Match of the ETag: %d with %d bytes", w2.Code, w2.Body.Len())
			}
		})
	}
}

// TestPagesLoadNothingFromElsewhere: no CDN, no inline script or style
// (the CSP would block them).
func TestPagesLoadNothingFromElsewhere(t *testing.T) {
	for _, page := range []string{"docs.html", "explore.html"} {
		b, err := fs.ReadFile(dist, "dist/"+page)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"http://", "https://", "<script>", "<style", " style=", "onclick", "onload"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", page, bad)
			}
		}
	}
}
