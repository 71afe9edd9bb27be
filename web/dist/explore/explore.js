// permitd explorer: resolves a place and charts its permits and permit
// signals. Every data call goes through the public API with the key the
// person typed (kept in sessionStorage only), so quotas and errors apply
// as for any client. No framework; charts are uPlot.
(function () {
  "use strict";

  var KEY_ITEM = "permitd.apiKey";
  var $ = function (id) { return document.getElementById(id); };
  var nf = new Intl.NumberFormat("en-US");
  var money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", maximumFractionDigits: 0 });
  var charts = {};
  var generation = 0; // the geo being shown; answers for an older one are dropped
  var current = null; // {geo, cursors: [cursor of each page shown], page}

  // ---- the API ----------------------------------------------------------

  function ApiError(status, words) { this.status = status; this.message = words; }

  function key() { return sessionStorage.getItem(KEY_ITEM) || ""; }

  function api(path, params) {
    var q = new URLSearchParams();
    Object.keys(params || {}).forEach(function (k) {
      if (params[k] !== null && params[k] !== undefined && params[k] !== "") q.set(k, params[k]);
    });
    var url = path + (q.toString() ? "?" + q.toString() : "");
    if (!key()) return Promise.reject(new ApiError(0, "Enter your API key first: every call to the API sends it as X-API-Key."));
    return fetch(url, { headers: { "X-API-Key": key(), "Accept": "application/json" } }).then(function (res) {
      return res.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        if (res.ok) return body;
        throw new ApiError(res.status, describe(res, body));
      });
    }, function (err) {
      throw new ApiError(0, "Could not reach the API (" + err.message + "). Is the server running?");
    });
  }

  // describe turns an error answer into words for a person.
  function describe(res, body) {
    var detail = body && body.error && body.error.message ? body.error.message : (body && body.message) || "";
    var retry = res.headers.get("Retry-After");
    switch (res.status) {
      case 403:
        return "The API refused the key (403 Forbidden)" + (detail ? ": " + detail : "") + ". Check the key and enter it again.";
      case 429:
        return "Too many requests (429): this key's rate limit or quota is used up." +
          (retry ? " Try again in " + retry + " second" + (retry === "1" ? "" : "s") + "." : " Try again later.");
      case 422:
        return "The API did not accept the request (422)" + (detail ? ": " + detail : "") + ".";
      case 404:
        return "Not found (404)" + (detail ? ": " + detail : "") + ".";
      case 503:
        return "The service is temporarily unavailable (503)." + (retry ? " Try again in " + retry + " s." : "");
      default:
        return "The API answered " + res.status + (detail ? ": " + detail : "") + ".";
    }
  }

  function say(text, isError) {
    var m = $("message");
    m.textContent = text;
    m.className = "message" + (isError ? " error" : "");
    m.hidden = !text;
  }

  // ---- tables -----------------------------------------------------------

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "—" : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function fillTop(id, items) {
    var tb = $(id).querySelector("tbody");
    tb.textContent = "";
    (items || []).forEach(function (it) {
      var tr = document.createElement("tr");
      cell(tr, it.value);
      cell(tr, nf.format(it.count), "num");
      tb.appendChild(tr);
    });
    if (!items || !items.length) {
      var tr = document.createElement("tr");
      cell(tr, "none");
      tb.appendChild(tr);
    }
  }

  // ---- charts -----------------------------------------------------------

  function width(el) { return Math.max(300, el.clientWidth || 360); }

  function put(id, opts, data) {
    var el = $(id);
    if (charts[id]) { charts[id].destroy(); delete charts[id]; }
    el.textContent = "";
    charts[id] = new uPlot(opts, data, el);
    el.dataset.state = "ready";
  }

  function unavailable(id, noteId, text, state) {
    var el = $(id);
    if (charts[id]) { charts[id].destroy(); delete charts[id]; }
    el.textContent = "";
    el.dataset.state = state || "unavailable";
    if (noteId) $(noteId).textContent = text;
    else el.textContent = text;
  }

  function categoryAxis(labels) {
    return {
      splits: function () { return labels.map(function (_, i) { return i; }); },
      values: function (u, splits) { return splits.map(function (i) { return labels[i] === undefined ? "" : labels[i]; }); },
      gap: 4,
      size: 44,
    };
  }

  function bars(id, labels, values, color) {
    var el = $(id);
    var xs = labels.map(function (_, i) { return i; });
    put(id, {
      width: width(el), height: 200,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, y: { range: function (u, min, max) { return [0, Math.max(1, max) * 1.1]; } } },
      axes: [categoryAxis(labels), { size: 60 }],
      series: [{}, { label: "count", fill: color, stroke: color, paths: uPlot.paths.bars({ size: [0.7, 80] }), points: { show: false } }],
    }, [xs, values]);
  }

  var shortSignal = {
    site_prep_issued_nowcast: "site\nprep",
    new_construction_issued_nowcast: "new\nconstr.",
    framing_nowcast_early: "framing\nearly",
    framing_window_late: "framing\nlate",
    rough_in_nowcast_early: "rough-in\nearly",
    rough_in_window_late: "rough-in\nlate",
  };

  function drawStats(s) {
    $("total-leads").textContent = nf.format(s.total_active_leads);
    var sb = s.signals_breakdown || [];
    bars("chart-signals", sb.map(function (b) { return shortSignal[b.signal_key] || b.signal_key; }), sb.map(function (b) { return b.count; }), "#1769aa");
    var c = s.confidence_distribution || {};
    bars("chart-confidence", ["high", "medium", "low"], [c.high || 0, c.medium || 0, c.low || 0], "#2e8b57");
    var f = s.freshness_distribution || {};
    bars("chart-freshness", ["0–7", "8–14", "15–30", "31+"], [f["0_7"] || 0, f["8_14"] || 0, f["15_30"] || 0, f["31_plus"] || 0], "#b8860b");
    fillTop("top-counties", s.top_counties);
    fillTop("top-cities", s.top_cities);
    fillTop("top-zips", s.top_zips);
  }

  function drawMonthly(m) {
    var months = (m && m.months) || [];
    if (!months.length) { unavailable("chart-monthly", "note-monthly", "No months in the series.", "empty"); return; }
    var labels = months.map(function (x) { return x.month; });
    var xs = labels.map(function (_, i) { return i; });
    var every = Math.ceil(labels.length / 12);
    var el = $("chart-monthly");
    $("note-monthly").textContent = "";
    put("chart-monthly", {
      width: width(el), height: 240,
      scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, n: { range: function (u, min, max) { return [0, Math.max(1, max) * 1.1]; } }, usd: { range: function (u, min, max) { return [0, Math.max(1, max) * 1.1]; } } },
      axes: [
        { splits: function () { return xs.filter(function (i) { return i % every === 0; }); },
          values: function (u, splits) { return splits.map(function (i) { return labels[i] || ""; }); } },
        { scale: "n", label: "permits", size: 60 },
        { scale: "usd", side: 1, label: "valuation", size: 80, grid: { show: false },
          values: function (u, splits) { return splits.map(function (v) { return money.format(v).replace(/,000,000$/, "M").replace(/,000$/, "k"); }); } },
      ],
      series: [
        { label: "month", value: function (u, i) { return i === null || labels[i] === undefined ? "—" : labels[i]; } },
        { label: "permits", scale: "n", fill: "rgba(23,105,170,0.55)", stroke: "#1769aa", paths: uPlot.paths.bars({ size: [0.7, 60] }), points: { show: false },
          value: function (u, v) { return v === null ? "—" : nf.format(v); } },
        { label: "total valuation", scale: "usd", stroke: "#c0392b", width: 2,
          value: function (u, v) { return v === null ? "—" : money.format(v); } },
      ],
    }, [xs, months.map(function (x) { return x.permit_count; }), months.map(function (x) { return x.total_valuation; })]);
  }

  function drawPoints(permits) {
    var pts = (permits || []).filter(function (p) { return typeof p.lat === "number" && typeof p.lon === "number"; });
    if (!pts.length) {
      unavailable("chart-points", "note-points", permits && permits.length
        ? "These permit records carry no coordinates (lat/lon), so there is nothing to plot."
        : "No permits for this place.", "empty");
      return;
    }
    pts.sort(function (a, b) { return a.lon - b.lon; });
    var el = $("chart-points");
    $("note-points").textContent = pts.length + " of the " + permits.length + " most recent permits have coordinates.";
    put("chart-points", {
      width: width(el), height: 260,
      legend: { show: false },
      scales: { x: { time: false }, y: {} },
      axes: [{ label: "longitude" }, { label: "latitude", size: 70 }],
      series: [{}, { label: "permits", stroke: "#6a3d9a", fill: "rgba(106,61,154,0.5)", paths: function () { return null; }, points: { show: true, size: 5, fill: "rgba(106,61,154,0.6)" } }],
    }, [pts.map(function (p) { return p.lon; }), pts.map(function (p) { return p.lat; })]);
  }

  // ---- flow -------------------------------------------------------------

  function leadParams() {
    return $("include-stale").checked ? { include_stale: "true" } : {};
  }

  function resolvePlace(text) {
    say("Resolving “" + text + "”…");
    api("/v1/locations/resolve", { query: text }).then(function (r) {
      var tb = $("candidates").querySelector("tbody");
      tb.textContent = "";
      $("candidates-section").hidden = false;
      if (!r.count) { say("No place matches “" + r.query + "”.", true); return; }
      say("");
      r.candidates.forEach(function (c) {
        var tr = document.createElement("tr");
        cell(tr, c.display_name);
        cell(tr, c.geo_type);
        cell(tr, c.decision, "decision-" + c.decision);
        cell(tr, c.confidence === null ? null : c.confidence.toFixed(2), "num");
        var td = document.createElement("td");
        var b = document.createElement("button");
        b.type = "button";
        b.textContent = "Choose";
        b.className = "choose";
        b.addEventListener("click", function () { choose(c); });
        td.appendChild(b);
        tr.appendChild(td);
        tb.appendChild(tr);
      });
    }, function (e) { say(e.message, true); });
  }

  function choose(c) {
    var gen = ++generation;
    current = { geo: c, cursors: [null], page: 0 };
    $("geo").hidden = false;
    $("geo-title").textContent = c.display_name;
    $("geo-sub").textContent = c.geo_type + " · " + c.geo_id + " · decision " + c.decision + ", confidence " + (c.confidence === null ? "—" : c.confidence.toFixed(2));
    ["chart-monthly", "chart-signals", "chart-confidence", "chart-freshness", "chart-points"].forEach(function (id) {
      $(id).dataset.state = "loading";
      $(id).textContent = "Loading…";
    });
    $("note-monthly").textContent = "";
    $("note-points").textContent = "";
    say("");
    var failed = function (id, noteId) {
      return function (e) { if (gen === generation) { unavailable(id, noteId, e.message, "error"); say(e.message, true); } };
    };

    api("/v1/permits/stats/monthly", { geo_id: c.geo_id }).then(function (m) {
      if (gen === generation) drawMonthly(m);
    }, function (e) {
      if (gen !== generation) return;
      if (e.status === 404) {
        unavailable("chart-monthly", "note-monthly", "This server has no monthly permit series (GET /v1/permits/stats/monthly answered 404 Not Found), so the monthly chart is not shown.");
      } else { failed("chart-monthly", "note-monthly")(e); }
    });

    loadStats(gen);
    loadLeads(gen);

    api("/v1/permits/search", { geo_id: c.geo_id, limit: 100 }).then(function (r) {
      if (gen === generation) drawPoints(r.permits);
    }, failed("chart-points", "note-points"));
  }

  function loadStats(gen) {
    ["chart-signals", "chart-confidence", "chart-freshness"].forEach(function (id) { $(id).dataset.state = "loading"; });
    var p = leadParams();
    p.geo_id = current.geo.geo_id;
    api("/v1/signals/permit/stats", p).then(function (s) {
      if (gen === generation) drawStats(s);
    }, function (e) {
      if (gen !== generation) return;
      ["chart-signals", "chart-confidence", "chart-freshness"].forEach(function (id) { unavailable(id, null, "Not available.", "error"); });
      say(e.message, true);
    });
  }

  function loadLeads(gen) {
    var p = leadParams();
    p.geo_id = current.geo.geo_id;
    p.limit = 25;
    p.cursor = current.cursors[current.page];
    var tb = $("leads").querySelector("tbody");
    $("leads-next").disabled = true;
    $("leads-prev").disabled = true;
    api("/v1/signals/permit/leads", p).then(function (r) {
      if (gen !== generation) return;
      tb.textContent = "";
      (r.leads || []).forEach(function (l) {
        var tr = document.createElement("tr");
        cell(tr, l.event_date_used);
        cell(tr, l.signal_key);
        cell(tr, l.confidence === null ? null : l.confidence.toFixed(2), "num");
        cell(tr, l.freshness_lag_days, "num");
        cell(tr, l.permit_number);
        cell(tr, l.location && l.location.full_address);
        tb.appendChild(tr);
      });
      if (!r.count) {
        var tr = document.createElement("tr");
        var td = cell(tr, $("include-stale").checked ? "No leads for this place." : "No leads in the last 60 days; tick the box above to include older ones.");
        td.colSpan = 6;
        tb.appendChild(tr);
      }
      current.cursors[current.page + 1] = r.next_cursor;
      $("leads-next").disabled = !r.next_cursor;
      $("leads-prev").disabled = current.page === 0;
      $("leads-page").textContent = "page " + (current.page + 1) + (r.next_cursor ? "" : " (last)");
    }, function (e) {
      if (gen !== generation) return;
      $("leads-prev").disabled = current.page === 0;
      say(e.message, true);
    });
  }

  // ---- wiring -----------------------------------------------------------

  function showKeyState() {
    $("key-state").textContent = key() ? "key set for this tab (session storage only)" : "kept in this tab's session storage only";
  }

  var resizing = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      Object.keys(charts).forEach(function (id) {
        charts[id].setSize({ width: width($(id)), height: charts[id].height });
      });
    }, 150);
  });

  $("key").value = key();
  showKeyState();
  $("key-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var k = $("key").value.trim();
    if (k) sessionStorage.setItem(KEY_ITEM, k); else sessionStorage.removeItem(KEY_ITEM);
    showKeyState();
    say(k ? "Key set." : "Key cleared.");
  });
  $("place-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var k = $("key").value.trim();
    if (k && k !== key()) { sessionStorage.setItem(KEY_ITEM, k); showKeyState(); }
    var text = $("place").value.trim();
    if (text) resolvePlace(text);
  });
  $("leads-next").addEventListener("click", function () {
    if (!current || !current.cursors[current.page + 1]) return;
    current.page++;
    loadLeads(generation);
  });
  $("leads-prev").addEventListener("click", function () {
    if (!current || current.page === 0) return;
    current.page--;
    loadLeads(generation);
  });
  $("include-stale").addEventListener("change", function () {
    if (!current) return;
    current.cursors = [null];
    current.page = 0;
    loadStats(generation);
    loadLeads(generation);
  });
})();
