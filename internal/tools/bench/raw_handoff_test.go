package main

import (
	"context"
	"errors"
	"testing"
)

// handoffRecord is a record of the handoff tests: partition and offset.
type handoffRecord struct {
	p int32
	o int64
}

func handoffAt(r handoffRecord) (int32, int64, []byte) { return r.p, r.o, nil }

// TestHandoffRecordsEachRecordOnceAndMarksTheEnds drives
// runHandoff with polls of interleaved partitions: every record is
// recorded once, the window closes, and the last marks are the
// partitions' ends.
func TestHandoffRecordsEachRecordOnceAndMarksTheEnds(t *testing.T) {
	l := layout{records: 600, partitions: 2}
	tr, w := newTracker(l), newWindow()
	h := newHandoff(tr, w, int64(l.records), handoffAt)
	// Two polls: 150 records of partition 0 (a run of 128 and one of
	// 22), then partition 0's other 150 and partition 1's 300
	// interleaved, 5 and 10 at a time.
	var first, second []handoffRecord
	for o := range int64(150) {
		first = append(first, handoffRecord{0, o})
	}
	next := []int64{150, 0}
	for range 30 {
		for p, n := range []int{5, 10} {
			for range n {
				second = append(second, handoffRecord{int32(p), next[p]})
				next[p]++
			}
		}
	}
	polls := [][]handoffRecord{first, second}
	poll := func() (int64, error) {
		batch := polls[0]
		polls = polls[1:]
		for _, r := range batch {
			if err := h.add(r.p, r); err != nil {
				return 0, err
			}
		}
		return int64(len(batch)), nil
	}
	marked := map[int32]int64{}
	mark := func() error {
		h.marks(func(p int32, next int64) { marked[p] = next })
		return nil
	}
	if err := runHandoff(context.Background(), h, int64(l.records), poll, mark); err != nil {
		t.Fatalf("runHandoff: %v", err)
	}
	if !w.closed() {
		t.Errorf("the window is open after every record was recorded")
	}
	for _, st := range tr.stats() {
		if st.Count != 300 || st.Distinct != 300 || st.Dups != 0 || st.Min != 0 || st.Max != 299 {
			t.Errorf("partition %d recorded %+v, want offsets 0..299 once each", st.Partition, st)
		}
	}
	if want := map[int32]int64{0: 300, 1: 300}; marked[0] != want[0] || marked[1] != want[1] {
		t.Errorf("last marks %v, want %v", marked, want)
	}
}

// TestHandoffAddNamesAnUnknownPartition checks that a record of a
// partition outside the layout ends the loop with an error naming it, and
// that the goroutines stop.
func TestHandoffAddNamesAnUnknownPartition(t *testing.T) {
	l := layout{records: 10, partitions: 1}
	tr, w := newTracker(l), newWindow()
	h := newHandoff(tr, w, int64(l.records), handoffAt)
	poll := func() (int64, error) { return 0, h.add(3, handoffRecord{3, 0}) }
	err := runHandoff(context.Background(), h, int64(l.records), poll, func() error { return nil })
	if err == nil || err.Error() != "record of unknown partition 3" {
		t.Fatalf("runHandoff: %v, want the unknown partition named", err)
	}
}

// TestHandoffStopsOnACancelledContext checks that runHandoff returns
// ctx's error and stops its goroutines when ctx ends before the target.
func TestHandoffStopsOnACancelledContext(t *testing.T) {
	l := layout{records: 10, partitions: 1}
	tr, w := newTracker(l), newWindow()
	h := newHandoff(tr, w, int64(l.records), handoffAt)
	ctx, cancel := context.WithCancel(context.Background())
	polls := 0
	poll := func() (int64, error) {
		polls++
		cancel()
		return 1, h.add(0, handoffRecord{0, 0})
	}
	err := runHandoff(ctx, h, int64(l.records), poll, func() error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("runHandoff: %v, want context.Canceled", err)
	}
	if polls != 1 {
		t.Errorf("polled %d times, want once: the cancel ends the loop", polls)
	}
}
