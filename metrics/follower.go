package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice/follow"
)

// followerMetrics covers a follower (package follow): what it holds back
// and how far its leader groups got, per partition.
type followerMetrics struct {
	held, leaders *prometheus.GaugeVec
}

func (f *followerMetrics) init(b *builder) {
	f.held = b.gaugeVec("sluice_follower_held_records",
		"Records a follower received and holds back because its leader groups have not committed past them; present while the partition is owned by a follower.",
		"topic", "partition")
	f.leaders = b.gaugeVec("sluice_follower_leader_offset",
		"Lowest committed offset of a follower's leader groups on the partition, as last read; -1 while one of them has committed nothing.",
		"topic", "partition")
}

var _ follow.Hook = (*Metrics)(nil)

// OnFollowerStatus implements [follow.Hook] (pass the Metrics to
// follow.WithHook too): it sets sluice_follower_held_records and
// sluice_follower_leader_offset of the partition, and deletes both when
// the partition leaves the follower.
func (m *Metrics) OnFollowerStatus(st follow.Status) {
	p := strconv.Itoa(int(st.Partition))
	if !st.Owned {
		m.follower.held.DeleteLabelValues(st.Topic, p)
		m.follower.leaders.DeleteLabelValues(st.Topic, p)
		return
	}
	m.follower.held.WithLabelValues(st.Topic, p).Set(float64(st.Held))
	m.follower.leaders.WithLabelValues(st.Topic, p).Set(float64(st.Leaders))
}
