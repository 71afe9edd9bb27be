package kafka

import kafkago "github.com/segmentio/kafka-go"

// WithGroupBalancers returns p with kafka-go's group balancers replaced,
// so that a test decides which member owns which partition.
func WithGroupBalancers(p Params, b ...kafkago.GroupBalancer) Params {
	p.balancers = b
	return p
}
