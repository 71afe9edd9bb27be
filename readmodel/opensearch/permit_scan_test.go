package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// scanCluster serves an export scan over n permits of one issue date
// (so the order is doc_id), checking that every page is a search of the
// point in time: no index in the path or the _msearch header, the pit id
// the last answer gave, its keep-alive, and search_after the last key.
// Each answer hands out a new pit id (the engine may). fail(page) may
// answer a page with an error instead (status, body).
type scanCluster struct {
	t    *testing.T
	mu   sync.Mutex
	ids  []string
	fail func(page int) (int, string)

	pits            int
	current         string
	opened, deleted []string
	pages           int
	afters          []string
}

func newScanCluster(t *testing.T, n int) *scanCluster {
	c := &scanCluster{t: t}
	for i := range n {
		c.ids = append(c.ids, fmt.Sprintf("src:%04d", i))
	}
	return c
}

func (c *scanCluster) store() *Store {
	s := storeOn(c.t, http.HandlerFunc(c.serve))
	return s
}

func (c *scanCluster) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/permitd-permits/_search/point_in_time":
		// assert, not require, in a handler: it runs on the server's
		// goroutine; a failed check answers 400, so the call fails too.
		if !assert.Equal(c.t, pitKeepAlive, r.URL.Query().Get("keep_alive")) {
			badRequest(w)
			return
		}
		c.pits++
		c.current = fmt.Sprintf("pit-%d", c.pits)
		c.opened = append(c.opened, c.current)
		_, _ = fmt.Fprintf(w, `{"pit_id":%q}`, c.current)
	case r.Method == http.MethodDelete && r.URL.Path == "/_search/point_in_time":
		var d struct {
			PitID []string `json:"pit_id"`
		}
		if !assert.NoError(c.t, json.Unmarshal(body, &d)) {
			badRequest(w)
			return
		}
		c.deleted = append(c.deleted, d.PitID...)
		_, _ = io.WriteString(w, `{"pits":[]}`)
	case r.Method == http.MethodPost && r.URL.Path == "/_msearch":
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if !assert.Len(c.t, lines, 4) || !assert.Contains(c.t, lines[0], "permitd-locations") ||
			!assert.NotContains(c.t, lines[2], `"index"`, "a point in time names its own index") {
			badRequest(w)
			return
		}
		exists := `{` + okShards + `,"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_id":"g1","_source":{"doc_id":"g1"}}]},"status":200}`
		if strings.Contains(lines[1], "gnosuch") {
			exists = `{` + okShards + `,"hits":{"total":{"value":0,"relation":"eq"},"hits":[]},"status":200}`
		}
		status, page := c.page(lines[3])
		if status != http.StatusOK {
			page = fmt.Sprintf(`{"error":%s,"status":%d}`, page, status)
		}
		_, _ = io.WriteString(w, `{"took":1,"responses":[`+exists+`,`+page+`]}`)
	case r.Method == http.MethodPost && r.URL.Path == "/_search":
		if !assert.Equal(c.t, "false", r.URL.Query().Get("allow_partial_search_results")) {
			badRequest(w)
			return
		}
		status, page := c.page(string(body))
		if status != http.StatusOK {
			w.WriteHeader(status)
			page = fmt.Sprintf(`{"error":%s,"status":%d}`, page, status)
		}
		_, _ = io.WriteString(w, page)
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"type":"unexpected","reason":%q},"status":400}`, r.Method+" "+r.URL.Path)
	}
}

// badRequest answers a request a fake's check refused.
func badRequest(w http.ResponseWriter) {
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, `{"error":{"type":"fake_check_failed","reason":"see the test's log"},"status":400}`)
}

// page answers one scan page body.
func (c *scanCluster) page(raw string) (int, string) {
	c.pages++
	var b struct {
		Size        int   `json:"size"`
		SearchAfter []any `json:"search_after"`
		Pit         struct {
			ID        string `json:"id"`
			KeepAlive string `json:"keep_alive"`
		} `json:"pit"`
		Timeout string `json:"timeout"`
	}
	require.NoError(c.t, json.Unmarshal([]byte(raw), &b))
	require.Equal(c.t, searchTimeout, b.Timeout)
	require.Equal(c.t, pitKeepAlive, b.Pit.KeepAlive)
	if c.fail != nil {
		if status, body := c.fail(c.pages); status != 0 {
			return status, body
		}
	}
	if b.Pit.ID != c.current {
		return http.StatusNotFound, `{"type":"search_context_missing_exception","reason":"No search context found for id [` + b.Pit.ID + `]"}`
	}
	start := 0
	if len(b.SearchAfter) == 2 {
		after := b.SearchAfter[1].(string)
		c.afters = append(c.afters, after)
		for start < len(c.ids) && c.ids[start] <= after {
			start++
		}
	} else {
		c.afters = append(c.afters, "")
	}
	var hits []string
	_, down := issueKeys("2024-03-01")
	for _, id := range c.ids[start:min(start+b.Size, len(c.ids))] {
		hits = append(hits, fmt.Sprintf(`{"_id":%q,"_source":{"doc_id":%q,"version":1,"issue_date":"2024-03-01","issue_up":0,"issue_down":%d,"valuation_sort":-1},"sort":[%d,%q]}`,
			id, id, down, down, id))
	}
	// The engine may hand out a new id with any answer.
	c.pits++
	c.current = fmt.Sprintf("pit-%d", c.pits)
	return http.StatusOK, fmt.Sprintf(`{"pit_id":%q,%s,"hits":{"hits":[%s]}}`, c.current, okShards, strings.Join(hits, ","))
}

func scanAll(t *testing.T, s *Store, ctx context.Context, q readmodel.PermitQuery) ([]string, readmodel.PermitScan, error) {
	t.Helper()
	sc, err := s.OpenPermitScan(ctx, q, 0)
	require.NoError(t, err)
	var got []string
	for pages := 0; pages < 100; pages++ {
		p, err := sc.Next(ctx)
		if err != nil {
			return got, sc, err
		}
		for _, h := range p.Permits {
			got = append(got, h.Permit.PermitID)
		}
		if p.Next == nil {
			return got, sc, nil
		}
	}
	t.Fatal("scan does not end")
	return nil, nil, nil
}

func TestPermitScanPages(t *testing.T) {
	c := newScanCluster(t, 250)
	s := c.store()
	got, sc, err := scanAll(t, s, context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, c.ids, got)
	require.Equal(t, []string{"", "src:0099", "src:0199"}, c.afters, "search_after is the last key of each page")
	_, err = sc.Next(context.Background())
	require.ErrorIs(t, err, errScanEnded, "no page after the last")
	require.NoError(t, sc.Close())
	require.NoError(t, sc.Close(), "Close is idempotent")
	require.Equal(t, []string{"pit-1"}, c.opened)
	require.Equal(t, []string{c.current}, c.deleted, "the id the last answer gave is deleted, once")
}

func TestPermitScanClosesOnError(t *testing.T) {
	c := newScanCluster(t, 250)
	c.fail = func(page int) (int, string) {
		if page == 2 {
			return http.StatusBadRequest, `{"type":"query_shard_exception","reason":"broken"}`
		}
		return 0, ""
	}
	s := c.store()
	got, sc, err := scanAll(t, s, context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 100})
	require.ErrorContains(t, err, "query_shard_exception")
	require.Len(t, got, 100)
	require.NoError(t, sc.Close())
	require.Equal(t, []string{c.current}, c.deleted)
}

func TestPermitScanClosesOnCancel(t *testing.T) {
	c := newScanCluster(t, 250)
	s := c.store()
	ctx, cancel := context.WithCancel(context.Background())
	sc, err := s.OpenPermitScan(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 100}, 0)
	require.NoError(t, err)
	_, err = sc.Next(ctx)
	require.NoError(t, err)
	cancel() // the client went away
	_, err = sc.Next(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, sc.Close(), "Close does not use the cancelled context")
	require.Equal(t, []string{c.current}, c.deleted)
	require.Equal(t, 1, c.pages, "no page read after the cancel")
}

func TestPermitScanUnknownGeo(t *testing.T) {
	c := newScanCluster(t, 10)
	s := c.store()
	sc, err := s.OpenPermitScan(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("gnosuch"), Desc: true, Limit: 100}, 0)
	require.NoError(t, err)
	_, err = sc.Next(context.Background())
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	require.NoError(t, sc.Close())
	require.Equal(t, c.opened, c.deleted)
}

// TestPermitScanReopensAnExpiredPIT: a point in time gone between pages
// (a slow client) is replaced and the scan goes on after the same key,
// neither repeating nor skipping; the old one is deleted too.
func TestPermitScanReopensAnExpiredPIT(t *testing.T) {
	c := newScanCluster(t, 250)
	c.fail = func(page int) (int, string) {
		if page == 2 {
			c.current = "expired" // the engine forgot the pit
		}
		return 0, ""
	}
	s := c.store()
	got, sc, err := scanAll(t, s, context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, c.ids, got)
	require.NoError(t, sc.Close())
	require.Len(t, c.opened, 2)
	require.Equal(t, []string{"", "src:0099", "src:0199"}, c.afters)
	require.Contains(t, c.deleted, c.current)
	require.Len(t, c.deleted, 2)
}

// TestPermitScanOpenFails: a cluster that cannot open the point in time
// fails the open (the export answers before any byte), holding nothing.
func TestPermitScanOpenFails(t *testing.T) {
	s := storeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error":{"type":"security_exception","reason":"no permission for point_in_time"},"status":403}`)
	}))
	_, err := s.OpenPermitScan(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 100}, 0)
	require.ErrorContains(t, err, "security_exception")
}
