package follow

import "github.com/sluice-go/sluice/internal/saturation"

// Saturated reports whether the wrapped group says its in-flight budget
// is full; false when it does not tell. A source that asks takes no
// records while it is true, so it passes the runtime's answer through:
// records handed on then would only wait for admission.
//
// Records the follower holds until the leaders commit them do not make
// it saturated: that wait is per partition (a global stop would hold the
// partitions the leaders released too), it may last as long as the
// leaders are stopped, and it does not end by the source taking fewer
// records. The runtime's saturation ends as its records complete,
// whatever the follower holds. Like the runtime's, it takes no lock and
// touches none of the follower's state.
func (g *group) Saturated() bool {
	return saturation.Of(g.Group)
}
