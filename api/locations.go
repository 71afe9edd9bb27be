package api

import (
	"math"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/readmodel"
)

var geoTypeNames = func() []string {
	var out []string
	for _, t := range readmodel.GeoTypes {
		out = append(out, string(t))
	}
	return out
}()

// resolve: GET /v1/locations/resolve.
func (s *server) resolve(c *gin.Context) error {
	q := queryOf(c)
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
	limit, err := q.intIn("limit", readmodel.DefaultResolveLimit, 1, readmodel.MaxMatchLimit)
	if err != nil {
		return err
	}
	focus, err := q.focus()
	if err != nil {
		return err
	}
	rq := readmodel.ResolveQuery{Text: text, State: state, GeoType: readmodel.GeoType(gt), Limit: limit, Focus: focus}
	cands, err := s.Reader.ResolveCandidates(c.Request.Context(), rq)
	if err != nil {
		return err
	}
	buf := getBuf()
	*buf = appendResolve(*buf, text, cands)
	s.send(c, buf)
	return nil
}

// location: GET /v1/locations/{geo_id}.
func (s *server) location(c *gin.Context) error {
	geo, err := pathGeo(c)
	if err != nil {
		return err
	}
	l, err := s.Reader.Location(c.Request.Context(), geo)
	if err != nil {
		return asNotFound(err, "location "+geo.ID())
	}
	buf := getBuf()
	*buf = appendLocation(*buf, &l)
	s.send(c, buf)
	return nil
}

// pathGeo returns the geo_id path parameter, parsed once here: trimmed,
// of a shape some entity can have (checkID).
func pathGeo(c *gin.Context) (readmodel.GeoRef, error) {
	id := strings.TrimSpace(c.Param("geo_id"))
	if err := checkID("geo_id", id); err != nil {
		return readmodel.GeoRef{}, err
	}
	return readmodel.ParseGeoRef(id), nil
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

func round4(f float64) float64 { return math.Round(f*10000) / 10000 }
