package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/web"
)

// TestWebPagesNeedNoKey: /docs and /explore and their assets are served
// without a key, with the CSP; an unknown asset is the spec's 404.
func TestWebPagesNeedNoKey(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/docs", http.StatusOK},
		{http.MethodHead, "/docs", http.StatusOK},
		{http.MethodGet, "/explore", http.StatusOK},
		{http.MethodGet, "/docs/assets/swagger-ui-bundle.js", http.StatusOK},
		{http.MethodGet, "/explore/assets/explore.js", http.StatusOK},
		{http.MethodGet, "/explore/assets/missing.js", http.StatusNotFound},
		{http.MethodGet, "/docs/assets/..%2Fdocs.html", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		h.Handler.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.status)
			continue
		}
		if c.status == http.StatusNotFound {
			var e stdError
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != "NOT_FOUND" {
				t.Errorf("%s: body %s", c.path, rec.Body)
			}
			continue
		}
		if got := rec.Header().Get("Content-Security-Policy"); got != web.CSP {
			t.Errorf("%s: CSP %q", c.path, got)
		}
		if c.method == http.MethodHead && rec.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d bytes of body", c.path, rec.Body.Len())
		}
	}
}

// TestExplorePageWeight: /explore with everything it loads, gzipped as the
// server sends it, stays under 500 KB (the page's budget).
func TestExplorePageWeight(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	get := func(path string) (compressed, raw int, body string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
		plain := httptest.NewRecorder()
		h.Handler.ServeHTTP(plain, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Body.Len(), plain.Body.Len(), plain.Body.String()
	}
	total, totalRaw, html := get("/explore")
	assets := regexp.MustCompile(`(?:src|href)="(/explore/assets/[^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(assets) < 4 {
		t.Fatalf("/explore loads %d assets: %v", len(assets), assets)
	}
	var names []string
	for _, a := range assets {
		c, r, _ := get(a[1])
		total += c
		totalRaw += r
		names = append(names, a[1])
	}
	t.Logf("/explore page weight: %d bytes gzipped (%d uncompressed), the page and %s", total, totalRaw, strings.Join(names, ", "))
	if total >= 500*1024 {
		t.Errorf("/explore weighs %d bytes gzipped, budget 500 KB", total)
	}
}
