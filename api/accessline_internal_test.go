package api

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// handlerLine is what the standard library's handler writes for r at t,
// the record built as withAccessLog builds it without the shortcut.
func handlerLine(t *testing.T, json bool, at time.Time, r *requestLine) string {
	t.Helper()
	var out bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&out, nil)
	if json {
		h = slog.NewJSONHandler(&out, nil)
	}
	tail := []slog.Attr{slog.Int("status", r.status), slog.Int("bytes", r.bytes), slog.Duration("duration", r.duration)}
	if r.hasKey {
		tail = append(tail, slog.String("key_id", r.keyID))
	}
	if r.traceID != "" {
		tail = append(tail, slog.String("trace_id", r.traceID))
	}
	rec := slog.NewRecord(at, slog.LevelInfo, "request", 0)
	rec.AddAttrs(slog.String("request_id", r.requestID), slog.String("method", r.method),
		slog.String("route", r.route), slog.String("path", r.path), slog.Attr{Value: slog.GroupValue(tail...)})
	if err := h.Handle(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// shortcutLine is what AccessLogger's shortcut writes for r at t, and
// whether it wrote it.
func shortcutLine(json bool, at time.Time, r *requestLine) (string, bool) {
	var out bytes.Buffer
	h := AccessLogger(&out, json, nil).Handler().(*lineHandler)
	var buf [320]byte
	ok := h.writeRequest(buf[:0], at, r)
	return out.String(), ok
}

// checkLine fails t when the shortcut writes a line for r that differs
// from the handler's, or declines one it must write (plain strings,
// a year the JSON handler takes).
func checkLine(t *testing.T, at time.Time, r *requestLine) {
	t.Helper()
	for _, json := range []bool{false, true} {
		got, ok := shortcutLine(json, at, r)
		if !ok {
			if got != "" {
				t.Fatalf("json %v: declined but wrote %q", json, got)
			}
			allPlain := plain(r.requestID) && plain(r.method) && plain(r.route) && plain(r.path) && plain(r.keyID) && plain(r.traceID)
			if y := at.Year(); allPlain && (!json || y >= 0 && y < 10000) {
				t.Fatalf("json %v: declined a plain line %+v at %v", json, *r, at)
			}
			continue
		}
		if want := handlerLine(t, json, at, r); got != want {
			t.Fatalf("json %v:\n got %q\nwant %q", json, got, want)
		}
	}
}

func TestAccessLineMatchesHandler(t *testing.T) {
	base := requestLine{
		requestID: "32998be20000000000000001", method: "GET",
		route: "/v1/locations/:id", path: "/v1/locations/gabc",
		status: 200, bytes: 677, duration: 1234567 * time.Nanosecond,
		hasKey: true, keyID: "dev-1a2b3c4d",
	}
	at := time.Date(2026, 12, 6, 14, 29, 34, 548_000_000, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("", -7*3600), time.FixedZone("X", 5*3600+1800)}
	for _, c := range []struct {
		name string
		edit func(*requestLine)
		at   time.Time
	}{
		{"ok", func(*requestLine) {}, at},
		{"no route (404)", func(r *requestLine) { r.route = "" }, at},
		{"nothing written", func(r *requestLine) { r.bytes = -1; r.status = 0 }, at},
		{"not authenticated", func(r *requestLine) { r.hasKey = false; r.keyID = "" }, at},
		{"authenticated, empty key id", func(r *requestLine) { r.keyID = "" }, at},
		{"traced", func(r *requestLine) { r.traceID = "4bf92f3577b34da6a3ce929d0e0e4736" }, at},
		{"whole second", func(*requestLine) {}, at.Truncate(time.Second)},
		{"nanoseconds", func(*requestLine) {}, at.Add(999_999)},
		{"last nanosecond of a second", func(*requestLine) {}, at.Add(451_999_999)},
		{"monotonic clock", func(*requestLine) {}, time.Now()},
		{"zone west", func(*requestLine) {}, at.In(zones[1])},
		{"zone with half hour", func(*requestLine) {}, at.In(zones[2])},
		{"zero duration", func(r *requestLine) { r.duration = 0 }, at},
		{"long duration", func(r *requestLine) { r.duration = 90*time.Minute + 17 }, at},
		{"negative duration", func(r *requestLine) { r.duration = -3 * time.Microsecond }, at},
		{"year 10000", func(*requestLine) {}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year before 0", func(*requestLine) {}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"a path with a space", func(r *requestLine) { r.path = "/v1/locations/a b" }, at},
		{"a path with =", func(r *requestLine) { r.path = "/v1/x=y" }, at},
		{"a path with a quote", func(r *requestLine) { r.path = `/v1/"` }, at},
		{"a path with a backslash", func(r *requestLine) { r.path = `/v1/\` }, at},
		{"a path with UTF-8", func(r *requestLine) { r.path = "/v1/locations/café" }, at},
		{"a path with a tab", func(r *requestLine) { r.path = "/v1/\t" }, at},
		{"a request id with a newline", func(r *requestLine) { r.requestID = "a\nb" }, at},
		{"HEAD", func(r *requestLine) { r.method = "HEAD" }, at},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.edit(&r)
			checkLine(t, c.at, &r)
		})
	}
}

// TestAccessLineEveryByte puts each byte value in each string field:
// the shortcut writes what the handler writes, or leaves it to the
// handler.
func TestAccessLineEveryByte(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	for b := range 256 {
		s := fmt.Sprintf("/v1/a%cb", byte(b))
		for f := range 6 {
			r := requestLine{requestID: "id", method: "GET", route: "/v1/*", path: "/v1/p", status: 404, bytes: 10, hasKey: true, keyID: "k", traceID: "t"}
			*[]*string{&r.requestID, &r.method, &r.route, &r.path, &r.keyID, &r.traceID}[f] = s
			checkLine(t, at, &r)
		}
	}
}

// TestAccessLineRandom: random fields, times and durations.
func TestAccessLineRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcXYZ019/-_.:~%+*;,!@$&'()[] =\"\\\t\x00é"
	str := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(8) == 0 {
				b.WriteString(string(alphabet[rng.IntN(len(alphabet))]))
			} else {
				b.WriteByte(alphabet[rng.IntN(14)])
			}
		}
		return b.String()
	}
	for range 20_000 {
		r := requestLine{
			requestID: str(), method: str(), route: str(), path: str(),
			status: rng.IntN(600) - 1, bytes: rng.IntN(1 << 20), duration: time.Duration(rng.Int64N(1 << 40)),
			hasKey: rng.IntN(2) == 0, keyID: str(),
		}
		if rng.IntN(2) == 0 {
			r.traceID = str()
		}
		at := time.Unix(rng.Int64N(1<<35)-1<<34, rng.Int64N(1e9)).In(time.FixedZone("", (rng.IntN(48)-24)*1800))
		checkLine(t, at, &r)
	}
}

func FuzzAccessLine(f *testing.F) {
	f.Add("32998be20000000000000001", "GET", "/v1/locations/:id", "/v1/locations/gabc", 200, 677, int64(1234567), true, "dev-1", "", int64(1796566174548000000), 0)
	f.Add("", "", "", "", -1, -1, int64(0), false, "", "", int64(0), 3600)
	f.Fuzz(func(t *testing.T, id, method, route, path string, status, size int, d int64, hasKey bool, keyID, traceID string, unixNano int64, zone int) {
		r := requestLine{requestID: id, method: method, route: route, path: path, status: status, bytes: size,
			duration: time.Duration(d), hasKey: hasKey, keyID: keyID, traceID: traceID}
		checkLine(t, time.Unix(0, unixNano).In(time.FixedZone("", zone%(24*3600))), &r)
	})
}
