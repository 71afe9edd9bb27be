// Package apitest builds an API over a memory read model for tests: data
// enters through the indexer's projection (events), every response is
// checked against the OpenAPI document.
package apitest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/openapi/openapitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel/memory"
)

// Key is the development key every harness accepts.
const Key = "test-key-0123456789"

// Harness is an API under test.
type Harness struct {
	T       testing.TB
	Store   *memory.Store
	Indexer *indexer.Indexer
	Handler http.Handler
	V       *openapitest.Validator
}

// Params tune a harness; zero values are sensible.
type Params struct {
	Server      api.Params             // fields left zero are filled in
	NewResolver func() memory.Resolver // one per side of the store (memory.Params)
	Now         time.Time              // service clock; zero: 2026-01-15T12:00:00Z
	// DeadLetter receives the messages the indexer refuses; nil fails
	// the test on the first one.
	DeadLetter indexer.DeadLetterFunc
	// Validator checks the responses; nil loads the document (a caller
	// that builds many harnesses loads it once).
	Validator *openapitest.Validator
}

// New builds a harness.
func New(t testing.TB, o Params) *Harness {
	t.Helper()
	store := memory.New(memory.Params{NewResolver: o.NewResolver})
	dead := o.DeadLetter
	if dead == nil {
		dead = func(_ context.Context, m indexer.Message, reason error) error {
			t.Errorf("dead letter at offset %d: %v", m.Offset, reason)
			return nil
		}
	}
	ix, err := indexer.New(indexer.Params{Writer: store, Lookup: store, DeadLetter: dead})
	if err != nil {
		t.Fatal(err)
	}
	d := o.Server
	if d.Reader == nil {
		d.Reader = store
	}
	if d.Auth == nil {
		d.Auth = apikey.NewDevKeys([]string{Key}, apikey.DefaultDevPlan)
	}
	if len(d.CursorSecret) == 0 {
		d.CursorSecret = []byte("apitest-cursor-secret-0123456789")
	}
	if d.Now == nil {
		now := o.Now
		if now.IsZero() {
			now = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
		}
		d.Now = func() time.Time { return now }
	}
	h, err := api.NewServer(d)
	if err != nil {
		t.Fatal(err)
	}
	v := o.Validator
	if v == nil {
		v = openapitest.New(t)
	}
	return &Harness{T: t, Store: store, Indexer: ix, Handler: h, V: v}
}

// Publish projects envelopes into the read model as one batch.
func (h *Harness) Publish(envs ...events.Envelope) {
	h.T.Helper()
	msgs := make([]indexer.Message, 0, len(envs))
	for i, e := range envs {
		raw, err := json.Marshal(e)
		if err != nil {
			h.T.Fatal(err)
		}
		msgs = append(msgs, indexer.Message{Topic: "test", Offset: int64(i), Key: []byte(e.EntityID), Value: raw})
	}
	h.handle(msgs)
}

// PublishRaw projects message values as they would come from Kafka (one
// batch, no keys): what the indexer refuses goes to Params.DeadLetter.
func (h *Harness) PublishRaw(raws ...[]byte) {
	h.T.Helper()
	msgs := make([]indexer.Message, 0, len(raws))
	for i, raw := range raws {
		msgs = append(msgs, indexer.Message{Topic: "test", Offset: int64(i), Value: raw})
	}
	h.handle(msgs)
}

func (h *Harness) handle(msgs []indexer.Message) {
	h.T.Helper()
	if err := h.Indexer.HandleBatch(context.Background(), msgs); err != nil {
		h.T.Fatal(err)
	}
}

// Response is a recorded response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Get requests path with the harness key.
func (h *Harness) Get(path string) Response {
	h.T.Helper()
	return h.Do(path, http.Header{"X-API-Key": {Key}})
}

// Do requests path with exactly the given headers and checks the response
// against the OpenAPI document.
func (h *Harness) Do(path string, header http.Header) Response {
	h.T.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	rec := h.V.Serve(h.T, h.Handler, req)
	return Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// Location returns a location.upserted envelope for tests.
func Location(geoType, identity string, d events.Location, version int64) events.Envelope {
	d.GeoType = geoType
	env, err := events.New(events.LocationUpserted, events.GeoID(geoType, identity), version,
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", d)
	if err != nil {
		panic(err)
	}
	return env
}
