// Package openapitest checks HTTP responses against the permitd OpenAPI
// document, for use in every API test:
//
//	v := openapitest.New(t)
//	rec := v.Serve(t, server, httptest.NewRequest(http.MethodGet, "/v1/health/live", nil))
//	// or, with a response at hand:
//	v.Check(t, req, status, header, body)
//
// A check fails the test when the request matches no documented operation,
// when the status code is not documented for that operation, or when the
// headers or the body break the documented response (missing required field
// or header, wrong type, value out of range or enumeration, extra property
// where additionalProperties is false, wrong Content-Type).
//
// Requests are only routed, never validated: tests send invalid requests on
// purpose to get a documented 422.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/permitd/permitd/api/openapi"
)

// Validator matches requests to the operations of the document and
// validates responses against them. It is safe for concurrent use.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// New loads the document and builds a Validator; it stops the test when the
// document does not load.
func New(t testing.TB) *Validator {
	t.Helper()
	v, err := NewValidator()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	return v
}

// NewValidator is New for callers without a testing.TB.
func NewValidator() (*Validator, error) {
	doc, err := openapi.Load()
	if err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: build router: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
}

// Validate checks one response to req. It returns an error when req matches
// no operation of the document or the response breaks it. The request body
// is not read; body is not modified.
func (v *Validator) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	if req == nil {
		return errors.New("openapitest: nil request")
	}
	// Route on the path alone: the document's server is "/", and a test may
	// build its request from an absolute URL.
	routed := req.Clone(context.Background())
	routed.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	route, pathParams, err := v.router.FindRoute(routed)
	if err != nil {
		return fmt.Errorf("openapitest: %s %s matches no operation of the document: %w", req.Method, req.URL.Path, err)
	}
	if header == nil {
		header = http.Header{}
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true, // an undocumented status code is an error
		MultiError:            true, // report every problem at once
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    routed,
			PathParams: pathParams,
			Route:      route,
			Options:    opts,
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("openapitest: %s %s -> %d (operation %s): %w",
			req.Method, req.URL.RequestURI(), status, route.Operation.OperationID, err)
	}
	return nil
}

// Documented reports whether req's method and path match an operation of
// the document (any other path is one the API answers 404).
func (v *Validator) Documented(req *http.Request) bool {
	routed := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath}}
	_, _, err := v.router.FindRoute(routed)
	return err == nil
}

// Check fails t (without stopping it) when the response breaks the document;
// see Validate.
func (v *Validator) Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := v.Validate(req, status, header, body); err != nil {
		t.Errorf("%v\nresponse body: %s", err, truncate(body))
	}
}

// CheckRecorder is Check for a response captured by an httptest.ResponseRecorder.
func (v *Validator) CheckRecorder(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	res := rec.Result()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("openapitest: read recorded body: %v", err)
		return
	}
	v.Check(t, req, res.StatusCode, res.Header, body)
}

// Serve runs req through h, checks the response with Check and returns the
// recorder for further assertions.
func (v *Validator) Serve(t testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	v.CheckRecorder(t, req, rec)
	return rec
}

func truncate(b []byte) string {
	const limit = 2000
	if len(b) <= limit {
		return string(b)
	}
	return string(b[:limit]) + fmt.Sprintf("... (%d bytes)", len(b))
}
