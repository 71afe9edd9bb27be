package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// Lead stats cells: the pre-aggregates PermitStats reads.
//
// A lead counts once in the cells of each of its geo_ids (the anchors
// PermitLeads pages by), for its signal_key, in three periods of its
// event day: the day, its month and its year (a lead without a date in
// one "none" cell). A cell document (mappings.KindLeadCell, id
// leadCellID) holds its leads' counts by confidence class (high >= 0.75,
// medium >= 0.5, low, null) and the top-list counters: per county, city
// and ZIP key (the *_norm fields) and class, the number of leads. A
// stats window is then a few roll-ups plus edge days (leadPeriods), and
// a confidence floor at a class bound (0.5, 0.75; 0 keeps every non-null
// class) a choice of classes; another floor needs the leads' own
// confidences and reads the leads.
//
// The cells are kept exactly by the protocol of the permit count cells
// (cells.go), on the lead topic (keyed by lead id): each lead version
// written carries what it owes the cells (cells_pending), counted under
// its tag once the version is stored, then dropped from the lead.

// Confidence classes of the lead cells.
const (
	classHigh   = "high"
	classMedium = "medium"
	classLow    = "low"
	classNull   = "null"
)

var leadClasses = []string{classHigh, classMedium, classLow, classNull}

func confClass(c *float64) string {
	switch {
	case c == nil:
		return classNull
	case *c >= 0.75:
		return classHigh
	case *c >= 0.5:
		return classMedium
	}
	return classLow
}

// Period levels of the lead cells.
const (
	levelDay   = "day"
	levelMonth = "month"
	levelYear  = "year"
	levelNone  = "none"
)

// leadState is what a lead contributes to the cells.
type leadState struct {
	version int64 // the external version, as permitState's
	live    bool
	side    leadSide
}

// leadSide is a lead as the cells count it: the cells it is in and what
// it adds to each.
type leadSide struct {
	Cells  []string `json:"cells"`
	Class  string   `json:"class"`
	County string   `json:"county,omitempty"`
	City   string   `json:"city,omitempty"`
	Zip    string   `json:"zip,omitempty"`
}

func leadStateOf(d *leadDoc, ext int64) leadState {
	st := leadState{version: ext, live: !d.Deleted}
	if !st.live {
		return st
	}
	st.side.Class = confClass(d.Confidence)
	if l := d.Location; l != nil {
		st.side.County, st.side.City, st.side.Zip = l.CountyNorm, l.CityNorm, l.ZipcodeNorm
	}
	anchors := slices.Clone(d.GeoIDs)
	slices.Sort(anchors)
	anchors = slices.Compact(anchors)
	day := validDate(d.EventDateUsed)
	for _, a := range anchors {
		if a == "" {
			continue
		}
		if day == "" {
			st.side.Cells = append(st.side.Cells, leadCellID(a, d.SignalKey, levelNone, ""))
			continue
		}
		st.side.Cells = append(st.side.Cells,
			leadCellID(a, d.SignalKey, levelDay, day),
			leadCellID(a, d.SignalKey, levelMonth, day[:8]+"01"),
			leadCellID(a, d.SignalKey, levelYear, day[:5]+"01-01"))
	}
	return st
}

// leadCellID names the cell of an anchor, signal key and period (start:
// the period's first day; "" for levelNone).
func leadCellID(anchor, key, level, start string) string {
	if start == "" {
		start = "none"
	}
	return anchor + "|" + key + "|" + level + "|" + start
}

// splitLeadCellID is leadCellID's inverse.
func splitLeadCellID(id string) (anchor, key, level, start string) {
	rest, start := cutLast(id)
	rest, level = cutLast(rest)
	anchor, key = cutLast(rest)
	if start == "none" {
		start = ""
	}
	return anchor, key, level, start
}

func cutLast(s string) (before, after string) {
	i := strings.LastIndexByte(s, '|')
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+1:]
}

// leadPending is what a stored lead version owes the cells.
type leadPending struct {
	Tag   string    `json:"tag"`
	Leave *leadSide `json:"leave,omitempty"`
	Enter *leadSide `json:"enter,omitempty"`
}

// leadPendingOf is the move between two states, nil when no cell changes.
func leadPendingOf(from, to leadState, tag string) *leadPending {
	if from.live == to.live && (!from.live || (slices.Equal(from.side.Cells, to.side.Cells) &&
		from.side.Class == to.side.Class && from.side.County == to.side.County &&
		from.side.City == to.side.City && from.side.Zip == to.side.Zip)) {
		return nil
	}
	p := &leadPending{Tag: tag}
	if from.live && len(from.side.Cells) > 0 {
		s := from.side
		p.Leave = &s
	}
	if to.live && len(to.side.Cells) > 0 {
		s := to.side
		p.Enter = &s
	}
	if p.Leave == nil && p.Enter == nil {
		return nil
	}
	return p
}

// leadTombstone is a lead delete's document with its debt to the cells.
type leadTombstone struct {
	meta
	CellsPending *leadPending `json:"cells_pending,omitempty"`
}

// leadCellDoc is one lead cell document.
type leadCellDoc struct {
	Anchor    string      `json:"anchor"`
	SignalKey string      `json:"signal_key"`
	Level     string      `json:"level"`
	Day       string      `json:"day,omitempty"`
	High      int64       `json:"high"`
	Medium    int64       `json:"medium"`
	Low       int64       `json:"low"`
	Null      int64       `json:"null"`
	Tops      []leadTop   `json:"tops"`
	Pending   cellPending `json:"pending"`
}

// leadTop is one top-list counter of a cell: the leads of a class under
// a county, city or ZIP key.
type leadTop struct {
	Kind  string `json:"kind"` // county, city, zip
	Key   string `json:"key"`
	Class string `json:"class"`
	N     int64  `json:"n"`
}

// add counts a lead side n times (n is +1 or -1).
func (c *leadCellDoc) add(s *leadSide, n int64) {
	switch s.Class {
	case classHigh:
		c.High += n
	case classMedium:
		c.Medium += n
	case classLow:
		c.Low += n
	default:
		c.Null += n
	}
	for _, kk := range [][2]string{{"county", s.County}, {"city", s.City}, {"zip", s.Zip}} {
		if kk[1] == "" {
			continue
		}
		t := leadTop{Kind: kk[0], Key: kk[1], Class: s.Class}
		i, found := slices.BinarySearchFunc(c.Tops, t, cmpTop)
		if !found {
			c.Tops = slices.Insert(c.Tops, i, t)
		}
		c.Tops[i].N += n
		if c.Tops[i].N == 0 {
			c.Tops = slices.Delete(c.Tops, i, i+1)
		}
	}
}

func cmpTop(a, b leadTop) int {
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Class, b.Class)
}

// leadMove is one tag's change of one cell.
type leadMove struct {
	tag  string
	side *leadSide
	n    int64
}

// leadCellPlan gathers a batch's moves by cell id.
type leadCellPlan struct {
	moves map[string][]leadMove
}

func (p *leadCellPlan) addPending(lp *leadPending) {
	if p.moves == nil {
		p.moves = map[string][]leadMove{}
	}
	for _, m := range []struct {
		s *leadSide
		n int64
	}{{lp.Leave, -1}, {lp.Enter, +1}} {
		if m.s == nil {
			continue
		}
		for _, id := range m.s.Cells {
			p.moves[id] = append(p.moves[id], leadMove{tag: lp.Tag, side: m.s, n: m.n})
		}
	}
}

func (p *leadCellPlan) ids() []string {
	out := make([]string, 0, len(p.moves))
	for id := range p.moves {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// leadCells is the lead cell work of one batch.
type leadCells struct {
	ids     []string
	pending map[string]*leadPending // by tag
	recover []string
}

func (lc *leadCells) pendingOf(it bulkItem) *leadPending {
	if lc == nil || it.kind != readmodel.KindLead {
		return nil
	}
	if it.version > maxEntityVersion {
		return nil
	}
	return lc.pending[transitionTag(it.id, externalVersion(it))]
}

// leadSourceFields are what the cells need of a stored lead.
const leadSourceFields = "doc_id,version,deleted,geo_ids,signal_key,event_date_used,confidence,location.county_norm,location.city_norm,location.zipcode_norm,cells_pending"

// planLeadCells is planPermitCells for the batch's leads.
func (s *Store) planLeadCells(ctx context.Context, b readmodel.Batch) (*leadCells, error) {
	states := map[string][]leadState{}
	var ids []string
	note := func(id string, st leadState) {
		if _, ok := states[id]; !ok {
			ids = append(ids, id)
		}
		states[id] = append(states[id], st)
	}
	for i := range b.Leads {
		l := &b.Leads[i]
		d := leadDocOf(*l)
		note(l.LeadID, leadStateOf(&d, batchExternal(readmodel.KindLead, l.LeadID, l.Version, !l.Linked())))
	}
	for _, d := range b.Deletes {
		if d.Kind == readmodel.KindLead {
			note(d.ID, leadState{version: batchExternal(d.Kind, d.ID, d.Version, false)})
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, stored, pending, err := s.storedLeads(ctx, ids, "?_source_includes="+leadSourceFields)
	if err != nil {
		return nil, err
	}
	lc := &leadCells{ids: ids, pending: map[string]*leadPending{}}
	for _, id := range ids {
		if pending[id] != nil {
			lc.recover = append(lc.recover, id)
		}
		from := stored[id]
		for _, st := range states[id] {
			if st.version <= from.version {
				continue
			}
			tag := transitionTag(id, st.version)
			if _, seen := lc.pending[tag]; !seen {
				lc.pending[tag] = leadPendingOf(from, st, tag)
			}
		}
	}
	return lc, nil
}

// storedLeads reads stored leads: documents, states and debts.
func (s *Store) storedLeads(ctx context.Context, ids []string, query string) (map[string]*leadDoc, map[string]leadState, map[string]*leadPending, error) {
	r, err := s.mget(ctx, s.write(readmodel.KindLead), query, ids)
	if err != nil {
		return nil, nil, nil, err
	}
	docs := make(map[string]*leadDoc, len(ids))
	states := make(map[string]leadState, len(ids))
	pending := map[string]*leadPending{}
	for i, d := range r.Docs {
		if !d.Found {
			continue
		}
		if d.Version == nil {
			return nil, nil, nil, fmt.Errorf("%w: stored lead %q read without _version", readmodel.ErrUnavailable, ids[i])
		}
		var doc struct {
			leadDoc
			CellsPending *leadPending `json:"cells_pending"`
		}
		if err := json.Unmarshal(d.Source, &doc); err != nil {
			return nil, nil, nil, fmt.Errorf("opensearch: stored lead %q: %w", ids[i], err)
		}
		docs[ids[i]] = &doc.leadDoc
		states[ids[i]] = leadStateOf(&doc.leadDoc, *d.Version)
		if doc.CellsPending != nil {
			pending[ids[i]] = doc.CellsPending
		}
	}
	return docs, states, pending, nil
}

// finishLeadCells is finishPermitCells for leads.
func (s *Store) finishLeadCells(ctx context.Context, ids []string) error {
	docs, states, pending, err := s.storedLeads(ctx, ids, "")
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	var plan leadCellPlan
	var rewrite []bulkItem
	for _, id := range ids {
		p := pending[id]
		if p == nil {
			continue
		}
		plan.addPending(p)
		d := docs[id]
		d.IndexedAt = s.indexedAt()
		var doc any = *d
		if d.Deleted {
			doc = d.meta
		}
		rewrite = append(rewrite, rewriteItem(readmodel.KindLead, id, d.Version, states[id].version, doc))
	}
	index := s.write(mappings.KindLeadCell)
	if err := updateCellsIn(ctx, s, index, plan.ids(), func(id string, cur *leadCellDoc) (leadCellDoc, bool) {
		next := leadCellDoc{Tops: []leadTop{}, Pending: cellPending{Tags: []string{}}}
		next.Anchor, next.SignalKey, next.Level, next.Day = splitLeadCellID(id)
		if cur != nil {
			next = *cur
			next.Tops = slices.Clone(cur.Tops)
			next.Pending.Tags = slices.Clone(cur.Pending.Tags)
		}
		// A tag may move a lead out of and back into one cell (its month
		// and year when only the day changes): both moves or neither.
		var held cellPending
		if cur != nil {
			held = cur.Pending
		}
		changed := false
		for _, m := range plan.moves[id] {
			if held.has(m.tag) {
				continue // counted by an earlier attempt
			}
			next.add(m.side, m.n)
			if !next.Pending.has(m.tag) {
				next.Pending.Tags = append(next.Pending.Tags, m.tag)
				slices.Sort(next.Pending.Tags)
			}
			changed = true
		}
		return next, changed
	}); err != nil {
		return err
	}
	if err := s.rewriteDocs(ctx, rewrite); err != nil {
		return err
	}
	return updateCellsIn(ctx, s, index, plan.ids(), func(id string, cur *leadCellDoc) (leadCellDoc, bool) {
		if cur == nil {
			return leadCellDoc{}, false
		}
		next := *cur
		moves := plan.moves[id]
		next.Pending.Tags = slices.DeleteFunc(slices.Clone(cur.Pending.Tags), func(t string) bool {
			return slices.ContainsFunc(moves, func(m leadMove) bool { return m.tag == t })
		})
		return next, len(next.Pending.Tags) != len(cur.Pending.Tags)
	})
}

// leadPeriod is one range of cell periods a stats window reads: cells of
// level whose period starts in [from, to] ("" leaves a side open).
type leadPeriod struct {
	level, from, to string
}

// leadPeriods plans a stats window over the cells: the days [lo, hi]
// ("" for an open side) as whole years, then whole months, then single
// days, with the days from fresh on (today - 30, the freshness buckets'
// reach) always as day cells. With no bound at all the undated cells are
// read too (the filter keeps null dates only then).
func leadPeriods(lo, hi string, fresh time.Time) []leadPeriod {
	var out []leadPeriod
	if lo == "" && hi == "" {
		out = append(out, leadPeriod{level: levelNone})
	}
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	var a *time.Time
	if lo != "" {
		t, _ := time.Parse(time.DateOnly, lo)
		a = &t
	}
	b := fresh.AddDate(0, 0, -1) // the roll-ups' last day
	if hi != "" {
		t, _ := time.Parse(time.DateOnly, hi)
		if t.Before(fresh) {
			b = t
		}
	}
	// Day cells from fresh on.
	if hi == "" || !mustDay(hi).Before(fresh) {
		from := fresh
		if a != nil && a.After(from) {
			from = *a
		}
		out = append(out, leadPeriod{level: levelDay, from: day(from), to: hi})
	}
	if a != nil && a.After(b) {
		return out
	}
	// [a, b] by roll-ups: whole years, the months and days around them.
	firstYear := func(t time.Time) int {
		if t.YearDay() == 1 {
			return t.Year()
		}
		return t.Year() + 1
	}
	lastYear := b.Year()
	if !(b.Month() == 12 && b.Day() == 31) {
		lastYear--
	}
	jan1 := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	if a == nil {
		out = append(out, leadPeriod{level: levelYear, to: day(jan1(lastYear))})
		return append(out, monthsAndDays(jan1(lastYear+1), b)...)
	}
	fy := firstYear(*a)
	if fy > lastYear {
		return append(out, monthsAndDays(*a, b)...)
	}
	out = append(out, leadPeriod{level: levelYear, from: day(jan1(fy)), to: day(jan1(lastYear))})
	out = append(out, monthsAndDays(*a, jan1(fy).AddDate(0, 0, -1))...)
	return append(out, monthsAndDays(jan1(lastYear+1), b)...)
}

func mustDay(s string) time.Time {
	t, _ := time.Parse(time.DateOnly, s)
	return t
}

// monthsAndDays covers the days [a, b] with whole months and the days
// around them.
func monthsAndDays(a, b time.Time) []leadPeriod {
	if a.After(b) {
		return nil
	}
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	first := time.Date(a.Year(), a.Month(), 1, 0, 0, 0, 0, time.UTC)
	if a.Day() != 1 {
		first = first.AddDate(0, 1, 0)
	}
	last := time.Date(b.Year(), b.Month(), 1, 0, 0, 0, 0, time.UTC) // the month of b, whole when b is its last day
	if b.AddDate(0, 0, 1).Day() != 1 {
		last = last.AddDate(0, -1, 0)
	}
	if first.After(last) {
		return []leadPeriod{{level: levelDay, from: day(a), to: day(b)}}
	}
	out := []leadPeriod{{level: levelMonth, from: day(first), to: day(last)}}
	if a.Before(first) {
		out = append(out, leadPeriod{level: levelDay, from: day(a), to: day(first.AddDate(0, 0, -1))})
	}
	if end := last.AddDate(0, 1, -1); end.Before(b) {
		out = append(out, leadPeriod{level: levelDay, from: day(end.AddDate(0, 0, 1)), to: day(b)})
	}
	return out
}

// cellClasses are the confidence classes a floor keeps; false when the
// floor is not a class bound, so the cells cannot answer it.
func cellClasses(f *float64) ([]string, bool) {
	switch {
	case f == nil:
		return leadClasses, true
	case *f > 1:
		return []string{}, true
	case *f == 0.75:
		return []string{classHigh}, true
	case *f == 0.5:
		return []string{classHigh, classMedium}, true
	case *f <= 0:
		return []string{classHigh, classMedium, classLow}, true
	}
	return nil, false
}

// leadCellStatsBody is PermitStats over the lead cells (golden:
// stats_cells*.search.json): the cells of the anchor (and keys) whose
// periods leadPeriods plans for the window, summed by class; by signal
// key; by freshness range over the day cells; and, through the nested
// counters of the kept classes, by county, city and ZIP key.
func leadCellStatsBody(q readmodel.StatsQuery, classes []string) (obj, error) {
	lo, hi, err := leadWindow(q.Filter)
	if err != nil {
		return nil, err
	}
	today, err := time.Parse(time.DateOnly, q.Today)
	if err != nil {
		return nil, fmt.Errorf("%w: stats need Today, got %q", readmodel.ErrInvalidQuery, q.Today)
	}
	ago := func(days int) string { return today.AddDate(0, 0, -days).Format(time.DateOnly) }
	var periods []obj
	if lo == "" || hi == "" || lo <= hi {
		for _, p := range leadPeriods(lo, hi, today.AddDate(0, 0, -30)) {
			clauses := []obj{term("level", p.level)}
			if p.from != "" || p.to != "" {
				clauses = append(clauses, dateRange("day", p.from, p.to))
			}
			periods = append(periods, obj{"bool": obj{"filter": clauses}})
		}
	}
	if len(periods) == 0 {
		periods = []obj{{"match_none": obj{}}}
	}
	filter := []obj{term("anchor", q.Filter.Geo.ID())}
	if len(q.Filter.SignalKeys) > 0 {
		filter = append(filter, terms("signal_key", q.Filter.SignalKeys))
	}
	sums := func() obj {
		out := obj{}
		for _, c := range classes {
			out[c] = obj{"sum": obj{"field": c}}
		}
		return out
	}
	counters := func(kind string) obj {
		return obj{
			"filter": term("tops.kind", kind),
			"aggs": obj{"keys": obj{
				"terms": obj{"field": "tops.key", "size": maxTerms, "order": []obj{{"_key": "asc"}}},
				"aggs":  obj{"n": obj{"sum": obj{"field": "tops.n"}}},
			}},
		}
	}
	aggs := sums()
	aggs["by_signal"] = obj{
		"terms": obj{"field": "signal_key", "size": maxTerms, "order": []obj{{"_key": "asc"}}},
		"aggs":  sums(),
	}
	aggs["freshness"] = obj{
		"filter": term("level", levelDay),
		"aggs": obj{"ranges": obj{
			"date_range": obj{"field": "day", "format": "strict_date", "keyed": true, "ranges": []obj{
				{"key": "d0_7", "from": ago(7)},
				{"key": "d8_14", "from": ago(14), "to": ago(7)},
				{"key": "d15_30", "from": ago(30), "to": ago(14)},
			}},
			"aggs": sums(),
		}},
	}
	aggs["tops"] = obj{
		"nested": obj{"path": "tops"},
		"aggs": obj{"kept": obj{
			"filter": terms("tops.class", classes),
			"aggs":   obj{"county": counters("county"), "city": counters("city"), "zip": counters("zip")},
		}},
	}
	return obj{
		"size":             0,
		"track_total_hits": false,
		"query":            obj{"bool": obj{"filter": filter, "should": periods, "minimum_should_match": 1}},
		"aggs":             aggs,
	}, nil
}

// classSums reads the per-class sums of an aggregation object.
type classSums map[string]json.RawMessage

func (c classSums) total(classes []string) (int64, error) {
	var n int64
	for _, cl := range classes {
		v, err := c.sum(cl)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

func (c classSums) sum(class string) (int64, error) {
	var a struct {
		Value *float64 `json:"value"`
	}
	if err := json.Unmarshal(c[class], &a); err != nil || a.Value == nil {
		return 0, fmt.Errorf("opensearch: lead cells: no %s sum", class)
	}
	return int64(math.Round(*a.Value)), nil
}

// statsFromCells reads leadCellStatsBody's answer; top lists come whole
// (count descending, key ascending).
func statsFromCells(r *searchResult, classes []string) (readmodel.PermitStats, error) {
	var st readmodel.PermitStats
	top := classSums(r.Aggregations)
	var err error
	if st.Total, err = top.total(classes); err != nil {
		return st, err
	}
	for _, c := range classes {
		n, err := top.sum(c)
		if err != nil {
			return st, err
		}
		switch c {
		case classHigh:
			st.ConfidenceHigh = n
		case classMedium:
			st.ConfidenceMedium = n
		default:
			st.ConfidenceLow += n
		}
	}
	var bySignal struct {
		SumOtherDocCount int64       `json:"sum_other_doc_count"`
		Buckets          []classSums `json:"buckets"`
	}
	if err := json.Unmarshal(r.Aggregations["by_signal"], &bySignal); err != nil {
		return st, fmt.Errorf("opensearch: lead cells by_signal: %w", err)
	}
	if bySignal.SumOtherDocCount > 0 {
		return st, fmt.Errorf("opensearch: lead cells by_signal overflow maxTerms")
	}
	for _, b := range bySignal.Buckets {
		n, err := b.total(classes)
		if err != nil {
			return st, err
		}
		var key string
		if err := json.Unmarshal(b["key"], &key); err != nil {
			return st, fmt.Errorf("opensearch: lead cells by_signal key: %w", err)
		}
		if n > 0 {
			st.BySignal = append(st.BySignal, readmodel.ValueCount{Value: key, Count: n})
		}
	}
	sortCounts(st.BySignal)
	var fresh struct {
		Ranges struct {
			Buckets map[string]classSums `json:"buckets"`
		} `json:"ranges"`
	}
	if err := json.Unmarshal(r.Aggregations["freshness"], &fresh); err != nil {
		return st, fmt.Errorf("opensearch: lead cells freshness: %w", err)
	}
	for key, dst := range map[string]*int64{"d0_7": &st.Fresh0to7, "d8_14": &st.Fresh8to14, "d15_30": &st.Fresh15to30} {
		b, ok := fresh.Ranges.Buckets[key]
		if !ok {
			return st, fmt.Errorf("opensearch: lead cells freshness: no %s", key)
		}
		if *dst, err = b.total(classes); err != nil {
			return st, err
		}
	}
	st.Fresh31Plus = st.Total - st.Fresh0to7 - st.Fresh8to14 - st.Fresh15to30
	var tops struct {
		Kept map[string]json.RawMessage `json:"kept"`
	}
	if err := json.Unmarshal(r.Aggregations["tops"], &tops); err != nil {
		return st, fmt.Errorf("opensearch: lead cells tops: %w", err)
	}
	for kind, dst := range map[string]*[]readmodel.ValueCount{"county": &st.TopCounties, "city": &st.TopCities, "zip": &st.TopZips} {
		var k struct {
			Keys struct {
				SumOtherDocCount int64 `json:"sum_other_doc_count"`
				Buckets          []struct {
					Key string `json:"key"`
					N   struct {
						Value float64 `json:"value"`
					} `json:"n"`
				} `json:"buckets"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(tops.Kept[kind], &k); err != nil {
			return st, fmt.Errorf("opensearch: lead cells %s counters: %w", kind, err)
		}
		if k.Keys.SumOtherDocCount > 0 {
			return st, fmt.Errorf("opensearch: lead cells %s counters overflow maxTerms", kind)
		}
		for _, b := range k.Keys.Buckets {
			if n := int64(math.Round(b.N.Value)); n > 0 && b.Key != "" {
				*dst = append(*dst, readmodel.ValueCount{Value: b.Key, Count: n})
			}
		}
		sortCounts(*dst)
	}
	return st, nil
}

// sortCounts orders a list by count descending, value ascending.
func sortCounts(l []readmodel.ValueCount) {
	slices.SortFunc(l, func(a, b readmodel.ValueCount) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Value, b.Value)
	})
}
