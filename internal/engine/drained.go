package engine

// Unfinished returns the partitions that the last Revoke or Shutdown call
// drained whose graph exited with records it had been fed (handed to its
// first stage) not finished: a stage error during the drain (which is only
// logged, the partition being taken away), a retry the drain cut short, a
// value a stopping stage let go, the drain timeout. Such a record may have
// produced part of its outputs, and the records after it all of theirs,
// while the final offset the call returned stays at it. Records still
// queued when the drain began were never fed: they produced nothing and
// do not count. The result is valid until the next Revoke or Shutdown
// call, and empty when every drained graph finished what it was fed.
//
// It is not a pipeline.Group method: the exactly-once Group
// (internal/exactlyonce), which must not commit the outputs of records
// after an unfinished one, asks for it through a type assertion.
func (rt *Group) Unfinished() []TopicPartition { return rt.unfinished }

// unfinishedFed reports whether a record fed to the graph has not
// finished: the oldest live slot was fed (the slots not fed yet are the
// input queue, behind every fed one). Once the graph exited, such a
// record never finishes.
func (tr *tracker) unfinishedFed() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.size > 0 && tr.fed > tr.base
}
