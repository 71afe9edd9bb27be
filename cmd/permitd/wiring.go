package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/permitd/permitd/readmodel"

	"github.com/permitd/permitd/api/openapi"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/internal/spareprocs"
	"github.com/permitd/permitd/readmodel/memory"
)

// readModel is what a process needs of its backend: reads for the API,
// writes for the indexer, and location lookups for projections.
type readModel interface {
	readmodel.Reader
	readmodel.Writer
	indexer.Lookup
}

// backends lists the read-model backends this build wires.
var backends = []string{"memory", "opensearch"}

func validBackend(b string) error {
	for _, x := range backends {
		if b == x {
			return nil
		}
	}
	return fmt.Errorf("backend %q: want one of %v", b, backends)
}

// openReadModel builds the configured backend; only cmd/ knows which.
// live is set when writes come while requests are answered (serve's
// Kafka indexer).
func openReadModel(ctx context.Context, backend string, os openSearchConfig, live bool, log *slog.Logger) (readModel, error) {
	if backend == "opensearch" {
		return newOpenSearchReadModel(ctx, os, log)
	}
	if live {
		log.Info("memory backend: spare Ps while it works beside its readers (a second side's build, live writes)",
			"allowed", spareprocs.Allowed(), "gomaxprocs", runtime.GOMAXPROCS(0), "min_procs", spareprocs.Min)
	}
	return newMemoryReadModel(live), nil
}

// newMemoryReadModel is the embedded backend with its resolver. With
// live writes, while it works beside its readers (a second side's build
// in the background after a replay or a snapshot's load, live writes),
// the runtime has spare Ps, so that requests are not held behind that
// work (internal/spareprocs). The bundled data alone is written before
// ready, and then never: nothing to give way to.
func newMemoryReadModel(live bool) *memory.Store {
	p := memstore.Params()
	if live {
		p.Background = spareprocs.During
	}
	return memory.New(p)
}

// openAPIDocument is served at /v1/openapi.json.
func openAPIDocument() ([]byte, error) {
	return openapi.JSON()
}
