package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice"
)

// Health is a [sluice.Hook] that answers liveness and readiness probes
// (see [Health.Live], [Health.Ready], the handlers and [Handler]). Create
// it with [NewHealth] just before Run (the startup grace counts from then)
// and pass it to [pipeline.WithHooks]. It is safe for concurrent use.
//
// It handles only the seven events it needs: polls, joins, stage
// failures, stuck values, completions, revokes and losses. It does not
// implement [sluice.HookStageCall], so registered alone it makes no
// stage read the clock.
type Health struct {
	now         func() time.Time
	pollTimeout time.Duration
	grace       time.Duration
	started     time.Time

	lastPoll atomic.Int64 // unix nanoseconds of the last poll; 0 before any
	joined   atomic.Bool
	// nstuck is read on every completion (OnRecordsCompleted), lastPoll
	// written on every poll: the padding keeps them on different cache
	// lines, so polls do not slow completions down.
	_      [64]byte
	nstuck atomic.Int32 // len(stuck), read without the lock

	mu     sync.Mutex
	failed error // the first OnStageFailed
	stuck  map[sluice.TopicPartition]stuckValue
}

// stuckValue is the newest stuck report of one partition.
type stuckValue struct {
	stage  string
	offset int64
	since  time.Duration
	at     time.Time
}

// The events Health handles.
var (
	_ sluice.HookPolled           = (*Health)(nil)
	_ sluice.HookJoined           = (*Health)(nil)
	_ sluice.HookStageFailed      = (*Health)(nil)
	_ sluice.HookStuck            = (*Health)(nil)
	_ sluice.HookRecordsCompleted = (*Health)(nil)
	_ sluice.HookPartitionRevoked = (*Health)(nil)
	_ sluice.HookPartitionLost    = (*Health)(nil)
)

// NewHealth returns a Health that is live (within the startup grace) but
// not ready. An invalid option is an error naming it, and no Health.
func NewHealth(opts ...HealthOption) (*Health, error) {
	cfg := healthConfig{now: time.Now, pollTimeout: DefaultPollTimeout, grace: DefaultStartupGrace}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	h := &Health{now: cfg.now, pollTimeout: cfg.pollTimeout, grace: cfg.grace,
		stuck: make(map[sluice.TopicPartition]stuckValue)}
	h.started = h.now()
	return h, nil
}

// Live returns nil while the consumer works: it polled within the poll
// timeout (or, before its first poll, the startup grace has not run out)
// and no partition has a stuck value. Otherwise the error says why. A
// failing liveness probe should restart the process.
func (h *Health) Live() error {
	now := h.now()
	if last := h.lastPoll.Load(); last == 0 {
		if waited := now.Sub(h.started); waited > h.grace {
			return fmt.Errorf("no poll since start %v ago (startup grace %v)", waited.Round(time.Millisecond), h.grace)
		}
	} else if ago := now.Sub(time.Unix(0, last)); ago > h.pollTimeout {
		return fmt.Errorf("last poll %v ago (poll timeout %v)", ago.Round(time.Millisecond), h.pollTimeout)
	}
	if h.nstuck.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	tps := slices.SortedFunc(maps.Keys(h.stuck), func(a, b sluice.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var errs []error
	for _, tp := range tps {
		s := h.stuck[tp]
		errs = append(errs, fmt.Errorf("stage %q stuck on %s/%d at offset %d for %v",
			s.stage, tp.Topic, tp.Partition, s.offset, (s.since+now.Sub(s.at)).Round(time.Millisecond)))
	}
	return errors.Join(errs...)
}

// Ready returns nil once the consumer joined its group, until a stage
// error stops Run; otherwise the error says why. A failing readiness probe
// takes the pod out of service without restarting it.
func (h *Health) Ready() error {
	h.mu.Lock()
	failed := h.failed
	h.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("stopped by a stage error: %w", failed)
	}
	if !h.joined.Load() {
		return errors.New("not a member of the consumer group yet")
	}
	return nil
}

// OnPolled implements [sluice.HookPolled]: it records the poll time.
func (h *Health) OnPolled(at time.Time) { h.lastPoll.Store(at.UnixNano()) }

// OnJoined implements [sluice.HookJoined]: the consumer becomes ready.
func (h *Health) OnJoined() { h.joined.Store(true) }

// OnStageFailed implements [sluice.HookStageFailed]: the consumer stops being
// ready, for good.
func (h *Health) OnStageFailed(_ string, _ sluice.TopicPartition, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil {
		h.failed = err
	}
}

// OnStuck implements [sluice.HookStuck]: tp counts as stuck, failing Live,
// until its committable offset passes offset (an OnRecordsCompleted with
// next > offset; any completion when offset is unknown, -1) or it is
// revoked or lost. Of several stuck values of tp the newest report is
// kept, and the highest offset must be passed.
func (h *Health) OnStuck(stage string, tp sluice.TopicPartition, offset int64, since time.Duration) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.stuck[tp]; ok {
		offset = max(offset, old.offset)
	}
	h.stuck[tp] = stuckValue{stage: stage, offset: offset, since: since, at: now}
	h.nstuck.Store(int32(len(h.stuck)))
}

// OnRecordsCompleted implements [sluice.HookRecordsCompleted]: it clears tp's stuck
// mark once next passes the stuck offset. Without stuck values it costs
// one atomic load.
func (h *Health) OnRecordsCompleted(tp sluice.TopicPartition, _ int, next int64) {
	if h.nstuck.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.stuck[tp]; ok && next > s.offset {
		h.unstick(tp)
	}
}

// OnPartitionRevoked implements [sluice.HookPartitionRevoked]: it clears tp's stuck
// mark.
func (h *Health) OnPartitionRevoked(tp sluice.TopicPartition, _ time.Duration, _ bool) {
	h.forget(tp)
}

// OnPartitionLost implements [sluice.HookPartitionLost]: it clears tp's stuck mark.
func (h *Health) OnPartitionLost(tp sluice.TopicPartition) { h.forget(tp) }

func (h *Health) forget(tp sluice.TopicPartition) {
	if h.nstuck.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unstick(tp)
}

// unstick clears tp's stuck mark. Callers hold mu.
func (h *Health) unstick(tp sluice.TopicPartition) {
	delete(h.stuck, tp)
	h.nstuck.Store(int32(len(h.stuck)))
}
