package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/stretchr/testify/require"
)

// TestPagingWhileEventsApply: a client walks a state's permits and its
// leads page by page (permits search, permit leads), and between two
// pages events are published and applied by the serve process: every
// permit again at a new version (walked and not yet walked alike, each
// in its place), new permits, every lead again at a new version, and
// deletes of permits and leads. Each walk returns no item twice and
// every item that was there for the whole walk once (the spec's
// decisions.md, "Cursors"); the permits come in issue date order. The
// broker, publish and serve are separate processes, so the cursors are
// signed by one process and the writes reach it through Kafka.
func TestPagingWhileEventsApply(t *testing.T) {
	permitd, brokers := binaries(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, permitd, args...).CombinedOutput()
		require.NoError(t, err, "permitd %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	const key = "e2e-test-key-0123456789"
	state := events.GeoID("state", "WA")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	// 240 permits in one state on 12 issue dates (ties for the cursor to
	// break), their locations, and the leads `permitd signals` derives.
	descriptions := []string{"Construct new single-family residence", "Demolish detached garage", "Construct rear addition to existing residence", "Interior alterations to existing single-family residence", "Second-story addition to existing residence"}
	permit := func(n int, version int64, status string) []byte {
		num := fmt.Sprintf("PG-%04d", n)
		return envelopeLine(t, events.PermitUpserted, events.PermitDocID("e2e", num), version, at, events.Permit{
			PermitNumber: num, PermitType: "Building", Status: status, Source: "e2e",
			IssueDate:   time.Date(2025, time.Month(1+n%12), 1+n%3, 0, 0, 0, 0, time.UTC).Format(time.DateOnly),
			Description: descriptions[n%len(descriptions)],
			Address:     events.PermitAddress{Line: fmt.Sprintf("%d PINE ST", 100+n), City: "SEATTLE", State: "WA", Zipcode: "98101", ZipSource: "source"},
		})
	}
	locations, _, _, _ := writeEvents(t) // 26 permits in Seattle and the WA, Seattle and 98101 locations
	var first bytes.Buffer
	for n := range 240 {
		first.Write(permit(n, 1, "Issued"))
	}
	raw, err := os.ReadFile(locations)
	require.NoError(t, err)
	input := filepath.Join(dir, "input.ndjson")
	require.NoError(t, os.WriteFile(input, append(slices.Clone(raw), first.Bytes()...), 0o600))
	leads := filepath.Join(dir, "signals.ndjson")
	run("signals", "-in", input, "-out", leads, "-as-of", "2026-01-01", "-log-level", "error")
	signals, err := os.ReadFile(leads)
	require.NoError(t, err)
	var leadLines [][]byte
	leadVersion := map[string]int64{}
	for _, l := range ndjsonLines(signals) {
		var env struct {
			Type    string `json:"type"`
			ID      string `json:"entity_id"`
			Version int64  `json:"entity_version"`
		}
		require.NoError(t, json.Unmarshal(l, &env))
		if env.Type == string(events.LeadUpserted) {
			leadLines = append(leadLines, l)
			leadVersion[env.ID] = env.Version
		}
	}
	require.Greater(t, len(leadLines), 100, "leads from %d permits", 240)

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := startProcess(t, permitd, "serve", "--data", "none", "--kafka-brokers", brokers, "--addr", addr, "--admin-addr", "127.0.0.1:0", "--api-keys", key, "--log-level", "warn", "--now", "2026-01-01")
	base := "http://" + addr
	applied := func() int64 { // events the indexer took: applied, stale or dead-lettered
		res, err := http.Get(base + "/v1/health/ready")
		if err != nil {
			return -1
		}
		defer res.Body.Close()
		var r struct {
			Checks struct {
				Indexer struct {
					Applied int64 `json:"events_applied"`
					Stale   int64 `json:"events_stale"`
					Dead    int64 `json:"dead_letters"`
				} `json:"indexer"`
			} `json:"checks"`
		}
		if json.NewDecoder(res.Body).Decode(&r) != nil {
			return -1
		}
		return r.Checks.Indexer.Applied + r.Checks.Indexer.Stale + r.Checks.Indexer.Dead
	}
	var published int64
	publish := func(name string, lines [][]byte) {
		t.Helper()
		file := filepath.Join(dir, name+".ndjson")
		require.NoError(t, os.WriteFile(file, bytes.Join(lines, nil), 0o600))
		run("publish", "--brokers", brokers, "--file", file, "--log-level", "error")
		published += int64(len(lines))
		for applied() < published {
			require.NoError(t, ctx.Err(), "%s: %d of %d events taken\n%s", name, applied(), published, s.output())
			time.Sleep(20 * time.Millisecond)
		}
	}
	publish("locations", ndjsonLines(raw))
	publish("permits", ndjsonLines(first.Bytes()))
	publish("leads", leadLines)
	for !ready(base) {
		require.NoError(t, ctx.Err(), "serve not ready\n%s", s.output())
		time.Sleep(20 * time.Millisecond)
	}

	type walk struct {
		path, list, id, date string
		q                    url.Values
		cursor               string
		done                 bool
		got                  []pageItem
	}
	permitsWalk := func() *walk {
		return &walk{path: "/v1/permits/search", list: "permits", id: "permit_id", date: "issue_date",
			q: url.Values{"geo_id": {state}, "limit": {"20"}}}
	}
	leadsWalk := func() *walk {
		return &walk{path: "/v1/signals/permit/leads", list: "leads", id: "lead_id", date: "event_date_used",
			q: url.Values{"geo_id": {state}, "limit": {"20"}, "include_stale": {"true"}}}
	}
	step := func(w *walk) { // the walk's next page
		t.Helper()
		q := maps.Clone(w.q)
		if w.cursor != "" {
			q.Set("cursor", w.cursor)
		}
		req, err := http.NewRequest(http.MethodGet, base+w.path+"?"+q.Encode(), nil)
		require.NoError(t, err)
		req.Header.Set("X-API-Key", key)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s?%s: %s", w.path, q.Encode(), body)
		var r map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &r))
		var rows []map[string]any
		require.NoError(t, json.Unmarshal(r[w.list], &rows))
		var next *string
		require.NoError(t, json.Unmarshal(r["next_cursor"], &next))
		for _, row := range rows {
			d, _ := row[w.date].(string)
			w.got = append(w.got, pageItem{row[w.id].(string), d})
		}
		w.done = next == nil
		if !w.done {
			w.cursor = *next
		}
	}
	walkAll := func(w *walk) []pageItem {
		for !w.done {
			step(w)
		}
		return w.got
	}
	before := map[string][]string{
		"permits": ids(walkAll(permitsWalk())),
		"leads":   ids(walkAll(leadsWalk())),
	}
	require.Equal(t, 240+26, len(before["permits"]), "permits of the state")
	require.Equal(t, len(leadLines), len(before["leads"]), "leads of the state")

	// The changes, one set between two pages of both walks.
	var changes []func() (gone []string)
	changes = append(changes, func() []string { // every permit again, each in its place
		var l [][]byte
		for n := range 240 {
			l = append(l, permit(n, 2, "Finaled"))
		}
		publish("permit-versions", l)
		return nil
	}, func() []string { // new permits, before and after the walks' positions
		var l [][]byte
		for n := 240; n < 300; n++ {
			l = append(l, permit(n, 1, "Issued"))
		}
		publish("new-permits", l)
		return nil
	}, func() []string { // every lead again
		l := make([][]byte, len(leadLines))
		for i, line := range leadLines {
			var env events.Envelope
			require.NoError(t, json.Unmarshal(line, &env))
			l[i] = envelopeLine(t, env.Type, env.EntityID, env.EntityVersion+1, at, env.Data)
		}
		publish("lead-versions", l)
		return nil
	}, func() []string { // deletes: every seventh permit and lead walked before
		var l [][]byte
		var gone []string
		for i, id := range before["permits"] {
			if i%7 == 3 {
				l = append(l, envelopeLine(t, events.PermitDeleted, id, 3, at, nil))
				gone = append(gone, id)
			}
		}
		for i, id := range before["leads"] {
			if i%7 == 3 {
				l = append(l, envelopeLine(t, events.LeadDeleted, id, leadVersion[id]+2, at, nil))
				gone = append(gone, id)
			}
		}
		publish("deletes", l)
		return gone
	})
	walks := map[string]*walk{
		"permits": permitsWalk(),
		"leads":   leadsWalk(),
	}
	gone := map[string]bool{}
	for i := 0; !walks["permits"].done || !walks["leads"].done; i++ {
		for _, w := range walks {
			if !w.done {
				step(w)
			}
		}
		if i < len(changes) {
			for _, id := range changes[i]() {
				gone[id] = true
			}
		}
	}
	for name, w := range walks {
		seen := map[string]int{}
		for _, it := range w.got {
			seen[it.id]++
			require.Equal(t, 1, seen[it.id], "%s: %s returned twice", name, it.id)
		}
		for _, id := range before[name] {
			if !gone[id] {
				require.Equal(t, 1, seen[id], "%s: %s, there for the whole walk, was not returned", name, id)
			}
		}
		require.Greater(t, len(w.got)/20, len(changes), "%s: the walk ended before the changes did", name)
	}
	p := walks["permits"].got
	for i := 1; i < len(p); i++ {
		require.LessOrEqual(t, p[i].date, p[i-1].date, "permits %s after %s", p[i].id, p[i-1].id)
	}
	var n int
	for _, it := range p {
		if strings.HasPrefix(it.id, "e2e:PG-") && it.id >= "e2e:PG-0240" {
			n++
		}
	}
	t.Logf("permits walk: %d items (%d of the new permits, which may fall before or after its position); leads walk: %d", len(p), n, len(walks["leads"].got))
}

// pageItem is an item a walk returned: its id and its sort date.
type pageItem struct{ id, date string }

func ids(items []pageItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.id
	}
	return out
}
