package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/permitd/permitd/events"
)

// locationsFile writes n location events, ids from first on.
func locationsFile(t *testing.T, first, n int) string {
	t.Helper()
	var buf bytes.Buffer
	for i := first; i < first+n; i++ {
		env, err := events.New(events.LocationUpserted, fmt.Sprintf("g%05d", i), 1, time.Unix(1700000000, 0), "faults", events.Location{
			GeoType: "city", Name: "C", DisplayName: "C, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		})
		require.NoError(t, err)
		raw, err := json.Marshal(env)
		require.NoError(t, err)
		buf.Write(raw)
		buf.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), fmt.Sprintf("events-%d.ndjson", first))
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o600))
	return file
}

func publish(t *testing.T, brokers, file string) {
	t.Helper()
	out, err := exec.Command(permitd, "publish", "--brokers", brokers, "--file", file, "--partitions", "3", "--log-level", "error").CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// indexerState reads the indexer's readiness detail.
func indexerState(svc *service) (applied, lag float64, caughtUp bool) {
	_, checks := svc.ready()
	ix := checks["indexer"]
	applied, _ = ix["events_applied"].(float64)
	lag, _ = ix["lag"].(float64)
	caughtUp, _ = ix["caught_up"].(bool)
	return applied, lag, caughtUp
}

// TestKafkaBrokerGoneMidIngest cuts the broker off from the service's
// fetches in the middle of an ingest (every fetch gets its connection
// closed, as when the broker is gone), publishes more meanwhile, and
// brings it back: the indexer resumes by itself, applies every event
// exactly once (events_applied equals what was published, the read model
// holds every location) and reports lag 0 once caught up. While the
// broker is gone, readiness reports the lag behind the last high
// watermarks the consumer saw. Reads are served throughout.
func TestKafkaBrokerGoneMidIngest(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	var gone atomic.Bool
	cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if gone.Load() {
			return nil, errors.New("broker gone"), true
		}
		return nil, nil, false
	})
	brokers := cluster.ListenAddrs()[0]
	const first, second = 3000, 2000
	publish(t, brokers, locationsFile(t, 0, first))

	svc := startService(t, "-kafka-brokers", brokers)
	eventually(t, 30*time.Second, "the ingest starts", func() bool {
		applied, _, _ := indexerState(svc)
		return applied > 0
	})
	gone.Store(true)
	// Fetches already waiting at the broker (500ms long poll) end, and a
	// batch fetched before the cut is applied: the count then stays put
	// (polled, not a fixed sleep, so a loaded machine cannot make the
	// comparison below fail).
	var before float64
	eventually(t, 30*time.Second, "the applied count settles once the broker is gone", func() bool {
		a, _, _ := indexerState(svc)
		time.Sleep(time.Second)
		before, _, _ = indexerState(svc)
		return a == before
	})
	publish(t, brokers, locationsFile(t, first, second))
	time.Sleep(time.Second)
	during, lag, _ := indexerState(svc)
	t.Logf("during the outage: applied %v, lag %v", during, lag)
	assert.Equal(t, before, during, "nothing is applied while the broker is gone")
	assert.Less(t, during, float64(first+second))
	assert.Equal(t, float64(first)-during, lag, "the lag behind the last high watermarks seen (the first batch's) is reported")
	assert.Equal(t, 200, svc.get("/v1/health/live", "").Status)
	assert.Equal(t, 404, svc.get("/v1/locations/nowhere", svc.DevKey).Status, "reads are served meanwhile")

	gone.Store(false)
	eventually(t, 60*time.Second, "the indexer catches up after the broker is back", func() bool {
		applied, lag, caught := indexerState(svc)
		return caught && lag == 0 && applied >= first+second
	})
	applied, _, _ := indexerState(svc)
	assert.Equal(t, float64(first+second), applied, "every event applied exactly once")
	_, checks := svc.ready()
	docs, _ := checks["read_model"]["documents"].(map[string]any)
	assert.Equal(t, float64(first+second), docs["location"], "every location is in the read model")
	for _, id := range []string{"g00000", fmt.Sprintf("g%05d", first-1), fmt.Sprintf("g%05d", first), fmt.Sprintf("g%05d", first+second-1)} {
		assert.Equal(t, 200, svc.get("/v1/locations/"+id, svc.DevKey).Status, id)
	}
}
