package indexer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/permitd/permitd/readmodel"
)

// Metrics are the indexer's Prometheus series. A nil *Metrics records
// nothing, so tests need not register anything.
type Metrics struct {
	Events      *prometheus.CounterVec // result: applied, stale
	Batches     prometheus.Counter
	BatchTime   prometheus.Histogram
	Retries     prometheus.Counter
	DeadLetters *prometheus.CounterVec // topic
	Lag         *prometheus.GaugeVec   // topic, partition
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "permitd_indexer_events_total", Help: "Documents and deletes written to the read model, by result.",
		}, []string{"result"}),
		Batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_indexer_batches_total", Help: "Batches made durable in the read model.",
		}),
		BatchTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "permitd_indexer_batch_seconds", Help: "Time to decode, project and apply one batch.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		Retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_indexer_retries_total", Help: "Retries after a transient failure: read-model writes, and the Kafka source's batches, commits and metadata reads.",
		}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "permitd_indexer_dead_letters_total", Help: "Messages sent to the dead-letter topic, by source topic.",
		}, []string{"topic"}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "permitd_indexer_consumer_lag", Help: "Messages behind the partition's newest high watermark seen, per owned partition.",
		}, []string{"topic", "partition"}),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.Batches, m.BatchTime, m.Retries, m.DeadLetters, m.Lag)
	}
	return m
}

func (m *Metrics) applied(res readmodel.ApplyResult) {
	if m == nil {
		return
	}
	m.Events.WithLabelValues("applied").Add(float64(res.Applied))
	m.Events.WithLabelValues("stale").Add(float64(res.Stale))
}

func (m *Metrics) batchDone(d time.Duration) {
	if m == nil {
		return
	}
	m.Batches.Inc()
	m.BatchTime.Observe(d.Seconds())
}

func (m *Metrics) retry() {
	if m != nil {
		m.Retries.Inc()
	}
}

func (m *Metrics) deadLetter(topic string) {
	if m != nil {
		m.DeadLetters.WithLabelValues(topic).Inc()
	}
}
