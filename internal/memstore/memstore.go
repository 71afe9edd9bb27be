// Package memstore makes the embedded read model as serve runs it: the
// memory backend with its place resolver. Benchmarks that measure what a
// process does (a snapshot's load, a replay of the real mix) build their
// store here, so that they pay for the resolver's index of every
// location as serve does.
package memstore

import (
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
)

// New is an empty memory store with a resolver on each side.
func New() *memory.Store {
	return memory.New(Params())
}

// Params are New's: a resolver on each side. Serve adds what only a
// serving process sets (memory.Params.Background).
func Params() memory.Params {
	return memory.Params{NewResolver: func() memory.Resolver { return resolve.New() }}
}
