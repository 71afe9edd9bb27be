package quota

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is returned by Breaker.Do while the circuit is open: the call
// was not attempted.
var ErrOpen = errors.New("circuit open: Redis is unreachable")

// BreakerParams configures a Breaker.
type BreakerParams struct {
	// Probe is the background check that closes the circuit (PING);
	// required.
	Probe func(ctx context.Context) error
	// Failures is how many consecutive failed calls open the circuit;
	// default 3.
	Failures uint32
	// Timeout bounds every guarded call (the caller's context may end it
	// sooner); 0 leaves calls to their own deadlines.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between probes while the
	// circuit is open (exponential with jitter); defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics; nil records nothing.
	Metrics *Metrics
}

// Breaker is the circuit breaker in front of Redis, shared by the key
// store and the limiter (one Redis, one state). It is sony/gobreaker's
// state machine with one change of policy: only the background prober
// makes the half-open trial, never a request. Closed, every call goes to
// Redis under Timeout; after Failures consecutive failures the circuit
// opens and every call fails at once with ErrOpen (the key store then
// answers from its cache, the limiter in process). Run probes with
// exponential backoff and jitter; the first successful probe, after the
// hooks registered with BeforeClose (the limiter's reconciliation), closes
// the circuit.
type Breaker struct {
	p    BreakerParams
	cb   *gobreaker.CircuitBreaker[struct{}]
	log  *slog.Logger
	wake chan struct{}

	mu      sync.Mutex
	hooks   []func(ctx context.Context) error
	changes []func(open bool)
}

// callerGone marks an error caused by the caller's context: not Redis's
// fault, so not counted.
type callerGone struct{ err error }

func (e callerGone) Error() string { return e.err.Error() }
func (e callerGone) Unwrap() error { return e.err }

// NewBreaker returns a closed breaker; start Run for it to recover.
func NewBreaker(p BreakerParams) (*Breaker, error) {
	if p.Probe == nil {
		return nil, errors.New("quota: BreakerParams.Probe is required")
	}
	if p.Failures == 0 {
		p.Failures = 3
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(5*time.Second, p.MinBackoff)
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Breaker{p: p, log: p.Logger, wake: make(chan struct{}, 1)}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1,
		// Open for the shortest probe delay: after it the circuit is
		// half-open, and only the prober tries (see Do).
		Timeout:     p.MinBackoff,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= p.Failures },
		IsExcluded:  func(err error) bool { var cg callerGone; return errors.As(err, &cg) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.changed(from, to)
		},
	})
	p.Metrics.breakerState(gobreaker.StateClosed.String())
	return b, nil
}

// Open reports whether calls fail fast (open or half-open: Redis has not
// answered a probe yet).
func (b *Breaker) Open() bool { return b.cb.State() != gobreaker.StateClosed }

// BeforeClose registers fn to run after a successful probe and before
// the circuit closes; an error keeps the circuit open until the next
// probe.
func (b *Breaker) BeforeClose(fn func(ctx context.Context) error) {
	b.mu.Lock()
	b.hooks = append(b.hooks, fn)
	b.mu.Unlock()
}

// OnChange registers fn to be told when the circuit opens (true) or
// closes (false). fn runs under the breaker's lock: it must not call the
// breaker.
func (b *Breaker) OnChange(fn func(open bool)) {
	b.mu.Lock()
	b.changes = append(b.changes, fn)
	b.mu.Unlock()
}

// Do runs fn against Redis unless the circuit is open (ErrOpen, at once).
// fn gets a context bounded by Timeout; it returns nil for any answer
// Redis gave (a missing key is an answer) and an error only when Redis
// could not answer. A failure caused by ctx ending is not counted.
func (b *Breaker) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if b.cb.State() != gobreaker.StateClosed {
		b.p.Metrics.breakerRejected()
		return ErrOpen
	}
	_, err := b.cb.Execute(func() (struct{}, error) {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if b.p.Timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, b.p.Timeout)
		}
		defer cancel()
		err := fn(cctx)
		if err != nil && ctx.Err() != nil {
			err = callerGone{err}
		}
		return struct{}{}, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		b.p.Metrics.breakerRejected()
		return ErrOpen
	}
	var cg callerGone
	if err != nil && !errors.As(err, &cg) {
		b.p.Metrics.redisError()
	}
	return err
}

func (b *Breaker) changed(from, to gobreaker.State) {
	b.p.Metrics.breakerState(to.String())
	var open bool
	switch {
	case from == gobreaker.StateClosed && to == gobreaker.StateOpen:
		open = true
		b.log.Warn("redis breaker: open; keys are checked from the cache and limits enforced in process until Redis answers",
			"after_failures", b.p.Failures)
		select {
		case b.wake <- struct{}{}:
		default:
		}
	case to == gobreaker.StateClosed:
		b.log.Info("redis breaker: closed; Redis answers again")
	default:
		return // open <-> half-open: the prober's business
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, fn := range b.changes {
		fn(open)
	}
}

// Run probes Redis while the circuit is open and closes it when a probe
// and the BeforeClose hooks succeed. It returns nil when ctx ends.
func (b *Breaker) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.wake:
		}
		if !b.recover(ctx) {
			return nil
		}
	}
}

func (b *Breaker) recover(ctx context.Context) bool {
	backoff := b.p.MinBackoff
	t := time.NewTimer(jitter(backoff))
	defer t.Stop()
	for attempts := 1; ; attempts++ {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if b.cb.State() == gobreaker.StateClosed {
			return true
		}
		_, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, b.probe(ctx) })
		if err == nil && !b.Open() {
			b.log.Info("redis breaker: probe succeeded", "probes", attempts)
			return true
		}
		b.log.Debug("redis breaker: Redis still unreachable", "err", err, "next_probe", backoff)
		backoff = min(backoff*2, b.p.MaxBackoff)
		t.Reset(jitter(backoff))
	}
}

func (b *Breaker) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, max(b.p.Timeout, time.Second))
	defer cancel()
	if err := b.p.Probe(pctx); err != nil {
		return err
	}
	b.mu.Lock()
	hooks := append([]func(context.Context) error(nil), b.hooks...)
	b.mu.Unlock()
	for _, fn := range hooks {
		if err := fn(ctx); err != nil {
			return err
		}
	}
	return nil
}
