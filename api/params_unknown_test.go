package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/test/conformance"
)

// TestUnknownParamIs422 sends a misspelt parameter to every endpoint: a
// 422 VALIDATION_ERROR naming it, while the endpoint's own parameters
// still answer.
func TestUnknownParamIs422(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	h.Publish(conformance.LocationEvents(t)...)
	paths := []string{"/v1/health/live", "/v1/health/ready", "/v1/openapi.json"}
	for _, ep := range endpoints {
		q := url.Values{}
		for k, vs := range ep.base {
			q[k] = vs
		}
		paths = append(paths, ep.path+"?"+q.Encode())
	}
	for _, p := range paths {
		for bad, named := range map[string]string{"permit_typ": `"permit_typ"`, "GEO_ID": `"GEO_ID"`, "limit%20": `"limit "`, "x%FF": `"x`} {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			r := h.Get(p + sep + bad + "=1")
			if r.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s with %s: status %d: %.200s", p, bad, r.Status, r.Body)
				continue
			}
			var e stdError
			r.JSON(t, &e)
			if e.Error.Code != "VALIDATION_ERROR" || !strings.Contains(e.Error.Message, named) ||
				!strings.Contains(e.Error.Message, "not a parameter of this endpoint") {
				t.Errorf("%s with %s: body %s", p, bad, r.Body)
			}
		}
	}
	if r := h.Get("/v1/permits/search?geo_id=" + conformance.Zip98101 + "&limit=5"); r.Status != http.StatusOK {
		t.Errorf("known parameters: status %d: %s", r.Status, r.Body)
	}
}
