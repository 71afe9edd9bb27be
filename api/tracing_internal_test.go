package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestCopyRequestFields: copyRequest copies every exported field of
// http.Request (a field Go adds fails here until copyRequest copies it),
// and a spanRequest answers with the context it carries, then, released,
// with an ended context and none of the request's fields.
func TestCopyRequestFields(t *testing.T) {
	src := new(http.Request)
	v := reflect.ValueOf(src).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if !f.IsExported() {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x-" + f.Name)
		case reflect.Int, reflect.Int64:
			fv.SetInt(7)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan:
			switch fv.Kind() {
			case reflect.Pointer:
				fv.Set(reflect.New(fv.Type().Elem()))
			case reflect.Map:
				fv.Set(reflect.MakeMap(fv.Type()))
			case reflect.Slice:
				fv.Set(reflect.MakeSlice(fv.Type(), 1, 1))
			case reflect.Chan:
				fv.Set(reflect.MakeChan(reflect.ChanOf(reflect.BothDir, fv.Type().Elem()), 0).Convert(fv.Type()))
			}
		case reflect.Func:
			fv.Set(reflect.MakeFunc(fv.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		case reflect.Interface: // Body
			fv.Set(reflect.ValueOf(http.NoBody))
		default:
			t.Fatalf("field %s of kind %v: teach this test to set it", f.Name, fv.Kind())
		}
		if fv.IsZero() {
			t.Fatalf("field %s not set", f.Name)
		}
	}
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "span")
	sr := spanRequestPool.New().(*spanRequest)
	sr.carry(src, ctx)
	dv := reflect.ValueOf(&sr.req).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if !f.IsExported() {
			continue
		}
		a, b := v.FieldByIndex(f.Index), dv.FieldByIndex(f.Index)
		same := a.Kind() == reflect.Func && b.Pointer() == a.Pointer() ||
			a.Kind() != reflect.Func && reflect.DeepEqual(a.Interface(), b.Interface())
		if !same {
			t.Errorf("field %s not copied", f.Name)
		}
	}
	if sr.req.Context().Value(key{}) != "span" || sr.req.Context().Err() != nil {
		t.Fatalf("carried context: %v", sr.req.Context())
	}
	sr.release()
	if sr.req.Context().Value(key{}) != nil || sr.req.Context().Err() == nil || sr.req.URL != nil || sr.req.Header != nil {
		t.Fatalf("released: context %v, request %+v", sr.req.Context(), sr.req)
	}
}

// TestTraceIDAttr: the trace id is the same hex whether written into the
// request's state or made as a string; only the standard text and JSON
// handlers get the former.
func TestTraceIDAttr(t *testing.T) {
	id := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	const want = "4bf92f3577b34da6a3ce929d0e0e4736"
	var st reqState
	for _, inPlace := range []bool{true, false} {
		if a := traceIDAttr(&st, id, inPlace); a.Key != "trace_id" || a.Value.String() != want {
			t.Errorf("inPlace %v: %v", inPlace, a)
		}
	}
	if !formatsInPlace(slog.NewTextHandler(io.Discard, nil)) || !formatsInPlace(slog.NewJSONHandler(io.Discard, nil)) ||
		formatsInPlace(slog.DiscardHandler) {
		t.Error("formatsInPlace")
	}
}

// TestSpanNames: a span is named after its method and route pattern, the
// unmatched route after RouteUnmatched, and a non-standard method as sent
// without entering the table (any token may be a method).
func TestSpanNames(t *testing.T) {
	n := &spanNames{}
	n.m.Store(&map[string]*routeSpanNames{})
	for _, c := range []struct{ method, route, want string }{
		{"GET", "/v1/locations/:geo_id", "GET /v1/locations/:geo_id"},
		{"HEAD", "/v1/locations/:geo_id", "HEAD /v1/locations/:geo_id"},
		{"GET", "/v1/locations/:geo_id", "GET /v1/locations/:geo_id"},
		{"DELETE", "", "DELETE " + RouteUnmatched},
		{"PURGE", "/v1/permits/search", "PURGE /v1/permits/search"},
		{"TRACE", "/v1/permits/search", "TRACE /v1/permits/search"},
	} {
		if got := n.get(c.method, c.route); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.method, c.route, got, c.want)
		}
	}
	if got := len(*n.m.Load()); got != 3 {
		t.Errorf("%d routes in the table, want 3", got)
	}
	for i, m := range standardMethods {
		if methodIndex(m) != i || methodLabel(m) != m {
			t.Errorf("method %s: index %d, label %s", m, methodIndex(m), methodLabel(m))
		}
	}
}
