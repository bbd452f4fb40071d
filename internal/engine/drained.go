package engine

// Unfinished implements sluice.Group: the partitions the last Revoke or
// Shutdown drained with records fed to their graph left unfinished (a
// graph whose oldest live record was fed when it exited).
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
