package engine

// Offsets a stage may read, for a stage that stores them itself: a sink
// that keeps a partition's position in its own transactions.

// RecordOffset returns the offset of the one record behind t, while that
// record is held (not committed yet): false for a joined ticket (a batch
// stands for several records), the zero Ticket, or a record that left.
func (s *Stage) RecordOffset(t Ticket) (int64, bool) {
	if t.joined() {
		return 0, false
	}
	tr := s.g.tr
	tr.mu.Lock()
	defer tr.mu.Unlock()
	sl := tr.slotOf(t)
	if sl == nil {
		return 0, false
	}
	return sl.rec.Offset, true
}

// Watermark returns where the partition would resume if it were
// reassigned once the references in done (one each; tickets of single
// records, as RecordOffset takes) completed: the offset of the oldest
// record that would still be unfinished (every record before it reached
// an End, was filtered out or had its dead letter delivered), or, when
// none would be, the offset after the newest record held; -1 before the
// partition's first record. A stage that stores a position in the
// transaction that completes done passes them; Watermark() is the
// position now. It may run ahead of what the source committed to the
// group (commits go on the source's interval). It walks the records held
// from the oldest, under the partition's tracker lock.
func (s *Stage) Watermark(done ...Ticket) int64 {
	var held map[uint64]int32
	if len(done) > 0 {
		held = make(map[uint64]int32, len(done))
		for _, t := range done {
			if t.id != 0 && !t.joined() {
				held[t.id-1]++
			}
		}
	}
	tr := s.g.tr
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.size == 0 {
		return tr.next
	}
	end := tr.base + uint64(tr.size)
	for seq := tr.base; seq < end; seq++ {
		if sl := tr.q.at(seq); sl.refs > held[seq] {
			return sl.rec.Offset
		}
	}
	return tr.q.at(end-1).rec.Offset + 1
}
