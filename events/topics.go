package events

import "fmt"

// Kafka topics. Each entity family has one topic; every message is one
// envelope keyed by its entity_id, so all versions of an entity land on one
// partition (and in order, as far as a producer keeps them in order; the
// per-entity version makes any order safe).
//
// Names are "permitd.<family plural>.v<SchemaVersion>": a new envelope
// schema version gets new topics that run beside the old ones. Words are
// joined with '-' because Kafka maps '.' and '_' to the same metric name,
// so a topic name mixing both can collide with another.
//
// See docs/kafka.md for partition guidance and retention.

// DeadLetterTopic receives every message the indexer can never project,
// with the reason and its source position in headers.
const DeadLetterTopic = "permitd.deadletter.v1"

// TopicSpec describes one entity family's topic.
type TopicSpec struct {
	Family string // Type.Family() of its events
	Name   string
	// Partitions is the suggested partition count: the unit of parallelism
	// for a shared consumer group (a durable backend). Sized for the
	// family's volume; more partitions than indexer replicas is fine.
	Partitions int
}

// TopicSpecs lists the entity topics in a fixed order.
var TopicSpecs = []TopicSpec{
	{Family: "location", Name: "permitd.locations.v1", Partitions: 3},
	{Family: "permit", Name: "permitd.permits.v1", Partitions: 12},
	{Family: "property", Name: "permitd.properties.v1", Partitions: 12},
	{Family: "geo_signal", Name: "permitd.geo-signals.v1", Partitions: 6},
	{Family: "permit_lead", Name: "permitd.permit-leads.v1", Partitions: 12},
	{Family: "catalog", Name: "permitd.catalog.v1", Partitions: 1},
}

// Topics returns the names of every entity topic, in TopicSpecs order.
func Topics() []string {
	out := make([]string, len(TopicSpecs))
	for i, s := range TopicSpecs {
		out[i] = s.Name
	}
	return out
}

// TopicFor returns the topic that carries events of type t. An unknown
// type is an error wrapping ErrInvalid.
func TopicFor(t Type) (string, error) {
	if t.Known() {
		f := t.Family()
		for _, s := range TopicSpecs {
			if s.Family == f {
				return s.Name, nil
			}
		}
	}
	return "", fmt.Errorf("%w: no topic for type %q", ErrInvalid, t)
}
