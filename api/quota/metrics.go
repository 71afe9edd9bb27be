package quota

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the limiters' Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	decisions      *prometheus.CounterVec
	fallbackActive prometheus.Gauge
	redisErrors    prometheus.Counter
	recoveries     prometheus.Counter
	breaker        *prometheus.GaugeVec
	rejected       prometheus.Counter

	// counted holds the decision series already bound to their labels,
	// so that a decision is one map read, not a hash of its label values
	// under the vector's lock; copied on write (a handful of series).
	mu      sync.Mutex
	counted atomic.Pointer[map[decisionKey]prometheus.Counter]
}

type decisionKey struct{ store, result string }

// NewMetrics registers the metrics with reg:
//
//	permitd_quota_decisions_total{store,result}  store: redis, memory,
//	    fallback; result: allowed, rate, monthly_quota
//	permitd_quota_fallback_active                1 while Redis is
//	    unreachable and this replica limits in process
//	permitd_quota_redis_errors_total             failed Redis checks
//	permitd_quota_redis_recoveries_total         returns to Redis
//	permitd_redis_breaker_state{state}           1 for the circuit's state
//	    (closed, open, half-open), 0 for the others
//	permitd_redis_breaker_rejected_total         calls failed fast while
//	    the circuit was open
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "permitd_quota_decisions_total",
			Help: "Admission decisions by the store that made them and their result.",
		}, []string{"store", "result"}),
		fallbackActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "permitd_quota_fallback_active",
			Help: "1 while Redis is unreachable and this replica enforces limits in process.",
		}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_quota_redis_errors_total",
			Help: "Quota checks against Redis that failed and fell back to the in-process limiter.",
		}),
		recoveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_quota_redis_recoveries_total",
			Help: "Times the limiter went back to Redis after an outage.",
		}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "permitd_redis_breaker_state",
			Help: "State of the circuit breaker in front of Redis (key store and limiter): 1 for the current state.",
		}, []string{"state"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_redis_breaker_rejected_total",
			Help: "Key lookups and quota checks that did not try Redis because the circuit was open.",
		}),
	}
	for _, s := range breakerStates {
		m.breaker.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.decisions, m.fallbackActive, m.redisErrors, m.recoveries, m.breaker, m.rejected)
	}
	return m
}

func (m *Metrics) decided(store string, d Decision) {
	if m == nil {
		return
	}
	result := "allowed"
	if !d.Allowed {
		result = d.Reason
	}
	m.counter(decisionKey{store, result}).Inc()
}

func (m *Metrics) counter(k decisionKey) prometheus.Counter {
	if cur := m.counted.Load(); cur != nil {
		if c, ok := (*cur)[k]; ok {
			return c
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var old map[decisionKey]prometheus.Counter
	if cur := m.counted.Load(); cur != nil {
		old = *cur
	}
	if c, ok := old[k]; ok {
		return c
	}
	next := make(map[decisionKey]prometheus.Counter, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	c := m.decisions.WithLabelValues(k.store, k.result)
	next[k] = c
	m.counted.Store(&next)
	return c
}

func (m *Metrics) setFallback(on bool) {
	if m == nil {
		return
	}
	if on {
		m.fallbackActive.Set(1)
	} else {
		m.fallbackActive.Set(0)
		m.recoveries.Inc()
	}
}

func (m *Metrics) redisError() {
	if m != nil {
		m.redisErrors.Inc()
	}
}

var breakerStates = []string{"closed", "open", "half-open"}

func (m *Metrics) breakerState(state string) {
	if m == nil {
		return
	}
	for _, s := range breakerStates {
		v := 0.0
		if s == state {
			v = 1
		}
		m.breaker.WithLabelValues(s).Set(v)
	}
}

func (m *Metrics) breakerRejected() {
	if m != nil {
		m.rejected.Inc()
	}
}
