package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-go/sluice"
)

// sourceMetrics covers what only the source sees: polls, group
// membership and commits.
type sourceMetrics struct {
	lastPoll        prometheus.Gauge
	polls           prometheus.Counter
	joins           prometheus.Counter
	commits         prometheus.Counter
	commitFailures  prometheus.Counter
	commitDurations prometheus.Histogram
}

func (s *sourceMetrics) init(b *builder, buckets []float64) {
	s.lastPoll = b.gauge("sluice_last_poll_timestamp_seconds",
		"Unix time of the source's last completed poll; 0 before the first.")
	s.polls = b.counter("sluice_polls_total", "Polls the source completed.")
	s.joins = b.counter("sluice_group_joins_total", "Times the consumer became a member of its group.")
	s.commits = b.counter("sluice_commits_total", "Offset commits attempted, successful or not.")
	s.commitFailures = b.counter("sluice_commit_failures_total", "Offset commits that failed.")
	s.commitDurations = b.histogram("sluice_commit_duration_seconds",
		"Time an offset commit took, successful or not.", buckets)
}

// OnPolled implements [sluice.HookPolled]: it sets
// sluice_last_poll_timestamp_seconds to at and increments
// sluice_polls_total.
func (m *Metrics) OnPolled(at time.Time) {
	m.source.lastPoll.Set(float64(at.UnixNano()) / 1e9)
	m.source.polls.Inc()
}

// OnJoined implements [sluice.HookJoined]: it increments
// sluice_group_joins_total.
func (m *Metrics) OnJoined() { m.source.joins.Inc() }

// OnCommitted implements [sluice.HookCommitted]: it increments
// sluice_commits_total, observes took in sluice_commit_duration_seconds
// (only when known: a source that does not measure its commits, such as
// testkit's fake, reports 0) and, on failure, increments
// sluice_commit_failures_total. A successful commit updates
// sluice_consumer_lag_records of the assigned partitions it covers.
func (m *Metrics) OnCommitted(offs []sluice.Offset, took time.Duration, err error) {
	m.source.commits.Inc()
	if took > 0 {
		m.source.commitDurations.Observe(took.Seconds())
	}
	if err != nil {
		m.source.commitFailures.Inc()
		return
	}
	m.parts.committed(offs)
}

// OnHighWatermark implements [sluice.HookHighWatermark]: it updates
// sluice_consumer_lag_records{topic,partition} when tp is assigned and has
// been committed at least once since. Watermarks of partitions not
// assigned are ignored.
func (m *Metrics) OnHighWatermark(tp sluice.TopicPartition, high int64) {
	m.parts.highWatermark(tp, high)
}
