package indexer

import (
	"sync"
	"sync/atomic"

	"github.com/permitd/permitd/events"
)

// geoIDs memoises events.GeoID for one scope (a SHA-256 and three
// allocations per call otherwise, twice per permit). A code of the
// scope's usual shape (five digits for ZIPs, two capital letters for
// states) has a slot of its own in fixed, found by the code's value and
// read without a lock or a hash: every permit and property asks for its
// ZIP's and its state's, from the partitions' decoders on both cores at
// once, and a shared read lock was a cache line that moved between them
// on each call. Other codes go to the map. Bounded: the projections
// validate the codes first, so a scope holds at most 100,000 entries.
type geoIDs struct {
	scope string
	fixed []atomic.Pointer[string] // by slot(code); set once each (the id is a function of the code)
	slot  func(code string) int    // fixed's index of code, or -1 when it has none
	mu    sync.RWMutex
	ids   map[string]string
}

var (
	// The slots are zero pages until a code is first asked for.
	zipFixed   [100_000]atomic.Pointer[string]
	stateFixed [26 * 26]atomic.Pointer[string]

	zipIDs   = &geoIDs{scope: "zip", fixed: zipFixed[:], slot: zipSlot, ids: map[string]string{}}
	stateIDs = &geoIDs{scope: "state", fixed: stateFixed[:], slot: stateSlot, ids: map[string]string{}}
)

// zipSlot is the value of a five-digit code, or -1.
func zipSlot(code string) int {
	if len(code) != 5 {
		return -1
	}
	n := 0
	for i := range 5 {
		c := code[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// stateSlot numbers a code of two capital letters, or is -1.
func stateSlot(code string) int {
	if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
		return -1
	}
	return int(code[0]-'A')*26 + int(code[1]-'A')
}

// of returns events.GeoID(c.scope, code).
func (c *geoIDs) of(code string) string {
	if i := c.slot(code); i >= 0 {
		if id := c.fixed[i].Load(); id != nil {
			return *id
		}
		// Two goroutines may both compute it: the same id either way.
		id := events.GeoID(c.scope, code)
		c.fixed[i].Store(&id)
		return id
	}
	c.mu.RLock()
	id, ok := c.ids[code]
	c.mu.RUnlock()
	if ok {
		return id
	}
	id = events.GeoID(c.scope, code)
	c.mu.Lock()
	c.ids[code] = id
	c.mu.Unlock()
	return id
}
