package indexer

import (
	"encoding/json"
	"testing"
)

// isObject is true for a JSON object only, as decoding it into a map
// says.
func TestIsObjectIsMapDecode(t *testing.T) {
	for _, s := range []string{`{}`, ` {"a":1}`, "\n{\"a\":[1,2]}\t", `{"a":}`, `{"a":1`, `[]`, `null`, `"x"`, `1`, ``, ` `, `{} {}`, `{}x`, `{"a":1}}`} {
		var m map[string]json.RawMessage
		want := json.Unmarshal([]byte(s), &m) == nil && m != nil
		if got := isObject(json.RawMessage(s)); got != want {
			t.Errorf("isObject(%q) = %v, want %v", s, got, want)
		}
	}
}
