package indexer

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// validDate accepts exactly what time.Parse(time.DateOnly) accepts, over
// every month and day of a leap and a common year and malformed strings.
func TestValidDateIsTimeParse(t *testing.T) {
	cases := []string{"", "2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "0000-01-01", "9999-12-31",
		"2024-2-09", "2024-02-9", "24-02-09", "2024/02/09", "2024-02-09T00:00:00Z", "2024-02-09 ", " 2024-02-09",
		"2024-00-10", "2024-13-01", "2024-01-00", "2024-01-32", "2024-04-31", "2024-06-30", "abcd-ef-gh", "2024-0a-01",
		"+024-01-01", "2024-01-1\x00", "２０２４-01-01"}
	for _, y := range []int{2023, 2024} {
		for m := 0; m <= 13; m++ {
			for d := 0; d <= 32; d++ {
				cases = append(cases, fmt.Sprintf("%04d-%02d-%02d", y, m, d))
			}
		}
	}
	for _, s := range cases {
		_, err := time.Parse(time.DateOnly, s)
		want := s == "" || err == nil
		if got := validDate(s); got != want {
			t.Errorf("validDate(%q) = %v, time.Parse says %v", s, got, want)
		}
	}
}

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
