package exactlyonce

import "github.com/sluice-go/sluice/internal/saturation"

// Saturated reports whether the wrapped group says its in-flight budget
// is full; false when it does not tell. A source that asks takes no
// records while it is true, so the Group passes the runtime's answer
// through: records delivered then would only wait for admission. That
// does not hold back a due commit: its barrier is reached only once
// every record delivered finished, and the runtime's saturation ends as
// they do.
//
// Records the Group holds while a commit is due do not make it
// saturated: the barrier is checked as records are delivered (and at
// Resumable and the next interval), so a source taking nothing could
// leave a reached barrier unseen until then; what it holds is bounded by
// holdPause records a partition. Saturated takes no lock and touches none
// of the Group's state.
func (g *Group) Saturated() bool {
	return saturation.Of(g.Group)
}
