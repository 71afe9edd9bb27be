package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// recorder is a Registerer that notes every metric name registered.
type recorder struct {
	*prometheus.Registry
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedMetrics names every series family permitd serve (and index,
// whose metrics are a subset) exports: registered the way serve's build
// registers them, plus what Prometheus adds to every target.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := &recorder{Registry: newRegistry(), names: map[string]bool{"up": true}}
	newServeMetrics(reg)
	reg.MustRegister(newReadModelSize(newMemoryReadModel(false)))
	q, err := buildQuota(context.Background(), quotaConfig{KeysFile: filepath.Join(t.TempDir(), "k.json"), RedisTimeout: 1, KeyCacheTTL: 1},
		nil, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	mfs, err := reg.Gather() // the collectors registered by newRegistry
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		reg.names[mf.GetName()] = true
	}
	return reg.names
}

// metricsOf lists the metric names an expression selects.
func metricsOf(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name == "" {
				t.Errorf("%s: a selector without a metric name", expr)
			}
			out = append(out, name)
		}
		return nil
	})
	return out
}

func exported(names map[string]bool, m string) bool {
	if names[m] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(m, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

// TestAlertRulesUseExportedMetrics: the alert rules parse with
// Prometheus' own rule parser, and every metric they read is one the
// binary exports, so a renamed series cannot silence an alert; each alert
// has a runbook anchor that docs/operations.md defines.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	names := exportedMetrics(t)
	groups, errs := rulefmt.ParseFile("../../deploy/observability/alerts.yaml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("rule file: %v", errs)
	}
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			for _, m := range metricsOf(t, r.Expr) {
				if !exported(names, m) {
					t.Errorf("alert %s reads %s, which permitd does not export", r.Alert, m)
				}
			}
			anchor := "runbook-" + strings.ToLower(r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], "docs/operations.md#"+anchor) {
				t.Errorf("alert %s: runbook_url %q, want docs/operations.md#%s", r.Alert, r.Annotations["runbook_url"], anchor)
			}
			if !strings.Contains(string(ops), `<a id="`+anchor+`"></a>`) {
				t.Errorf("alert %s: docs/operations.md has no runbook anchor %s", r.Alert, anchor)
			}
		}
	}
	if alerts < 8 {
		t.Fatalf("%d alerts, want the 8+ of deploy/observability", alerts)
	}
}

// TestDashboardUsesExportedMetrics: every query of the Grafana dashboard
// parses as PromQL and reads only exported metrics.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	names := exportedMetrics(t)
	raw, err := os.ReadFile("../../deploy/observability/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")
	queries := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, m := range metricsOf(t, grafana.Replace(tg.Expr)) {
				if !exported(names, m) {
					t.Errorf("panel %q reads %s, which permitd does not export", p.Title, m)
				}
			}
		}
	}
	if queries == 0 {
		t.Fatal("no query in the dashboard")
	}
}

// TestMetricCheckCatchesAnUnknownName: the check the rule tests rely on
// rejects a name permitd does not export and sees through a histogram's
// series suffixes.
func TestMetricCheckCatchesAnUnknownName(t *testing.T) {
	names := exportedMetrics(t)
	got := metricsOf(t, `sum(rate(permitd_http_requests_totl[5m])) / sum(rate(permitd_http_request_duration_seconds_count[5m]))`)
	if len(got) != 2 || exported(names, got[0]) || !exported(names, got[1]) {
		t.Fatalf("metrics %v: want the misspelt one rejected and the histogram count accepted", got)
	}
	for _, m := range []string{"permitd_indexer_dead_letters_total", "permitd_quota_fallback_active", "permitd_readmodel_documents", "permitd_build_info", "go_goroutines"} {
		if !exported(names, m) {
			t.Errorf("%s: not seen as exported", m)
		}
	}
}
