package conformance_test

import (
	"testing"

	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// TestMemory runs the suite against the embedded backend (always, in CI).
func TestMemory(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "memory",
		New: func(t *testing.T) conformance.Backend {
			return memory.New(memory.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
		},
		// The memory backend's capabilities list: what it lacks, and why.
		Lacks: map[conformance.Capability]string{
			conformance.CapUnlinkedListing: "the memory backend keeps its re-link file beside its snapshot instead (indexer/relink_save.go)",
		},
	})
}
