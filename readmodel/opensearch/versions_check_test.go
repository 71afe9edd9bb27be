package opensearch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestCheckVersions: a store whose sampled documents carry this build's
// external versions (3v, 3v+1, 3v+2) passes, and so does an empty one; a
// document written under the encoding before (2v, 2v+1) or the one before
// that (the entity version itself) is refused with ErrOtherEncoding,
// naming the index, the document and the fix. One _msearch of a sample
// of every document index.
func TestCheckVersions(t *testing.T) {
	type hit struct {
		v, ext int64
	}
	for _, tc := range []struct {
		name    string
		permits []hit // the permits index's sample; the other indices' are empty
		refused string
	}{
		{"empty", nil, ""},
		{"this build's encoding", []hit{{1, 3}, {1, 4}, {1, 5}, {7, 21}, {7, 22}, {7, 23}}, ""},
		{"2v+1, a linked document of version 7", []hit{{7, 22}, {7, 15}}, "src:1 of version 7 is stored at _version 15, where this build writes 21 to 23"},
		{"2v, an unlinked document of version 1", []hit{{1, 2}}, "src:0 of version 1 is stored at _version 2"},
		{"the entity version itself", []hit{{9, 9}}, "src:0 of version 9 is stored at _version 9, where this build writes 27 to 29"},
		{"above the ranks", []hit{{2, 9}}, "src:0 of version 2 is stored at _version 9, where this build writes 6 to 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var searches int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.Equal(t, "/_msearch", r.URL.Path)
				body, _ := io.ReadAll(r.Body)
				var resps []any
				sc := bufio.NewScanner(bytes.NewReader(body))
				for sc.Scan() {
					var head struct {
						Index string `json:"index"`
					}
					require.NoError(t, json.Unmarshal(sc.Bytes(), &head))
					require.True(t, sc.Scan())
					require.Contains(t, sc.Text(), `"version":true`)
					searches++
					hits := []any{}
					if head.Index == "permitd-permits" {
						for i, h := range tc.permits {
							hits = append(hits, obj{"_id": "src:" + string(rune('0'+i)), "_version": h.ext, "_source": obj{"version": h.v}})
						}
					}
					resps = append(resps, obj{"status": 200, "hits": obj{"hits": hits}})
				}
				_ = json.NewEncoder(w).Encode(obj{"responses": resps})
			}))
			defer srv.Close()
			s, err := New(Params{Addresses: []string{srv.URL}})
			require.NoError(t, err)
			err = s.CheckVersions(context.Background())
			require.Equal(t, len(readmodel.Kinds), searches, "a sample of every document index")
			if tc.refused == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrOtherEncoding)
			require.ErrorContains(t, err, "permitd-permits "+tc.refused)
			require.True(t, strings.Contains(err.Error(), "rebuild the indices by a replay"), err.Error())
		})
	}
}
