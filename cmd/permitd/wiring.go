package main

import (
	"github.com/permitd/permitd/api/openapi"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel/memory"
)

// newMemoryReadModel is the embedded backend with its resolver.
func newMemoryReadModel() *memory.Store {
	return memory.New(memory.Options{})
}

// bundledProducers yields the bundled real data as events.
func bundledProducers(data string) []indexer.Producer {
	if data == "none" {
		return nil
	}
	return nil
}

// openAPIDocument is served at /v1/openapi.json.
func openAPIDocument() ([]byte, error) {
	return openapi.JSON()
}
