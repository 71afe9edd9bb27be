package opensearch

import (
	"maps"
	"slices"
	"strings"
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

// ids lists the plan's cells in order.
func (p *leadCellPlan) ids() []string {
	return slices.Sorted(maps.Keys(p.moves))
}

// leadCells is the lead cell work of one batch.
type leadCells = batchCells[leadPending]
