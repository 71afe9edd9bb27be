package faults

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/readmodel/opensearch"
)

// fakeCluster stands in for OpenSearch: each _msearch gets the next
// scripted status (the last one repeats); 200 answers every search with
// no hits. It records when each search arrived.
type fakeCluster struct {
	mu       sync.Mutex
	statuses []int
	delay    time.Duration
	arrivals []time.Time
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/_msearch") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"cluster_name":"fake","version":{"number":"2.19.0","distribution":"opensearch"}}`))
		return
	}
	lines := 0
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines++
		}
	}
	f.mu.Lock()
	f.arrivals = append(f.arrivals, time.Now())
	status := f.statuses[min(len(f.arrivals)-1, len(f.statuses)-1)]
	delay := f.delay
	f.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"type":"fault","reason":"injected"}}`))
		return
	}
	resp := make([]string, lines/2)
	for i := range resp {
		resp[i] = `{"status":200,"hits":{"total":{"value":0,"relation":"eq"},"hits":[]},"aggregations":{}}`
	}
	_, _ = w.Write([]byte(`{"took":1,"responses":[` + strings.Join(resp, ",") + `]}`))
}

func (f *fakeCluster) searches() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.arrivals...)
}

// TestOpenSearchFaults puts the opensearch backend in front of a cluster
// that fails, and checks what an API client sees: retried overload and
// node failures (with growing, jittered gaps) that end in an answer, or
// 503 BACKEND_UNAVAILABLE with Retry-After within the request deadline;
// never a generic 500, never a hang.
func TestOpenSearchFaults(t *testing.T) {
	const deadline = 800 * time.Millisecond
	for _, tc := range []struct {
		name     string
		statuses []int
		delay    time.Duration
		status   int // what the client sees
		searches int // attempts the cluster saw; 0: not checked
	}{
		{"503 twice, then answers", []int{503, 503, 200}, 0, http.StatusNotFound, 3},
		{"429 twice, then answers", []int{429, 429, 200}, 0, http.StatusNotFound, 3},
		{"502 throughout", []int{502}, 0, http.StatusServiceUnavailable, 4},
		{"429 throughout", []int{429}, 0, http.StatusServiceUnavailable, 4},
		{"500 is not retried", []int{500}, 0, http.StatusServiceUnavailable, 1},
		{"slower than the deadline", []int{200}, 5 * time.Second, http.StatusServiceUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeCluster{statuses: tc.statuses, delay: tc.delay}
			cluster := httptest.NewServer(fake)
			t.Cleanup(cluster.Close)
			store, err := opensearch.New(opensearch.Params{Addresses: []string{cluster.URL}, RequestTimeout: 10 * time.Second})
			require.NoError(t, err)
			t.Cleanup(func() { _ = store.Close() })
			h := apitest.New(t, apitest.Params{Server: api.Params{Reader: store, RequestTimeout: deadline}})

			start := time.Now()
			r := h.Get("/v1/locations/gabc")
			took := time.Since(start)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			assert.Less(t, took, deadline+time.Second, "bounded by the request deadline")
			if r.Status == http.StatusServiceUnavailable {
				assert.Contains(t, string(r.Body), `"BACKEND_UNAVAILABLE"`)
				assert.Equal(t, "2", r.Header.Get("Retry-After"))
			}
			got := fake.searches()
			if tc.searches > 0 {
				require.Len(t, got, tc.searches)
			}
			for i := 1; i < len(got); i++ {
				assert.Greater(t, got[i].Sub(got[i-1]), time.Duration(0), "retries wait")
			}
		})
	}
}
