package api

import (
	"fmt"

	"github.com/permitd/permitd/api/internal/cursor"
)

// positionChecker is implemented by search_after keys that can tell a
// well-formed position from a signed but meaningless one.
type positionChecker interface{ validPosition() bool }

// readCursor reads the optional "cursor" parameter as a search_after key
// of type K made by endpoint for this query's binding; nil when absent.
// Every failure wraps cursor.ErrInvalid: 422 naming "cursor".
func readCursor[K any](s *server, q query, endpoint, binding string) (*K, error) {
	tok, present, err := q.get("cursor")
	if err != nil || !present {
		return nil, err
	}
	var k K
	if err := s.cursors.Decode(tok, endpoint, binding, &k); err != nil {
		return nil, err
	}
	if pc, ok := any(&k).(positionChecker); ok && !pc.validPosition() {
		return nil, fmt.Errorf("%w: bad position", cursor.ErrInvalid)
	}
	return &k, nil
}

// nextCursor signs the key after the page's last item; nil (JSON null:
// no more pages) when next is nil.
func nextCursor[K any](s *server, endpoint, binding string, next *K) (*string, error) {
	if next == nil {
		return nil, nil
	}
	tok, err := s.cursors.Encode(endpoint, binding, next)
	if err != nil {
		return nil, err
	}
	return &tok, nil
}
