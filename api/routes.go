package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// routes registers every route in one place. Business routes sit behind
// the key check and the quota; health, the OpenAPI document and metrics
// do not.
func (s *server) routes(r *gin.Engine) {
	known := withKnownParams(s)
	r.GET("/v1/health/live", known, s.live)
	r.GET("/v1/health/ready", known, s.ready)
	r.GET("/v1/openapi.json", known, func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Data(http.StatusOK, "application/json", s.OpenAPI)
	})
	if s.Metrics != nil {
		r.GET("/metrics", gin.WrapH(s.Metrics))
	}

	v1 := r.Group("/v1", withAuth(s.Auth, s.log), s.withQuota(), known)
	v1.GET("/locations/resolve", s.handler(s.resolve))
	v1.GET("/locations/:geo_id", s.handler(s.location))
	v1.GET("/permits/search", s.handler(s.searchPermits))
	v1.GET("/permits/stats/monthly", s.handler(s.permitMonthly))
	v1.GET("/permits/export", s.handler(s.exportPermits))
	v1.GET("/search/property", s.handler(s.searchProperty))
	v1.GET("/property/:property_id/permits", s.handler(s.propertyPermits))
	v1.GET("/signals/catalog", s.handler(s.catalog))
	v1.GET("/signals/geo/location/:geo_id", s.handler(s.geoSignalsForLocation))
	v1.GET("/signals/geo/search", s.handler(s.searchGeoSignals))
	v1.GET("/signals/permit/leads", s.handler(s.permitLeads))
	v1.GET("/signals/permit/stats", s.handler(s.permitStats))
}
