package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/cursor"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// defaultFreshnessDays is the window applied when include_stale is false
// and max_freshness_days is omitted.
const defaultFreshnessDays = 60

// statsTopN bounds top_counties, top_cities and top_zips.
const statsTopN = 10

var (
	nonPropertyGeoTypes = []string{"jurisdiction", "city", "zip", "county", "state"}
	geoDecisions        = []string{"positive", "neutral", "negative"}
)

type catalogEntryJSON struct {
	SignalKey              string          `json:"signal_key"`
	ActiveSignalVersion    string          `json:"active_signal_version"`
	ActiveWeightsProfileID string          `json:"active_weights_profile_id"`
	Status                 string          `json:"status"`
	Spec                   json.RawMessage `json:"spec"`
}

type catalogResponse struct {
	State   string             `json:"state"`
	Count   int                `json:"count"`
	Signals []catalogEntryJSON `json:"signals"`
}

// catalog: GET /v1/signals/catalog.
func (s *server) catalog(c *gin.Context) error {
	q := newQuery(c.Request.URL)
	state, err := q.state("state", "WA")
	if err != nil {
		return err
	}
	keys, err := q.csv("signal_keys", nil)
	if err != nil {
		return err
	}
	entries, err := s.Reader.Catalog(c.Request.Context(), readmodel.CatalogQuery{State: state, SignalKeys: keys})
	if err != nil {
		return err
	}
	out := catalogResponse{State: state, Count: len(entries), Signals: make([]catalogEntryJSON, 0, len(entries))}
	for _, e := range entries {
		spec := e.Spec
		if len(spec) == 0 {
			spec = json.RawMessage(`{}`)
		}
		out.Signals = append(out.Signals, catalogEntryJSON{
			SignalKey:              e.SignalKey,
			ActiveSignalVersion:    e.ActiveSignalVersion,
			ActiveWeightsProfileID: e.ActiveWeightsProfileID,
			Status:                 e.Status,
			Spec:                   spec,
		})
	}
	c.JSON(http.StatusOK, out)
	return nil
}

type geoSignalJSON struct {
	SignalKey  string          `json:"signal_key"`
	Value      json.RawMessage `json:"value"`
	Score      float64         `json:"score"`
	Confidence float64         `json:"confidence"`
	Decision   string          `json:"decision"`
	Reasons    []string        `json:"reasons"`
	ComputedAt string          `json:"computed_at"`
}

func geoSignalOf(g readmodel.GeoSignal) geoSignalJSON {
	v := g.Value
	if len(v) == 0 {
		v = json.RawMessage(`{}`)
	}
	reasons := g.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	return geoSignalJSON{
		SignalKey:  g.SignalKey,
		Value:      v,
		Score:      g.Score,
		Confidence: g.Confidence,
		Decision:   g.Decision,
		Reasons:    reasons,
		ComputedAt: g.ComputedAt.UTC().Format(time.RFC3339),
	}
}

type geoLocationSignalsResponse struct {
	GeoID             string          `json:"geo_id"`
	GeoType           string          `json:"geo_type"`
	State             *string         `json:"state"`
	Count             int             `json:"count"`
	Signals           []geoSignalJSON `json:"signals"`
	MissingSignalKeys []string        `json:"missing_signal_keys"`
}

// geoSignalsForLocation: GET /v1/signals/geo/location/{geo_id}.
func (s *server) geoSignalsForLocation(c *gin.Context) error {
	id := strings.TrimSpace(c.Param("geo_id"))
	if err := checkID("geo_id", id); err != nil {
		return err
	}
	keys, err := newQuery(c.Request.URL).csv("signal_keys", nil)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	var ls readmodel.LocationSignals
	if readmodel.IsPropertyID(id) {
		// A property is a geo_id too but has no geo signal rows: only
		// whether it exists, and its state.
		loc, err := s.Reader.Location(ctx, id)
		if err != nil {
			return asNotFound(err, "location "+id)
		}
		ls = readmodel.LocationSignals{GeoType: loc.GeoType, State: loc.State}
	} else if ls, err = s.Reader.GeoSignalsForLocation(ctx, id, keys); err != nil {
		return asNotFound(err, "location "+id)
	}
	rows := ls.Signals
	out := geoLocationSignalsResponse{
		GeoID:             id,
		GeoType:           string(ls.GeoType),
		State:             nullable(strings.ToUpper(ls.State)),
		Count:             len(rows),
		Signals:           make([]geoSignalJSON, 0, len(rows)),
		MissingSignalKeys: []string{},
	}
	have := map[string]bool{}
	for _, g := range rows {
		have[g.SignalKey] = true
		out.Signals = append(out.Signals, geoSignalOf(g))
	}
	for _, k := range keys {
		if !have[k] {
			out.MissingSignalKeys = append(out.MissingSignalKeys, k)
		}
	}
	c.JSON(http.StatusOK, out)
	return nil
}

type geoSearchSignalJSON struct {
	geoSignalJSON
	GeoID       string `json:"geo_id"`
	GeoType     string `json:"geo_type"`
	DisplayName string `json:"display_name"`
}

type geoSearchResponse struct {
	State      string                `json:"state"`
	Count      int                   `json:"count"`
	Signals    []geoSearchSignalJSON `json:"signals"`
	NextCursor *string               `json:"next_cursor"`
}

// searchGeoSignals: GET /v1/signals/geo/search.
func (s *server) searchGeoSignals(c *gin.Context) error {
	q := newQuery(c.Request.URL)
	state, err := q.state("state", "WA")
	if err != nil {
		return err
	}
	keys, err := q.csv("signal_keys", nil)
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
	limit, err := q.intIn("limit", 25, 1, 100)
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
	out := geoSearchResponse{State: state, Count: len(page.Signals), Signals: make([]geoSearchSignalJSON, 0, len(page.Signals))}
	for _, g := range page.Signals {
		out.Signals = append(out.Signals, geoSearchSignalJSON{
			geoSignalJSON: geoSignalOf(g), GeoID: g.GeoID, GeoType: string(g.GeoType), DisplayName: g.DisplayName,
		})
	}
	if out.NextCursor, err = nextCursor(s, endpoint, binding, page.Next); err != nil {
		return err
	}
	c.JSON(http.StatusOK, out)
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
	id, err := q.id("geo_id")
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
	from, err := q.date("from_date")
	if err != nil {
		return p, err
	}
	to, err := q.date("to_date")
	if err != nil {
		return p, err
	}
	if err := dateRange(from, to); err != nil {
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
	p.filter = readmodel.LeadFilter{GeoID: id, SignalKeys: p.keys, FromDate: from, ToDate: to, MinConfidence: minConf}
	if p.maxFresh != nil {
		p.filter.FreshSince = s.today().AddDate(0, 0, -*p.maxFresh).Format(time.DateOnly)
	}
	window := ""
	if p.maxFresh != nil {
		window = strconv.Itoa(*p.maxFresh)
	}
	p.bindingKVs = []string{"geo_id", id, "signal_keys", strings.Join(p.keys, ","), "from_date", from, "to_date", to,
		"min_confidence", floatParam(minConf), "max_freshness_days", window}

	if readmodel.IsPropertyID(id) {
		// Leads and stats read the anchor themselves (unknown: 404); a
		// property is looked up only to tell 404 from this 422.
		if _, err := s.Reader.Location(c.Request.Context(), id); err != nil {
			return p, asNotFound(err, "location "+id)
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

type leadLocationJSON struct {
	FullAddress *string `json:"full_address"`
	City        *string `json:"city"`
	State       *string `json:"state"`
	Zipcode     *string `json:"zipcode"`
	County      *string `json:"county"`
	CityNorm    *string `json:"city_norm"`
	ZipcodeNorm *string `json:"zipcode_norm"`
	CountyNorm  *string `json:"county_norm"`
}

type leadJSON struct {
	LeadID           string           `json:"lead_id"`
	SignalKey        string           `json:"signal_key"`
	EventDateUsed    *string          `json:"event_date_used"`
	SignalBasis      string           `json:"signal_basis"`
	Confidence       *float64         `json:"confidence"`
	ReasonCodes      []string         `json:"reason_codes"`
	FreshnessLagDays *int             `json:"freshness_lag_days"`
	PermitNumber     *string          `json:"permit_number"`
	Jurisdiction     *string          `json:"jurisdiction"`
	Location         leadLocationJSON `json:"location"`
	MapsURL          *string          `json:"maps_url"`
}

// freshnessLag is whole days from date to today, clamped at 0; nil for a
// null or malformed date.
func freshnessLag(date string, today time.Time) *int {
	if date == "" {
		return nil
	}
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil
	}
	n := max(int(today.Sub(d).Hours()/24), 0)
	return &n
}

func leadOf(l readmodel.Lead, today time.Time) leadJSON {
	codes := l.ReasonCodes
	if codes == nil {
		codes = []string{}
	}
	loc := l.Location
	return leadJSON{
		LeadID:           l.LeadID,
		SignalKey:        l.SignalKey,
		EventDateUsed:    nullable(l.EventDateUsed),
		SignalBasis:      l.SignalBasis,
		Confidence:       l.Confidence,
		ReasonCodes:      codes,
		FreshnessLagDays: freshnessLag(l.EventDateUsed, today),
		PermitNumber:     nullable(l.PermitNumber),
		Jurisdiction:     nullable(l.Jurisdiction),
		Location: leadLocationJSON{
			FullAddress: nullable(loc.FullAddress),
			City:        nullable(loc.City),
			State:       nullable(loc.State),
			Zipcode:     nullable(loc.Zipcode),
			County:      nullable(loc.County),
			CityNorm:    nullable(loc.CityNorm),
			ZipcodeNorm: nullable(loc.ZipcodeNorm),
			CountyNorm:  nullable(loc.CountyNorm),
		},
		MapsURL: nullable(l.MapsURL),
	}
}

type leadGroupJSON struct {
	Key   string     `json:"key"`
	Count int        `json:"count"`
	Leads []leadJSON `json:"leads"`
}

type permitLeadsResponse struct {
	GeoID            string          `json:"geo_id"`
	GeoType          *string         `json:"geo_type"`
	Scope            string          `json:"scope"`
	SignalKeys       []string        `json:"signal_keys"`
	MaxFreshnessDays *int            `json:"max_freshness_days"`
	Count            int             `json:"count"`
	NextCursor       *string         `json:"next_cursor"`
	GroupBy          string          `json:"group_by"`
	Leads            []leadJSON      `json:"leads,omitempty"`
	Groups           []leadGroupJSON `json:"groups,omitempty"`
}

// permitLeads: GET /v1/signals/permit/leads.
func (s *server) permitLeads(c *gin.Context) error {
	q := newQuery(c.Request.URL)
	sortBy, err := q.enum(string(readmodel.SortEventDateDesc), []string{string(readmodel.SortEventDateDesc), string(readmodel.SortConfidenceDesc)}, "sort")
	if err != nil {
		return err
	}
	groupBy, err := q.enum("none", []string{"none", "city", "zip"}, "group_by")
	if err != nil {
		return err
	}
	limit, err := q.intIn("limit", 25, 1, 100)
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
		return asNotFound(err, "location "+p.filter.GeoID)
	}
	today := s.today()
	gt := string(page.GeoType)
	out := permitLeadsResponse{
		GeoID:            p.filter.GeoID,
		GeoType:          &gt,
		Scope:            "permit",
		SignalKeys:       p.keys,
		MaxFreshnessDays: p.maxFresh,
		Count:            len(page.Leads),
		GroupBy:          groupBy,
	}
	leads := make([]leadJSON, 0, len(page.Leads))
	for _, l := range page.Leads {
		leads = append(leads, leadOf(l, today))
	}
	if groupBy == "none" {
		out.Leads = leads
		if out.Leads == nil {
			out.Leads = []leadJSON{}
		}
	} else {
		out.Groups = groupLeads(page.Leads, leads, groupBy)
	}
	if out.NextCursor, err = nextCursor(s, endpoint, binding, page.Next); err != nil {
		return err
	}
	if groupBy == "none" {
		c.JSON(http.StatusOK, out)
		return nil
	}
	// groups must be present even when empty; omitempty would drop it.
	c.JSON(http.StatusOK, groupedLeadsResponse{permitLeadsResponse: out, Groups: out.Groups})
	return nil
}

// groupedLeadsResponse always carries groups (possibly empty) and never
// leads.
type groupedLeadsResponse struct {
	permitLeadsResponse
	Groups []leadGroupJSON `json:"groups"`
}

// groupLeads partitions a page by city_norm or zipcode_norm ("unknown" for
// null), groups ordered by count descending then key ascending, leads in
// page order within a group.
func groupLeads(docs []readmodel.Lead, leads []leadJSON, by string) []leadGroupJSON {
	idx := map[string]int{}
	groups := []leadGroupJSON{}
	for i, d := range docs {
		key := d.Location.CityNorm
		if by == "zip" {
			key = d.Location.ZipcodeNorm
		}
		if key == "" {
			key = "unknown"
		}
		j, ok := idx[key]
		if !ok {
			j = len(groups)
			idx[key] = j
			groups = append(groups, leadGroupJSON{Key: key, Leads: []leadJSON{}})
		}
		groups[j].Leads = append(groups[j].Leads, leads[i])
		groups[j].Count++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].Count != groups[j].Count {
			return groups[i].Count > groups[j].Count
		}
		return groups[i].Key < groups[j].Key
	})
	return groups
}

type signalCountJSON struct {
	SignalKey string `json:"signal_key"`
	Count     int64  `json:"count"`
}

type valueCountJSON struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

type confidenceDistJSON struct {
	High   int64 `json:"high"`
	Medium int64 `json:"medium"`
	Low    int64 `json:"low"`
}

type freshnessDistJSON struct {
	D0to7   int64 `json:"0_7"`
	D8to14  int64 `json:"8_14"`
	D15to30 int64 `json:"15_30"`
	D31Plus int64 `json:"31_plus"`
}

type permitStatsResponse struct {
	GeoID                  string             `json:"geo_id"`
	GeoType                *string            `json:"geo_type"`
	Scope                  string             `json:"scope"`
	SignalKeys             []string           `json:"signal_keys"`
	MaxFreshnessDays       *int               `json:"max_freshness_days"`
	TotalActiveLeads       int64              `json:"total_active_leads"`
	SignalsBreakdown       []signalCountJSON  `json:"signals_breakdown"`
	TopCounties            []valueCountJSON   `json:"top_counties"`
	TopCities              []valueCountJSON   `json:"top_cities"`
	TopZips                []valueCountJSON   `json:"top_zips"`
	ConfidenceDistribution confidenceDistJSON `json:"confidence_distribution"`
	FreshnessDistribution  freshnessDistJSON  `json:"freshness_distribution"`
}

// permitStats: GET /v1/signals/permit/stats.
func (s *server) permitStats(c *gin.Context) error {
	q := newQuery(c.Request.URL)
	p, err := s.leadFilters(c, q)
	if err != nil {
		return err
	}
	st, err := s.Reader.PermitStats(c.Request.Context(), readmodel.StatsQuery{
		Filter: p.filter, Today: s.today().Format(time.DateOnly), TopN: statsTopN,
	})
	if err != nil {
		return asNotFound(err, "location "+p.filter.GeoID)
	}
	gt := string(st.GeoType)
	out := permitStatsResponse{
		GeoID:            p.filter.GeoID,
		GeoType:          &gt,
		Scope:            "permit",
		SignalKeys:       p.keys,
		MaxFreshnessDays: p.maxFresh,
		TotalActiveLeads: st.Total,
		SignalsBreakdown: make([]signalCountJSON, 0, len(p.keys)),
		TopCounties:      valueCounts(st.TopCounties),
		TopCities:        valueCounts(st.TopCities),
		TopZips:          valueCounts(st.TopZips),
		ConfidenceDistribution: confidenceDistJSON{
			High: st.ConfidenceHigh, Medium: st.ConfidenceMedium, Low: st.ConfidenceLow,
		},
		FreshnessDistribution: freshnessDistJSON{
			D0to7: st.Fresh0to7, D8to14: st.Fresh8to14, D15to30: st.Fresh15to30, D31Plus: st.Fresh31Plus,
		},
	}
	by := map[string]int64{}
	for _, vc := range st.BySignal {
		by[vc.Value] = vc.Count
	}
	for _, k := range p.keys {
		out.SignalsBreakdown = append(out.SignalsBreakdown, signalCountJSON{SignalKey: k, Count: by[k]})
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func valueCounts(v []readmodel.ValueCount) []valueCountJSON {
	out := make([]valueCountJSON, 0, min(len(v), statsTopN))
	for _, vc := range v {
		if len(out) == statsTopN {
			break
		}
		out = append(out, valueCountJSON{Value: vc.Value, Count: vc.Count})
	}
	return out
}
