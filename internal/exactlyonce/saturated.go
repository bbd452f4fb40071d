package exactlyonce

// saturator is the part of the runtime's group that tells whether its
// in-flight budget is full (a source that can leave fetched records with
// its client takes none meanwhile).
type saturator interface{ Saturated() bool }

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
	s, ok := g.Group.(saturator)
	return ok && s.Saturated()
}
