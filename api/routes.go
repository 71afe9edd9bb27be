package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/web"
)

// routes registers every route in one place. Business routes sit behind
// the failed-authentication throttle, the key check and the quota;
// health, the OpenAPI document and the web pages do not.
//
// Routing semantics, set here with the routes: every GET route answers
// HEAD too (the same handlers, so the same authentication, quota and
// headers; net/http sends no body); another method on a known path gets
// 405 with `Allow`; paths are matched on their raw form, so an encoded
// slash (%2F) stays inside its segment (and then fails the parameter's
// validation) instead of being routed as a separator; a path with a
// trailing slash or an empty segment is an unknown path (404 in the
// error body), never a redirect, whose body Gin would write as HTML (the
// pages answer at /docs/ and /explore/ too: web.Routes).
//
// Metrics are on the admin listener (NewAdmin), never here.
func (s *server) routes(r *gin.Engine) {
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false
	r.UseRawPath = true
	r.UnescapePathValues = true
	r.NoMethod(func(c *gin.Context) {
		rid := requestID(c)
		msg := "method " + c.Request.Method + " not allowed on " + c.Request.URL.Path + "; allowed: " + c.Writer.Header().Get("Allow")
		writeBody(c, http.StatusMethodNotAllowed, appendErrorBody(nil, CodeMethodNotAllowed, msg, rid))
	})

	get := func(g gin.IRoutes, path string, h ...gin.HandlerFunc) {
		g.GET(path, h...)
		g.HEAD(path, h...)
	}
	known := withKnownParams(s)
	get(r, "/v1/health/live", known, s.live)
	get(r, "/v1/health/ready", known, s.ready)
	get(r, "/v1/openapi.json", known, func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Data(http.StatusOK, "application/json", s.OpenAPI)
	})
	// The pages of package web (/docs, /explore): no key; their data calls
	// go through /v1 with the key the person types.
	for _, p := range web.Routes {
		get(r, p, func(c *gin.Context) {
			if !web.Serve(c.Writer, c.Request) {
				writeError(c, s.log, notFound{what: "page " + c.Request.URL.Path})
			}
		})
	}

	v1 := r.Group("/v1", newAuthThrottle(s.log).middleware(), withAuth(s.Auth, s.log), s.withQuota(), known)
	// The export streams for longer than one request may take: it bounds
	// each of its reads by the request timeout itself (export.go). Every
	// other business route is bounded as a whole.
	get(v1, "/permits/export", s.handler(s.exportPermits))
	v1 = v1.Group("", withDeadline(s.RequestTimeout))
	get(v1, "/locations/resolve", s.handler(s.resolve))
	get(v1, "/locations/:geo_id", s.handler(s.location))
	get(v1, "/permits/search", s.handler(s.searchPermits))
	get(v1, "/permits/stats/monthly", s.handler(s.permitMonthly))
	get(v1, "/search/property", s.handler(s.searchProperty))
	get(v1, "/property/:property_id/permits", s.handler(s.propertyPermits))
	get(v1, "/signals/catalog", s.handler(s.catalog))
	get(v1, "/signals/geo/location/:geo_id", s.handler(s.geoSignalsForLocation))
	get(v1, "/signals/geo/search", s.handler(s.searchGeoSignals))
	get(v1, "/signals/permit/leads", s.handler(s.permitLeads))
	get(v1, "/signals/permit/stats", s.handler(s.permitStats))
}
