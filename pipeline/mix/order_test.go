package mix_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/mix"
)

func TestHandleOrder(t *testing.T) {
	loc, permit, lead := events.TopicSpecs[0].Name, events.TopicSpecs[1].Name, events.TopicSpecs[4].Name
	type rec struct {
		topic string
		n     int
	}
	var recs []rec
	add := func(topic string, n int) {
		for range n {
			recs = append(recs, rec{topic, len(recs)})
		}
	}
	add(permit, 3)
	add(loc, 5)
	add(lead, 1)
	add("not.an.entity.topic", 2)
	add(permit, 2)
	locations, rest := mix.HandleOrder(recs, func(r rec) string { return r.topic }, 2)

	ns := func(bs [][]rec) (out [][]int) {
		for _, b := range bs {
			var o []int
			for _, r := range b {
				o = append(o, r.n)
			}
			out = append(out, o)
		}
		return out
	}
	require.Equal(t, [][]int{{3, 4}, {5, 6}, {7}}, ns(locations), "the locations' batches, in their order")
	// Permits before leads (TopicSpecs order), taking turns: a permit
	// batch, the lead batch, then the permits' other batches.
	require.Equal(t, [][]int{{0, 1}, {8}, {2, 11}, {12}}, ns(rest))
}
