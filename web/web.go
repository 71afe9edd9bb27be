// Package web serves the two pages a person looks at: /docs, the
// interactive API reference (Swagger UI over /v1/openapi.json), and
// /explore, the permit explorer. Their assets are built by `make web`
// (web/build.mjs, pinned npm packages) into web/dist, committed, and
// embedded here, so the binary serves them offline with no CDN.
//
// The pages are served without a key; every data call they make goes
// through the public /v1 API with the key the person types, so quotas and
// errors apply as for any client.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed dist
var dist embed.FS

// Routes are the Gin route patterns Serve answers (GET and HEAD).
// A page answers with or without a trailing slash (its assets' paths are
// absolute), since the API does not redirect.
var Routes = []string{"/docs", "/docs/", "/docs/assets/*file", "/explore", "/explore/", "/explore/assets/*file"}

// CSP is the Content-Security-Policy of the pages and their assets:
// scripts, styles and data calls from this origin only, nothing inline, no
// framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// assets maps a URL path to its embedded file.
var assets = func() map[string]asset {
	m := map[string]asset{}
	add := func(urlPath, file string) {
		b, err := fs.ReadFile(dist, "dist/"+file)
		if err != nil {
			panic("web: " + err.Error())
		}
		ct := mime.TypeByExtension(path.Ext(file))
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		m[urlPath] = asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	}
	add("/docs", "docs.html")
	add("/explore", "explore.html")
	for _, page := range []string{"docs", "explore"} {
		entries, err := fs.ReadDir(dist, "dist/"+page)
		if err != nil {
			panic("web: " + err.Error())
		}
		for _, e := range entries {
			add("/"+page+"/assets/"+e.Name(), page+"/"+e.Name())
		}
	}
	return m
}()

// Serve answers a GET or HEAD for one of Routes and reports whether the
// path names a page or asset; when it does not, nothing is written (the
// caller answers 404 in its own error format).
//
// Every answer carries the CSP, nosniff and no-referrer; bodies are
// revalidated (Cache-Control no-cache) against a strong ETag of the
// content, so a new binary's assets are never served stale.
func Serve(w http.ResponseWriter, r *http.Request) bool {
	a, ok := assets[strings.TrimSuffix(r.URL.Path, "/")]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	return true
}
