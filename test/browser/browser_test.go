// Package browser drives the web pages (/docs, /explore) in headless
// Chromium against `permitd serve` with the bundled data.
//
// Chromium is Debian's `chromium` package (.ci/run installs it). Without
// it the test skips saying why, unless REQUIRE_BROWSER is set (CI sets
// it), in which case it fails. Screenshots go to BROWSER_SCREENSHOTS when
// set (a directory), else to the test's temporary directory.
// BROWSER_BASE_URL and BROWSER_API_KEY, when both are set, point the test
// at a server already running (with the bundled data) instead of starting
// one.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/permitd/permitd/internal/child"
	"github.com/permitd/permitd/internal/servelines"
)

// chromium finds the browser: CHROMIUM_PATH, else the names Debian and
// others install.
func chromium() (string, error) {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("CHROMIUM_PATH: %w", err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium, chromium-browser or google-chrome on PATH (Debian: apt-get install chromium)")
}

// serve builds permitd, runs `permitd serve` with the bundled data on a
// free port and waits until it is ready; it stops at test end.
func serve(t *testing.T) (base, key string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "permitd")
	build := exec.Command("go", "build", "-o", bin, "github.com/permitd/permitd/cmd/permitd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building permitd: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", "bundled",
		"-drain-delay", "0s", "-log-level", "warn", "-keys-file", filepath.Join(dir, "keys.json"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if killed, _ := child.Stop(cmd, 20*time.Second); killed {
			t.Error("permitd did not stop within 20s of SIGTERM")
		}
	})
	lines := servelines.Read(out, servelines.BaseKey)
	base, key = lines.Base, lines.DevKey
	if base == "" || key == "" {
		t.Fatalf("permitd printed no address or key (base %q, key %q)", base, key)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		res, err := http.Get(base + "/v1/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base, key
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("permitd not ready within 3 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// operations lists "METHOD path" of every operation in the served OpenAPI
// document.
func operations(t *testing.T, base string) []string {
	t.Helper()
	res, err := http.Get(base + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d", res.StatusCode)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for p, item := range doc.Paths {
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options":
				ops = append(ops, strings.ToUpper(m)+" "+p)
			}
		}
	}
	if len(ops) == 0 {
		t.Fatal("the served OpenAPI document has no operations: /docs would be compared with nothing")
	}
	slices.Sort(ops)
	return ops
}

// consoleErrors collects what the page reported as an error: console.error
// calls, uncaught exceptions and error-level browser log entries (CSP
// violations among them), except failed loads the test expects (allowed
// says which).
type consoleErrors struct {
	mu      sync.Mutex
	errs    []string
	allowed func(url string) bool
}

func (c *consoleErrors) collect(ctx context.Context) {
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleError && !m.IsException() {
				continue
			}
			if m.Source == "network" && c.allowed != nil && c.allowed(m.URL) {
				continue
			}
			c.mu.Lock()
			c.errs = append(c.errs, m.String()+" "+m.URL)
			c.mu.Unlock()
		}
	}()
}

func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.errs
	c.errs = nil
	return e
}

func TestPages(t *testing.T) {
	exe, err := chromium()
	if err != nil {
		if os.Getenv("REQUIRE_BROWSER") != "" {
			t.Fatalf("REQUIRE_BROWSER is set but: %v", err)
		}
		t.Skipf("skipping the browser test: %v (set REQUIRE_BROWSER=1 to make this a failure)", err)
	}
	shots := os.Getenv("BROWSER_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	base, key := os.Getenv("BROWSER_BASE_URL"), os.Getenv("BROWSER_API_KEY")
	if base == "" || key == "" {
		base, key = serve(t)
	}
	ops := operations(t, base)

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()))...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()

	// Expected failed loads: the deliberately wrong key's 403.
	errs := &consoleErrors{allowed: func(url string) bool {
		return strings.Contains(url, "/v1/locations/resolve")
	}}
	// The first run starts the browser and its tab on ctx itself, so that
	// they live as long as ctx (not as long as a step's shorter context).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	errs.collect(ctx)

	t.Run("docs", func(t *testing.T) {
		if err := do(ctx,
			chromedp.Navigate(base+"/docs"),
			chromedp.WaitVisible(".opblock"),
			chromedp.WaitVisible(".btn.authorize"),
		); err != nil {
			t.Fatalf("docs: %v", err)
		}
		listed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".opblock")).map(b =>
			b.querySelector(".opblock-summary-method").textContent.trim() + " " +
			b.querySelector(".opblock-summary-path").getAttribute("data-path"))`))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(listed)
		if !slices.Equal(listed, ops) {
			t.Errorf("/docs lists %d operations %v; the OpenAPI document has %d: %v", len(listed), listed, len(ops), ops)
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		save(t, shots, "docs.png", shot)

		// The try-it console sends the key typed in Authorize.
		op := "#operations-locations-resolveLocation"
		if err := do(ctx,
			chromedp.Click(".btn.authorize"),
			chromedp.WaitVisible(".auth-container input"),
			chromedp.SendKeys(".auth-container input", key),
			chromedp.Click(".auth-container .btn.modal-btn.auth"),
			chromedp.Click(".btn-done"),
			chromedp.Click(op+" .opblock-summary"),
			chromedp.WaitVisible(op+" .try-out__btn"),
			chromedp.Click(op+" .try-out__btn"),
			chromedp.WaitVisible(op+` tr[data-param-name="query"] input`),
			chromedp.SendKeys(op+` tr[data-param-name="query"] input`, "Seattle"),
			chromedp.Click(op+" .btn.execute"),
			chromedp.WaitVisible(op+" .live-responses-table tbody .response-col_status"),
		); err != nil {
			t.Fatalf("trying resolveLocation in /docs: %v", err)
		}
		status, err := chromedp.Run(ctx, chromedp.Text(op+" .live-responses-table tbody .response-col_status"))
		if err != nil {
			t.Fatal(err)
		}
		curl, err := chromedp.Run(ctx, chromedp.Text(op+" .curl-command"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(strings.TrimSpace(status), "200") || !strings.Contains(curl, "X-API-Key: "+key) {
			t.Errorf("try it out on resolveLocation answered %q to %q, want 200 to a request with the key", status, curl)
		}
		if e := errs.take(); len(e) > 0 {
			t.Errorf("/docs logged errors:\n%s", strings.Join(e, "\n"))
		}
	})

	t.Run("explore", func(t *testing.T) {
		// A wrong key first: the 403 is told in words.
		if err := do(ctx,
			chromedp.Navigate(base+"/explore"),
			chromedp.WaitVisible("#place"),
			chromedp.SendKeys("#key", "not-a-valid-key-000"),
			chromedp.Click("#key-form button"),
			chromedp.SendKeys("#place", "Seattle"),
			chromedp.Click("#place-form button"),
			chromedp.WaitVisible("#message.error"),
		); err != nil {
			t.Fatalf("explore with a wrong key: %v", err)
		}
		message, err := chromedp.Run(ctx, chromedp.Text("#message"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(message, "403") || !strings.Contains(message, "refused the key") {
			t.Errorf("a wrong key says %q", message)
		}

		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById("key").value = "", true)`)); err != nil {
			t.Fatal(err)
		}
		if err := do(ctx,
			chromedp.SendKeys("#key", key),
			chromedp.Click("#key-form button"),
			chromedp.Click("#place-form button"),
			chromedp.WaitVisible("#candidates tbody tr button.choose"),
		); err != nil {
			t.Fatalf("resolving Seattle: %v (page says %q)", err, pageMessage(ctx))
		}
		first, err := chromedp.Run(ctx, chromedp.Text("#candidates tbody tr:first-child td:first-child"))
		if err != nil {
			t.Fatal(err)
		}
		if first != "Seattle, WA" {
			t.Fatalf("first candidate %q, want Seattle, WA", first)
		}

		start := time.Now()
		if err := do(ctx,
			chromedp.Click("#candidates tbody tr:first-child button.choose"),
			chromedp.Poll[chromedp.Void](`Array.from(document.querySelectorAll(".chart")).every(e => e.dataset.state !== "loading") &&
				document.querySelectorAll("#leads tbody tr").length > 0`, chromedp.WithPollingTimeout(30*time.Second)),
		); err != nil {
			t.Fatalf("waiting for the charts: %v (page says %q)", err, pageMessage(ctx))
		}
		elapsed := time.Since(start)
		type pageState struct {
			Charts      map[string]string `json:"charts"`
			MonthlyNote string            `json:"monthlyNote"`
			PointsNote  string            `json:"pointsNote"`
			Canvases    int               `json:"canvases"`
			LeadRows    int               `json:"leadRows"`
			Local       int               `json:"local"`
			Session     string            `json:"session"`
			GeoID       string            `json:"geoID"`
		}
		st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](`({
			charts: Object.fromEntries(Array.from(document.querySelectorAll(".chart")).map(e => [e.id, e.dataset.state])),
			monthlyNote: document.getElementById("note-monthly").textContent,
			pointsNote: document.getElementById("note-points").textContent,
			canvases: document.querySelectorAll(".chart canvas").length,
			leadRows: document.querySelectorAll("#leads tbody tr td:nth-child(2)").length,
			local: localStorage.length,
			session: sessionStorage.getItem("permitd.apiKey") || "",
			geoID: document.getElementById("geo-sub").textContent.split(" · ")[1] || "",
		})`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("charts and leads shown %s after choosing Seattle, WA: %v", elapsed.Round(time.Millisecond), st.Charts)
		for _, id := range []string{"chart-signals", "chart-confidence", "chart-freshness"} {
			if st.Charts[id] != "ready" {
				t.Errorf("%s is %q, want ready", id, st.Charts[id])
			}
		}
		// The monthly series (GET /v1/permits/stats/monthly) and the
		// permits' lat/lon are served: both charts must be drawn, with
		// data in them (pixels of the series' colours on their canvases:
		// the monthly bars' stroke #1769aa, the points' #6a3d9a).
		if st.Charts["chart-monthly"] != "ready" {
			t.Errorf("chart-monthly is %q (note %q), want ready", st.Charts["chart-monthly"], st.MonthlyNote)
		}
		if st.Charts["chart-points"] != "ready" || !pointsNote.MatchString(st.PointsNote) {
			t.Errorf("chart-points is %q (note %q), want ready with permits that have coordinates", st.Charts["chart-points"], st.PointsNote)
		} else if m := pointsNote.FindStringSubmatch(st.PointsNote); m[1] == "0" {
			t.Errorf("points note %q: no permit with coordinates", st.PointsNote)
		}
		inked, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`(() => {
			const count = (id, r, g, b) => {
				let n = 0;
				for (const c of document.querySelectorAll("#" + id + " canvas")) {
					const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
					for (let i = 0; i < d.length; i += 4) {
						if (d[i+3] > 0 && Math.abs(d[i]-r) < 24 && Math.abs(d[i+1]-g) < 24 && Math.abs(d[i+2]-b) < 24) n++;
					}
				}
				return n;
			};
			return {monthly: count("chart-monthly", 0x17, 0x69, 0xaa), points: count("chart-points", 0x6a, 0x3d, 0x9a)};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pixels in the series colours: %v", inked)
		if inked["monthly"] < 20 {
			t.Errorf("the monthly chart draws no bars (%d pixels of the bar colour)", inked["monthly"])
		}
		if inked["points"] < 20 {
			t.Errorf("the points plot draws no points (%d pixels of the point colour)", inked["points"])
		}
		// The chart's numbers are the endpoint's: some month has permits.
		if total := monthlyTotal(t, base, key, st.GeoID); total == 0 {
			t.Errorf("the monthly series of %s counts no permits", st.GeoID)
		}
		if st.Canvases < 3 {
			t.Errorf("%d chart canvases, want at least 3", st.Canvases)
		}
		if st.LeadRows < 2 {
			t.Errorf("the leads table has %d rows", st.LeadRows)
		}
		if st.Local != 0 || st.Session != key {
			t.Errorf("key storage: localStorage has %d items, sessionStorage %q (want the key in sessionStorage only)", st.Local, st.Session)
		}

		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		save(t, shots, "explore.png", shot)

		// The leads table pages with the cursor.
		firstLead1, err := chromedp.Run(ctx, chromedp.Text("#leads tbody tr:first-child"))
		if err != nil {
			t.Fatal(err)
		}
		if err := do(ctx,
			chromedp.Click("#leads-next"),
			chromedp.Poll[chromedp.Void](`document.getElementById("leads-page").textContent.startsWith("page 2") && !document.getElementById("leads-prev").disabled`,
				chromedp.WithPollingTimeout(15*time.Second)),
		); err != nil {
			t.Fatalf("paging the leads: %v (page says %q)", err, pageMessage(ctx))
		}
		firstLead2, err := chromedp.Run(ctx, chromedp.Text("#leads tbody tr:first-child"))
		if err != nil {
			t.Fatal(err)
		}
		if firstLead1 == firstLead2 {
			t.Errorf("page 2 starts with page 1's first lead %q", firstLead1)
		}
		if e := errs.take(); len(e) > 0 {
			t.Errorf("/explore logged errors:\n%s", strings.Join(e, "\n"))
		}
	})
}

// do runs the steps within 45s, so that one stuck wait fails its step
// rather than the whole test's time.
func do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// pageMessage is what the explorer last told the person, for a failure.
func pageMessage(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("message").textContent + " | key field length " + document.getElementById("key").value.length`))
	if err != nil {
		return err.Error()
	}
	return m
}

func save(t *testing.T, dir, name string, png []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// pointsNote is the explorer's note under a drawn points plot.
var pointsNote = regexp.MustCompile(`^(\d+) of the (\d+) most recent permits have coordinates\.$`)

// monthlyTotal is the sum of permit_count over the default monthly series
// of geoID, read from the API as the explorer reads it.
func monthlyTotal(t *testing.T, base, key, geoID string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/permits/stats/monthly?geo_id="+geoID, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m struct {
		Months []struct {
			PermitCount int `json:"permit_count"`
		} `json:"months"`
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("monthly series of %s: %d", geoID, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range m.Months {
		n += x.PermitCount
	}
	return n
}
