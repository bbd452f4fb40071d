package rebalance

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
)

func rec(tp TP, offset int64) sluice.Record {
	return sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: offset}
}

// Add batches consecutive records of one partition, up to MaxBatch per
// Deliver, and drops records of partitions not owned.
func TestAddBatchesAndFences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		var sizes []int
		h.do(func() {
			for i := range MaxBatch + 2 {
				h.core.Add(rec(tp0, int64(i)))
			}
			h.core.Add(rec(tp1, 0)) // not owned: dropped, the batch of tp0 stays
			h.g.mu.Lock()
			sizes = append(sizes, h.g.delivered[tp0])
			h.g.mu.Unlock()
			h.core.Flush()
		})
		h.g.mu.Lock()
		got0, got1 := h.g.delivered[tp0], h.g.delivered[tp1]
		h.g.mu.Unlock()
		if sizes[0] != MaxBatch || got0 != MaxBatch+2 || got1 != 0 {
			t.Errorf("delivered %d before the flush, %d of in/0 and %d of in/1 in all; want %d, %d and 0",
				sizes[0], got0, got1, MaxBatch, MaxBatch+2)
		}
		h.stopOK()
	})
}

// A partition Deliver asks to pause is paused once, and resumed when the
// group wakes the loop and lists it in Resumable.
func TestPauseAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		h.do(func() {
			h.g.mu.Lock()
			h.g.pauseNext = true
			h.g.mu.Unlock()
			h.core.Add(rec(tp0, 0))
			h.core.Flush()
		})
		h.g.mu.Lock()
		h.g.resumable = []TP{tp0}
		h.g.mu.Unlock()
		h.g.wake <- struct{}{}
		// The poll that ran the pause may have been one started before
		// anything was paused, waiting PollIdle, not PollPaused.
		time.Sleep(PollIdle)
		synctest.Wait()
		events := h.b.calls()
		if events != "pause resume" {
			t.Errorf("backend calls %q, want %q", events, "pause resume")
		}
		h.stopOK()
	})
}

// Validate names the offending field, with the backend's prefix.
func TestSettingsValidate(t *testing.T) {
	ok := Settings{Prefix: "x", GroupConfig: sluice.GroupConfig{Brokers: []string{"b:9092"}, Group: "g", Topics: []string{"t"}}}
	for _, tc := range []struct {
		change func(*Settings)
		want   string
	}{
		{func(s *Settings) { s.Brokers = nil }, "x: Config.Brokers is empty"},
		{func(s *Settings) { s.Brokers = []string{"a:1,b:2"} }, `x: Config.Brokers[0] = "a:1,b:2": want one host:port`},
		{func(s *Settings) { s.Group = " " }, "x: Config.Group is empty"},
		{func(s *Settings) { s.Topics = nil }, "x: Config.Topics is empty"},
		{func(s *Settings) { s.Topics = []string{"t", ""} }, "x: Config.Topics[1] is empty"},
		{func(s *Settings) { s.CommitInterval = -1 }, "x: Config.CommitInterval = -1ns: must not be negative"},
		{func(s *Settings) { s.CommitInterval = time.Microsecond }, "x: Config.CommitInterval = 1µs: must be at least 1ms"},
		{func(s *Settings) { s.CloseTimeout = -1 }, "x: Config.CloseTimeout = -1ns: must not be negative"},
		{func(s *Settings) { s.CloseTimeout = time.Millisecond }, "x: Config.CloseTimeout = 1ms: must be at least 100ms"},
	} {
		s := ok
		tc.change(&s)
		if err := s.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() of valid settings = %v", err)
	}
}

// mergeOffsets keeps the highest offset of a partition in both.
func TestMergeOffsets(t *testing.T) {
	got := mergeOffsets([]sluice.Offset{off(tp0, 5), off(tp1, 9)}, []sluice.Offset{off(tp0, 7), off(tp1, 2)})
	wantOffsets(t, "merged", got, off(tp0, 7), off(tp1, 9))
}

// newIdleCore returns a core over a fake backend and group whose loop
// never runs: the test is its poll goroutine.
func newIdleCore(g *fakeGroup) *Core {
	return New(&fakeBackend{}, g, Options{Settings: Settings{Prefix: "test", GroupConfig: sluice.GroupConfig{CommitInterval: time.Second}}})
}

// Add and Flush reuse one batch array: delivering batches costs no
// allocation (Deliver does not keep the slice it is handed).
func TestAddAndFlushAllocateNothing(t *testing.T) {
	g := newFakeGroup()
	c := newIdleCore(g)
	c.assign([]TP{tp0, tp1})
	recs := make([]sluice.Record, 3*MaxBatch)
	for i := range recs {
		recs[i] = rec(tp0, int64(i))
	}
	other := rec(tp1, 0)
	var next int64 // each run's records follow the last run's
	allocs := testing.AllocsPerRun(10, func() {
		for i := range recs {
			recs[i].Offset = next
			next++
			c.Add(recs[i])
		}
		other.Offset = next
		c.Add(other) // another partition: delivers the batch of tp0
		c.Flush()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per %d records added and flushed, want 0", allocs, len(recs)+1)
	}
	if got, want := g.delivered[tp0], 11*len(recs); got != want { // AllocsPerRun runs once more to warm up
		t.Errorf("delivered %d records of in/0, want %d", got, want)
	}
}

// A partition given up while its batch is being built delivers nothing:
// Flush fences the batch even though Add looked the owned set up only at
// its first record.
func TestFlushFencesAPartitionGivenUpMidBatch(t *testing.T) {
	g := newFakeGroup()
	c := newIdleCore(g)
	c.assign([]TP{tp0})
	c.Add(rec(tp0, 0))
	c.giveUp([]TP{tp0})
	c.Add(rec(tp0, 1))
	c.Flush()
	c.assign([]TP{tp0})
	c.Add(rec(tp0, 2))
	c.Flush()
	if got := g.delivered[tp0]; got != 1 {
		t.Errorf("delivered %d records of in/0, want 1 (offset 2, after the new assignment)", got)
	}
}
