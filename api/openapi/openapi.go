// Package openapi holds the OpenAPI 3.0 document of the permitd v1 API
// (openapi.yaml, embedded) and serves it parsed or as JSON.
//
// The document is the contract that every handler test checks its responses
// against (see package openapitest), and the body of GET /v1/openapi.json.
package openapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var document []byte

var load = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: validate openapi.yaml: %w", err)
	}
	return doc, nil
})

// Load returns the parsed and validated document. It is parsed once; every
// call returns the same *openapi3.T, which callers must treat as read-only.
// An error means the embedded document is broken (a build defect, not a
// runtime condition), and is the same on every call.
func Load() (*openapi3.T, error) {
	return load()
}

var asJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode as JSON: %w", err)
	}
	return b, nil
})

// JSON returns the validated document encoded as JSON, the body of
// GET /v1/openapi.json. It is encoded once; each call returns a fresh copy.
func JSON() ([]byte, error) {
	b, err := asJSON()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}
