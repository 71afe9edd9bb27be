package indexer

import (
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// BacklogKinds turns a backlog of messages by topic (indexer/kafka
// Params.Backlog) into the documents of each kind they will write at
// most: each entity topic's events project into documents of its family
// (events.TopicSpecs), one per message. A topic that is not one of those
// is left out. The result sizes a replay (memory.(*Store).ReserveReplay);
// it is a bound, not a count: updates and deletes of one id write fewer.
func BacklogKinds(messages map[string]int64) map[readmodel.Kind]int64 {
	out := map[readmodel.Kind]int64{}
	for _, s := range events.TopicSpecs {
		if n := messages[s.Name]; n > 0 {
			out[readmodel.Kind(s.Family)] += n
		}
	}
	return out
}
