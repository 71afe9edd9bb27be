// What the load asks for: the resolve quality set's queries, and a property found through the running permitd.

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// resolveQueries are the resolve URLs of the quality set's rows.
func resolveQueries(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "query\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 || strings.TrimSpace(cols[0]) == "" {
			continue
		}
		v := url.Values{"query": {cols[0]}}
		if cols[1] != "" {
			v.Set("state", cols[1])
		}
		if cols[2] != "" {
			v.Set("geo_type", cols[2])
		}
		u := "/v1/locations/resolve?" + v.Encode()
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out, sc.Err()
}

// findProperty finds a Seattle permit's address that property search
// matches, and the property's id.
func findProperty(get func(string) (int, string, []byte, time.Duration, error), geoID string) (id, addr string, err error) {
	code, _, body, _, err := get("/v1/permits/search?limit=100&geo_id=" + geoID)
	if err != nil || code != http.StatusOK {
		return "", "", fmt.Errorf("permits search: %d %v", code, err)
	}
	var page struct {
		Permits []struct {
			Location struct {
				FullAddress *string `json:"full_address"`
			} `json:"location"`
		} `json:"permits"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return "", "", err
	}
	for _, p := range page.Permits {
		if p.Location.FullAddress == nil {
			continue
		}
		a := *p.Location.FullAddress
		code, _, body, _, err := get("/v1/search/property?address=" + url.QueryEscape(a))
		if err != nil || code != http.StatusOK {
			continue
		}
		var m struct {
			PropertyID string `json:"property_id"`
		}
		if json.Unmarshal(body, &m) == nil && m.PropertyID != "" {
			return m.PropertyID, a, nil
		}
	}
	return "", "", errors.New("no Seattle permit address matched a property")
}
