package indexer

import (
	"sync"

	"github.com/permitd/permitd/events"
)

// geoIDs memoises events.GeoID for one scope (a SHA-256 and three
// allocations per call otherwise, twice per permit). Bounded: the
// projections validate the codes first (ZIPs are five digits, states two
// letters), so a scope holds at most 100,000 entries.
type geoIDs struct {
	scope string
	mu    sync.RWMutex
	ids   map[string]string
}

var (
	zipIDs   = &geoIDs{scope: "zip", ids: map[string]string{}}
	stateIDs = &geoIDs{scope: "state", ids: map[string]string{}}
)

// of returns events.GeoID(c.scope, code).
func (c *geoIDs) of(code string) string {
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
