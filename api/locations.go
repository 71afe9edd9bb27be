package api

import (
	"math"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/readmodel"
)

type candidateJSON struct {
	GeoID        string   `json:"geo_id"`
	GeoType      string   `json:"geo_type"`
	DisplayName  string   `json:"display_name"`
	Score        float64  `json:"score"`
	Confidence   float64  `json:"confidence"`
	MatchMethod  string   `json:"match_method"`
	Decision     string   `json:"decision"`
	Reasons      []string `json:"reasons"`
	State        *string  `json:"state"`
	County       *string  `json:"county"`
	City         *string  `json:"city"`
	Zipcode      *string  `json:"zipcode"`
	Jurisdiction *string  `json:"jurisdiction"`
	Lat          *float64 `json:"lat"`
	Lon          *float64 `json:"lon"`
}

type resolveResponse struct {
	Query      string          `json:"query"`
	Count      int             `json:"count"`
	Candidates []candidateJSON `json:"candidates"`
}

var geoTypeNames = func() []string {
	var out []string
	for _, t := range readmodel.GeoTypes {
		out = append(out, string(t))
	}
	return out
}()

// resolve: GET /v1/locations/resolve.
func (s *server) resolve(c *gin.Context) error {
	q := newQuery(c.Request.URL)
	text, err := q.text(true, 200, "query", "q", "text", "address")
	if err != nil {
		return err
	}
	state, err := q.state("state", "")
	if err != nil {
		return err
	}
	gt, err := q.enum("", geoTypeNames, "geo_type", "scope")
	if err != nil {
		return err
	}
	limit, err := q.intIn("limit", 10, 1, 20)
	if err != nil {
		return err
	}
	focus, err := q.focus()
	if err != nil {
		return err
	}
	cands, err := s.Reader.ResolveCandidates(c.Request.Context(), readmodel.ResolveQuery{
		Text: text, State: state, GeoType: readmodel.GeoType(gt), Limit: limit, Focus: focus,
	})
	if err != nil {
		return err
	}
	out := resolveResponse{Query: text, Count: len(cands), Candidates: make([]candidateJSON, 0, len(cands))}
	for _, cd := range cands {
		l := cd.Location
		reasons := cd.Reasons
		if reasons == nil {
			reasons = []string{}
		}
		out.Candidates = append(out.Candidates, candidateJSON{
			GeoID:        l.GeoID,
			GeoType:      string(l.GeoType),
			DisplayName:  l.DisplayName,
			Score:        round4(cd.Score),
			Confidence:   round4(cd.Confidence),
			MatchMethod:  cd.MatchMethod,
			Decision:     cd.Decision,
			Reasons:      reasons,
			State:        nullable(l.State),
			County:       nullable(l.County),
			City:         nullable(l.City),
			Zipcode:      nullable(l.Zipcode),
			Jurisdiction: nullable(l.Jurisdiction),
			Lat:          point(l.Lat, l.Lon, l.Lat),
			Lon:          point(l.Lat, l.Lon, l.Lon),
		})
	}
	c.JSON(http.StatusOK, out)
	return nil
}

type locationJSON struct {
	GeoID            string  `json:"geo_id"`
	GeoType          string  `json:"geo_type"`
	DisplayName      string  `json:"display_name"`
	FullAddress      *string `json:"full_address"`
	State            *string `json:"state"`
	County           *string `json:"county"`
	City             *string `json:"city"`
	Zipcode          *string `json:"zipcode"`
	Jurisdiction     *string `json:"jurisdiction"`
	Lat              float64 `json:"lat"`
	Lon              float64 `json:"lon"`
	PermitCount      int64   `json:"permit_count"`
	LatestPermitDate *string `json:"latest_permit_date"`
}

// location: GET /v1/locations/{geo_id}.
func (s *server) location(c *gin.Context) error {
	id := strings.TrimSpace(c.Param("geo_id"))
	if err := checkID("geo_id", id); err != nil {
		return err
	}
	l, err := s.Reader.Location(c.Request.Context(), id)
	if err != nil {
		return asNotFound(err, "location "+id)
	}
	c.JSON(http.StatusOK, locationJSON{
		GeoID:            l.GeoID,
		GeoType:          string(l.GeoType),
		DisplayName:      l.DisplayName,
		FullAddress:      nullable(l.FullAddress),
		State:            nullable(l.State),
		County:           nullable(l.County),
		City:             nullable(l.City),
		Zipcode:          nullable(l.Zipcode),
		Jurisdiction:     nullable(l.Jurisdiction),
		Lat:              l.Lat,
		Lon:              l.Lon,
		PermitCount:      l.PermitCount,
		LatestPermitDate: nullable(l.LatestPermitDate),
	})
	return nil
}

// checkID rejects ids that no entity can have (empty, too long, not
// URL-safe) before they reach the backend.
func checkID(param, id string) error {
	if id == "" || len(id) > 128 {
		return invalid(param, "must be 1..128 characters")
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return invalid(param, "must contain only letters, digits, '_' and '-'")
		}
	}
	return nil
}

// asNotFound names the missing resource in a 404.
func asNotFound(err error, what string) error {
	if err == readmodel.ErrNotFound {
		return notFound{what: what}
	}
	return err
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// point returns &v, or nil for a location without coordinates (lat and
// lon both 0: no US location lies there).
func point(lat, lon, v float64) *float64 {
	if lat == 0 && lon == 0 {
		return nil
	}
	return &v
}

func round4(f float64) float64 { return math.Round(f*10000) / 10000 }
