package api_test

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/internal/syncbuf"
)

// TestAccessLoggerWritesTheHandlersLines serves the same requests through
// two servers, one whose access log is AccessLogger (request lines written
// by the shortcut) and one whose access log is the standard library's
// handler, in both formats, and requires the same lines but for the
// values of time, duration and trace_id, which differ between any two
// requests. Among the requests: authenticated and not, a 404 with no
// route, a path the text handler quotes (left to the handler), a HEAD,
// and traced ones.
func TestAccessLoggerWritesTheHandlersLines(t *testing.T) {
	env := seattle()
	mask := regexp.MustCompile(`(time=|"time":)("[^"]*"|\S+)|(duration=|"duration":)[^ ,}\n]+|(trace_id=|"trace_id":)("[0-9a-f]{32}"|[0-9a-f]{32})`)
	requests := []struct {
		method, path string
		header       http.Header
	}{
		{http.MethodGet, "/v1/locations/" + env.EntityID, http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-1"}}},
		{http.MethodHead, "/v1/locations/" + env.EntityID, http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-2"}}},
		{http.MethodGet, "/v1/locations/" + env.EntityID, http.Header{"X-Api-Key": {"wrong"}, "X-Request-Id": {"req-3"}}},
		{http.MethodGet, "/v1/locations/" + env.EntityID, http.Header{"X-Request-Id": {"req-4"}}},
		{http.MethodGet, "/v1/nowhere/", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-5"}}},
		{http.MethodGet, "/v1/locations/a%20b=%22c%22", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-6"}}},
		{http.MethodGet, "/v1/locations/caf%C3%A9", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-7"}}},
		{http.MethodGet, "/v1/permits/search?geo_id=" + env.EntityID, http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-8"}}},
		{http.MethodGet, "/v1/signals/catalog", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-9"}}},
	}
	for _, json := range []bool{false, true} {
		for _, traced := range []bool{false, true} {
			var lines [2]string
			for i, shortcut := range []bool{true, false} {
				out := &syncbuf.Buffer{}
				var log *slog.Logger
				switch {
				case shortcut:
					log = api.AccessLogger(out, json, nil)
				case json:
					log = slog.New(slog.NewJSONHandler(out, nil))
				default:
					log = slog.New(slog.NewTextHandler(out, nil))
				}
				params := api.Params{AccessLog: log}
				if traced {
					tp := sdktrace.NewTracerProvider()
					t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
					params.Tracing = &api.Tracing{Provider: tp}
				}
				h := apitest.New(t, apitest.Params{Server: params})
				h.Publish(env)
				for _, r := range requests {
					req, err := http.NewRequest(r.method, r.path, nil)
					if err != nil {
						t.Fatal(err)
					}
					req.Header = r.header.Clone()
					h.Handler.ServeHTTP(&reusableWriter{h: http.Header{}}, req)
				}
				lines[i] = out.String()
			}
			got, want := mask.ReplaceAllString(lines[0], "$1$3$4#"), mask.ReplaceAllString(lines[1], "$1$3$4#")
			if n := strings.Count(want, "\n"); n != len(requests) {
				t.Fatalf("json %v traced %v: the handler wrote %d lines for %d requests:\n%s", json, traced, n, len(requests), lines[1])
			}
			if traced != strings.Contains(want, "trace_id") {
				t.Fatalf("json %v traced %v: trace ids in the lines: %v:\n%s", json, traced, !traced, lines[1])
			}
			if got != want {
				t.Errorf("json %v traced %v: AccessLogger wrote\n%s\nthe handler\n%s", json, traced, got, want)
			}
		}
	}
}
