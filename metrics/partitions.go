package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-go/sluice"
)

// partitionMetrics covers assignment, pauses and lag: state kept per
// assigned partition, under one lock (these events are per poll or per
// rebalance, not per value).
type partitionMetrics struct {
	assigned, revoked, lost *prometheus.CounterVec
	owned                   *prometheus.GaugeVec
	drain                   prometheus.Histogram
	drainTimeouts           prometheus.Counter
	pausedNow               *prometheus.GaugeVec
	pausedSeconds           *prometheus.CounterVec
	lag                     *prometheus.GaugeVec

	mu    sync.Mutex
	parts map[sluice.TopicPartition]*partState
}

// partState is what is known of one assigned partition.
type partState struct {
	paused    bool
	pausedAt  time.Time
	high      int64            // newest high watermark, -1 before any
	committed int64            // newest committed offset, -1 before any
	lag       prometheus.Gauge // nil until the lag series exists
}

func (p *partitionMetrics) init(b *builder, drainBuckets []float64) {
	p.assigned = b.counterVec("sluice_partitions_assigned_total", "Partitions assigned to this consumer.", "topic")
	p.revoked = b.counterVec("sluice_partitions_revoked_total", "Partitions revoked gracefully (drained, then committed).", "topic")
	p.lost = b.counterVec("sluice_partitions_lost_total", "Partitions lost (cancelled without a final commit).", "topic")
	p.owned = b.gaugeVec("sluice_partitions_owned", "Partitions currently assigned to this consumer.", "topic")
	p.drain = b.histogram("sluice_partition_drain_duration_seconds",
		"Time a revoked partition took to drain its in-flight records.", drainBuckets)
	p.drainTimeouts = b.counter("sluice_partition_drain_timeouts_total",
		"Revoked partitions whose drain hit the drain timeout (unfinished records were not committed).")
	p.pausedNow = b.gaugeVec("sluice_partitions_paused", "Partitions currently paused by backpressure.", "topic")
	p.pausedSeconds = b.counterVec("sluice_paused_seconds_total",
		"Time partitions spent paused by backpressure, summed over partitions; added when a pause ends.", "topic")
	p.lag = b.gaugeVec("sluice_consumer_lag_records",
		"High watermark minus committed offset of an assigned partition; present once both are known, deleted when the partition goes.",
		"topic", "partition")
	p.parts = make(map[sluice.TopicPartition]*partState)
}

// state returns tp's state or nil when tp is not assigned. Callers hold mu.
func (p *partitionMetrics) state(tp sluice.TopicPartition) *partState {
	return p.parts[tp]
}

// endPause accounts the end of st's pause, if any. Callers hold mu.
func (p *partitionMetrics) endPause(tp sluice.TopicPartition, st *partState, now time.Time) {
	if !st.paused {
		return
	}
	st.paused = false
	p.pausedNow.WithLabelValues(tp.Topic).Dec()
	if d := now.Sub(st.pausedAt); d > 0 {
		p.pausedSeconds.WithLabelValues(tp.Topic).Add(d.Seconds())
	}
}

// remove forgets tp: its pause ends and its lag series is deleted.
func (p *partitionMetrics) remove(tp sluice.TopicPartition, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(tp)
	if st == nil {
		return
	}
	p.endPause(tp, st, now)
	if st.lag != nil {
		p.lag.DeleteLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
	delete(p.parts, tp)
	p.owned.WithLabelValues(tp.Topic).Dec()
}

// updateLag sets st's lag when both offsets are known. Callers hold mu.
func (p *partitionMetrics) updateLag(tp sluice.TopicPartition, st *partState) {
	if st.high < 0 || st.committed < 0 {
		return
	}
	if st.lag == nil {
		st.lag = p.lag.WithLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
	st.lag.Set(float64(max(0, st.high-st.committed)))
}

// OnPartitionAssigned implements [sluice.HookPartitionAssigned]: it increments
// sluice_partitions_assigned_total{topic} and sluice_partitions_owned{topic}
// and starts tracking tp's pauses and lag. A partition already assigned
// is ignored.
func (m *Metrics) OnPartitionAssigned(tp sluice.TopicPartition) {
	p := &m.parts
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state(tp) != nil {
		return
	}
	p.parts[tp] = &partState{high: -1, committed: -1}
	p.assigned.WithLabelValues(tp.Topic).Inc()
	p.owned.WithLabelValues(tp.Topic).Inc()
}

// OnPartitionRevoked implements [sluice.HookPartitionRevoked]: it increments
// sluice_partitions_revoked_total{topic}, observes drain in
// sluice_partition_drain_duration_seconds (and counts a timeout), ends a
// pause of tp and deletes its lag series. The final commit that follows
// does not bring the series back.
func (m *Metrics) OnPartitionRevoked(tp sluice.TopicPartition, drain time.Duration, timedOut bool) {
	p := &m.parts
	p.revoked.WithLabelValues(tp.Topic).Inc()
	p.drain.Observe(drain.Seconds())
	if timedOut {
		p.drainTimeouts.Inc()
	}
	p.remove(tp, m.now())
}

// OnPartitionLost implements [sluice.HookPartitionLost]: it increments
// sluice_partitions_lost_total{topic}, ends a pause of tp and deletes its
// lag series.
func (m *Metrics) OnPartitionLost(tp sluice.TopicPartition) {
	m.parts.lost.WithLabelValues(tp.Topic).Inc()
	m.parts.remove(tp, m.now())
}

// OnPartitionPaused implements [sluice.HookPartitionPaused]: it increments
// sluice_partitions_paused{topic} and notes when the pause started.
func (m *Metrics) OnPartitionPaused(tp sluice.TopicPartition) {
	p := &m.parts
	now := m.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(tp)
	if st == nil || st.paused {
		return
	}
	st.paused, st.pausedAt = true, now
	p.pausedNow.WithLabelValues(tp.Topic).Inc()
}

// OnPartitionResumed implements [sluice.HookPartitionResumed]: it decrements
// sluice_partitions_paused{topic} and adds the pause's length to
// sluice_paused_seconds_total{topic}.
func (m *Metrics) OnPartitionResumed(tp sluice.TopicPartition) {
	p := &m.parts
	now := m.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.state(tp); st != nil {
		p.endPause(tp, st, now)
	}
}

// committed records successfully committed offsets of assigned
// partitions and updates their lag.
func (p *partitionMetrics) committed(offs []sluice.Offset) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range offs {
		if st := p.state(o.TopicPartition); st != nil {
			st.committed = o.Next
			p.updateLag(o.TopicPartition, st)
		}
	}
}

// highWatermark records tp's high watermark and updates its lag.
func (p *partitionMetrics) highWatermark(tp sluice.TopicPartition, high int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.state(tp); st != nil {
		st.high = high
		p.updateLag(tp, st)
	}
}
