package engine

import (
	"context"
	"runtime"
	"testing"
	"weak"
)

// A tracker holds slot memory for the records it holds now, not for the
// most it ever held: once a burst of records completed, its segments are
// back in the Run's pool (at most the one holding the next sequence
// number is kept), and the next burst reuses them instead of allocating.
func TestTrackerGivesSegmentsBackWhenRecordsComplete(t *testing.T) {
	pool := &segmentPool{}
	tr := newTracker(pool, func(int, int64) {})
	burst := func(n int) {
		recs := make([]Record, n)
		for i := range recs {
			recs[i].Offset = int64(i)
		}
		first := tr.add(recs)
		if got, want := tr.q.n, (int(first%segmentSlots)+n+segmentSlots-1)/segmentSlots; got != want {
			t.Fatalf("%d records held in %d segments, want %d", n, got, want)
		}
		for i := range n {
			tr.done(ticketAt(first + uint64(i)))
		}
	}
	burst(1000) // 16 segments
	if tr.q.n > 1 || len(pool.free) != 16-tr.q.n {
		t.Fatalf("after the burst completed: %d segments held, %d free; want at most 1 held, the rest (of 16) free", tr.q.n, len(pool.free))
	}
	before := len(pool.free) + tr.q.n
	burst(1000 - 1000%segmentSlots) // from sequence number 1000: 16 segments again
	if got := len(pool.free) + tr.q.n; got != before {
		t.Fatalf("a second burst of the same size left %d segments in all, want the %d of the first (reused)", got, before)
	}
	if n, _ := tr.drop(); n != 0 || tr.q.n != 0 || tr.q.segs != nil {
		t.Fatalf("drop of an empty tracker: %d records, %d segments still held", n, tr.q.n)
	}
}

// A revoked partition's structures are garbage once Revoke returned:
// nothing of the Run keeps its graph (and so its tracker, edges and
// stages) reachable, and its tracker's segments are back in the pool,
// also those of records still held when it was revoked.
func TestRevokedGraphIsGarbage(t *testing.T) {
	tp := TopicPartition{Topic: "t", Partition: 0}
	hold := make(chan struct{})
	build := chunkEnd(func(s *Stage, c []Item[Record]) {
		for _, it := range c {
			if it.Value.Offset == 900 {
				<-hold // records 900 on stay in flight until the revoke
			}
			if it.Value.Offset < 900 {
				s.Done(it.Ticket)
			}
		}
	})
	var gone weak.Pointer[graph]
	var used, free int
	err := Run(context.Background(), roomyConfig(), build, func(ctx context.Context, g *Group) error {
		if err := g.Assign([]TopicPartition{tp}); err != nil {
			return err
		}
		recs := make([]Record, 1000)
		for i := range recs {
			recs[i] = Record{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(i), Value: make([]byte, 10)}
		}
		g.Deliver(tp, recs)
		for done := false; !done; {
			<-g.Wake()
			for _, o := range g.Offsets() {
				done = done || o.Next == 900
			}
		}
		gr, _ := g.m.Worker(tp)
		gone = weak.Make(gr)
		gr.tr.mu.Lock()
		used = gr.tr.q.n
		gr.tr.mu.Unlock()
		gr = nil
		close(hold)
		g.Revoke([]TopicPartition{tp})
		g.segments.mu.Lock()
		free = len(g.segments.free)
		g.segments.mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("the revoked partition's graph is still reachable after Revoke and two GCs")
	}
	if used == 0 || free != 16 {
		t.Fatalf("%d segments held before the revoke, %d free after it; want all 16 free", used, free)
	}
}
