package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
)

// followerMetrics covers a follower (package follow): what it holds back,
// how far its leader groups got and how far behind them it is, per
// partition. The series of each owned partition are looked up once and
// kept, since a follower reports a status per delivery.
type followerMetrics struct {
	held, leaders, lag *prometheus.GaugeVec

	mu    sync.Mutex
	parts map[sluice.TopicPartition]*followerSeries
}

// followerSeries holds the gauges of one partition a follower owns.
type followerSeries struct {
	held, leaders prometheus.Gauge
	lag           prometheus.Gauge // nil while the lag is unknown
}

func (f *followerMetrics) init(b *builder) {
	f.held = b.gaugeVec("sluice_follower_held_records",
		"Records a follower received and holds back because its leader groups have not committed past them; present while the partition is owned by a follower.",
		"topic", "partition")
	f.leaders = b.gaugeVec("sluice_follower_leader_offset",
		"Lowest committed offset of a follower's leader groups on the partition, as last read; -1 while one of them has committed nothing.",
		"topic", "partition")
	f.lag = b.gaugeVec("sluice_follower_lag_records",
		"Offsets a follower is behind its leader groups on the partition: their lowest committed offset minus the next offset the follower has not handed to its stages; present while both are known.",
		"topic", "partition")
	f.parts = make(map[sluice.TopicPartition]*followerSeries)
}

var _ follow.Hook = (*Metrics)(nil)

// OnFollowerStatus implements [follow.Hook] (pass the Metrics to
// follow.WithHook too): it sets sluice_follower_held_records,
// sluice_follower_leader_offset and sluice_follower_lag_records of the
// partition. The lag series exists only while st.Lag is known (not -1);
// all three are deleted when the partition leaves the follower. Safe for
// concurrent use.
func (m *Metrics) OnFollowerStatus(st follow.Status) {
	f := &m.follower
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.parts[st.TopicPartition]
	if !st.Owned {
		if s != nil {
			delete(f.parts, st.TopicPartition)
			p := strconv.Itoa(int(st.Partition))
			f.held.DeleteLabelValues(st.Topic, p)
			f.leaders.DeleteLabelValues(st.Topic, p)
			f.lag.DeleteLabelValues(st.Topic, p)
		}
		return
	}
	if s == nil {
		p := strconv.Itoa(int(st.Partition))
		s = &followerSeries{held: f.held.WithLabelValues(st.Topic, p), leaders: f.leaders.WithLabelValues(st.Topic, p)}
		f.parts[st.TopicPartition] = s
	}
	s.held.Set(float64(st.Held))
	s.leaders.Set(float64(st.Leaders))
	switch {
	case st.Lag < 0 && s.lag != nil:
		s.lag = nil
		f.lag.DeleteLabelValues(st.Topic, strconv.Itoa(int(st.Partition)))
	case st.Lag >= 0:
		if s.lag == nil {
			s.lag = f.lag.WithLabelValues(st.Topic, strconv.Itoa(int(st.Partition)))
		}
		s.lag.Set(float64(st.Lag))
	}
}
