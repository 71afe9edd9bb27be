package api

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/internal/cursor"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// defaultFreshnessDays is the window applied when include_stale is false
// and max_freshness_days is omitted.
const defaultFreshnessDays = 60

var (
	nonPropertyGeoTypes = []string{"jurisdiction", "city", "zip", "county", "state"}
	geoDecisions        = []string{"positive", "neutral", "negative"}
)

// stateKeys reads the state (WA when absent) and signal_keys (none when
// absent) of the catalog and the geo signal search.
func (q query) stateKeys() (string, []string, error) {
	state, err := q.state("state", "WA")
	if err != nil {
		return "", nil, err
	}
	keys, err := q.csv("signal_keys", nil)
	return state, keys, err
}

// catalog: GET /v1/signals/catalog.
func (s *server) catalog(c *gin.Context) error {
	q := queryOf(c)
	state, keys, err := q.stateKeys()
	if err != nil {
		return err
	}
	entries, err := s.Reader.Catalog(c.Request.Context(), readmodel.CatalogQuery{State: state, SignalKeys: keys})
	if err != nil {
		return err
	}
	buf := getBuf()
	*buf = appendCatalog(*buf, state, entries)
	s.send(c, buf)
	return nil
}

// geoSignalsForLocation: GET /v1/signals/geo/location/{geo_id}.
func (s *server) geoSignalsForLocation(c *gin.Context) error {
	geo, err := pathGeo(c)
	if err != nil {
		return err
	}
	keys, err := queryOf(c).csv("signal_keys", nil)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	var ls readmodel.LocationSignals
	if geo.IsProperty() {
		// A property is a geo_id too but has no geo signal rows: only
		// whether it exists, and its state.
		loc, err := s.Reader.Location(ctx, geo)
		if err != nil {
			return asNotFound(err, "location "+geo.ID())
		}
		ls = readmodel.LocationSignals{GeoType: loc.GeoType, State: loc.State}
	} else if ls, err = s.Reader.GeoSignalsForLocation(ctx, geo, keys); err != nil {
		return asNotFound(err, "location "+geo.ID())
	}
	buf := getBuf()
	*buf = appendGeoLocationSignals(*buf, geo.ID(), &ls, keys)
	s.send(c, buf)
	return nil
}

// searchGeoSignals: GET /v1/signals/geo/search.
func (s *server) searchGeoSignals(c *gin.Context) error {
	q := queryOf(c)
	state, keys, err := q.stateKeys()
	if err != nil {
		return err
	}
	gt, err := q.enum("", nonPropertyGeoTypes, "geo_type")
	if err != nil {
		return err
	}
	decision, err := q.enum("", geoDecisions, "decision")
	if err != nil {
		return err
	}
	minScore, err := q.floatIn("min_score", 0, 1)
	if err != nil {
		return err
	}
	limit, err := q.intIn("limit", readmodel.DefaultPageLimit, 1, readmodel.MaxPageLimit)
	if err != nil {
		return err
	}
	const endpoint = "geo_search"
	binding := cursor.Binding("state", state, "signal_keys", strings.Join(keys, ","), "geo_type", gt,
		"decision", decision, "min_score", floatParam(minScore))
	rq := readmodel.GeoSignalQuery{
		State: state, SignalKeys: keys, GeoType: readmodel.GeoType(gt), Decision: decision, MinScore: minScore, Limit: limit,
	}
	if rq.After, err = readCursor[readmodel.GeoSignalKey](s, q, endpoint, binding); err != nil {
		return err
	}
	page, err := s.Reader.SearchGeoSignals(c.Request.Context(), rq)
	if err != nil {
		return err
	}
	next, err := nextCursor(s, endpoint, binding, page.Next)
	if err != nil {
		return err
	}
	buf := getBuf()
	*buf = appendGeoSearch(*buf, state, page.Signals, next)
	s.send(c, buf)
	return nil
}

// leadParams are the parsed filters shared by leads and stats.
type leadParams struct {
	keys       []string // canonical order
	filter     readmodel.LeadFilter
	maxFresh   *int // effective window, echoed
	stale      bool
	bindingKVs []string
}

// leadFilters parses and checks the parameters leads and stats share. The
// anchor must be a known non-property geography.
func (s *server) leadFilters(c *gin.Context, q query) (leadParams, error) {
	var p leadParams
	geo, err := q.geo("geo_id")
	if err != nil {
		return p, err
	}
	req, err := q.csv("signal_keys", events.PermitSignalKeys)
	if err != nil {
		return p, err
	}
	for _, k := range events.PermitSignalKeys {
		if len(req) == 0 || slices.Contains(req, k) {
			p.keys = append(p.keys, k)
		}
	}
	from, to, err := q.dateWindow()
	if err != nil {
		return p, err
	}
	minConf, err := q.floatIn("min_confidence", 0, 1)
	if err != nil {
		return p, err
	}
	stale, err := q.boolean("include_stale", false)
	if err != nil {
		return p, err
	}
	_, hasMax, err := q.get("max_freshness_days")
	if err != nil {
		return p, err
	}
	if hasMax {
		n, err := q.intIn("max_freshness_days", 0, 1, 3650)
		if err != nil {
			return p, err
		}
		p.maxFresh = &n
	} else if !stale {
		n := defaultFreshnessDays
		p.maxFresh = &n
	}
	p.stale = stale
	p.filter = readmodel.LeadFilter{Geo: geo, SignalKeys: p.keys, FromDate: from, ToDate: to, MinConfidence: minConf}
	if p.maxFresh != nil {
		p.filter.FreshSince = s.today().AddDate(0, 0, -*p.maxFresh).Format(time.DateOnly)
	}
	window := ""
	if p.maxFresh != nil {
		window = strconv.Itoa(*p.maxFresh)
	}
	p.bindingKVs = []string{"geo_id", geo.ID(), "signal_keys", strings.Join(p.keys, ","), "from_date", from, "to_date", to,
		"min_confidence", floatParam(minConf), "max_freshness_days", window}

	if geo.IsProperty() {
		// Leads and stats read the anchor themselves (unknown: 404); a
		// property is looked up only to tell 404 from this 422.
		if _, err := s.Reader.Location(c.Request.Context(), geo); err != nil {
			return p, asNotFound(err, "location "+geo.ID())
		}
		return p, invalid("geo_id", "is a property; permit leads and stats need a jurisdiction, city, zip, county or state geo_id")
	}
	return p, nil
}

func floatParam(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// permitLeads: GET /v1/signals/permit/leads.
func (s *server) permitLeads(c *gin.Context) error {
	q := queryOf(c)
	sortBy, err := q.enum(string(readmodel.SortEventDateDesc), []string{string(readmodel.SortEventDateDesc), string(readmodel.SortConfidenceDesc)}, "sort")
	if err != nil {
		return err
	}
	groupBy, err := q.enum("none", []string{"none", "city", "zip"}, "group_by")
	if err != nil {
		return err
	}
	limit, err := q.intIn("limit", readmodel.DefaultPageLimit, 1, readmodel.MaxPageLimit)
	if err != nil {
		return err
	}
	if _, _, err := q.get("cursor"); err != nil {
		return err
	}
	p, err := s.leadFilters(c, q)
	if err != nil {
		return err
	}
	const endpoint = "permit_leads"
	binding := cursor.Binding(append(p.bindingKVs, "sort", sortBy)...)
	rq := readmodel.LeadQuery{Filter: p.filter, Sort: readmodel.LeadSort(sortBy), Limit: limit}
	if rq.After, err = readCursor[readmodel.LeadKey](s, q, endpoint, binding); err != nil {
		return err
	}
	page, err := s.Reader.PermitLeads(c.Request.Context(), rq)
	if err != nil {
		return asNotFound(err, "location "+p.filter.Geo.ID())
	}
	next, err := nextCursor(s, endpoint, binding, page.Next)
	if err != nil {
		return err
	}
	h := leadsHead{geoID: p.filter.Geo.ID(), geoType: page.GeoType, keys: p.keys, maxFresh: p.maxFresh}
	buf := getBuf()
	*buf = appendLeads(*buf, &h, groupBy, page.Leads, next, s.today())
	s.send(c, buf)
	return nil
}

// permitStats: GET /v1/signals/permit/stats.
func (s *server) permitStats(c *gin.Context) error {
	q := queryOf(c)
	p, err := s.leadFilters(c, q)
	if err != nil {
		return err
	}
	sq := readmodel.StatsQuery{Filter: p.filter, Today: s.today().Format(time.DateOnly), TopN: readmodel.StatsTopN}
	st, err := s.Reader.PermitStats(c.Request.Context(), sq)
	if err != nil {
		return asNotFound(err, "location "+p.filter.Geo.ID())
	}
	h := leadsHead{geoID: p.filter.Geo.ID(), geoType: st.GeoType, keys: p.keys, maxFresh: p.maxFresh}
	buf := getBuf()
	*buf = appendStats(*buf, &h, &st)
	s.send(c, buf)
	return nil
}
