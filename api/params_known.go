package api

import (
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// acceptedParams lists, per route, every query parameter the route reads.
// A request that carries any other query parameter is a 422 naming it: a
// misspelt filter (permit_typ=) must not silently widen the answer a
// client pays for and trusts. TestAcceptedParamsMatchOpenAPI holds this
// table to the OpenAPI document.
var acceptedParams = map[string][]string{
	"/v1/health/live":                   {},
	"/v1/health/ready":                  {},
	"/v1/openapi.json":                  {},
	"/v1/locations/resolve":             {"query", "q", "text", "address", "state", "geo_type", "scope", "limit", "focus_lat", "focus_lon"},
	"/v1/locations/:geo_id":             {},
	"/v1/permits/search":                permitSearchParams,
	"/v1/permits/stats/monthly":         monthlyParams,
	"/v1/permits/export":                exportParams,
	"/v1/search/property":               {"address", "city", "state", "zipcode"},
	"/v1/property/:property_id/permits": {"limit", "cursor"},
	"/v1/signals/catalog":               {"state", "signal_keys"},
	"/v1/signals/geo/location/:geo_id":  {"signal_keys"},
	"/v1/signals/geo/search":            {"state", "signal_keys", "geo_type", "decision", "min_score", "limit", "cursor"},
	"/v1/signals/permit/leads": {"geo_id", "signal_keys", "from_date", "to_date", "min_confidence",
		"max_freshness_days", "include_stale", "sort", "group_by", "limit", "cursor"},
	"/v1/signals/permit/stats": {"geo_id", "signal_keys", "from_date", "to_date", "min_confidence",
		"max_freshness_days", "include_stale"},
}

// permitSearchParams are the parameters of GET /v1/permits/search.
var permitSearchParams = append([]string{"geo_id", "order", "from_date", "to_date", "limit", "cursor", permitSortParam}, append(permitFilterParams, permitGeometryParams...)...)

// withKnownParams rejects a query parameter the matched route does not
// read: 422 VALIDATION_ERROR naming it (the first in byte order when
// there are several). Routes missing from acceptedParams are not checked.
func withKnownParams(s *server) gin.HandlerFunc {
	return func(c *gin.Context) {
		allowed, ok := acceptedParams[c.FullPath()]
		if !ok {
			return
		}
		var unknown string
		for name := range queryOf(c).v {
			if !slices.Contains(allowed, name) && (unknown == "" || name < unknown) {
				unknown = name
			}
		}
		if unknown == "" {
			return
		}
		msg := "is not a parameter of this endpoint"
		if len(allowed) > 0 {
			msg += "; accepted: " + strings.Join(allowed, ", ")
		}
		writeError(c, s.log, &ValidationError{Param: clip(unknown), Msg: msg})
		c.Abort()
	}
}
