package kafka

import kafkago "github.com/segmentio/kafka-go"

// WithGroupBalancers returns p with kafka-go's group balancers replaced,
// so that a test decides which member owns which partition.
func WithGroupBalancers(p Params, b ...kafkago.GroupBalancer) Params {
	p.balancers = b
	return p
}

// ReaderDialer is the dialer the consumer's readers use (plaintext), for
// benchmarks that read as the consumer does.
func ReaderDialer() *kafkago.Dialer {
	d, err := (*Security)(nil).dialer("permitd-bench")
	if err != nil {
		panic(err)
	}
	return d
}
