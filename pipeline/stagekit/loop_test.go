package stagekit_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/testkit"
)

// event is what the test stage below saw, in order.
type event struct {
	kind string // "chunk", "tick" or "drain"
	n    int    // values in the chunk, or held at a tick or the drain
}

// holder adds a terminal stage on RunLoop that holds values until its
// timer fires (1s after the first held value) or the input drains, then
// completes them: the shape of a batching stage.
func holder(in pipeline.Stream[sluice.Record], seen *[]event) pipeline.End {
	return stagekit.AddEnd(in, stagekit.StageSpec{Kind: "Holder"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record]) error {
		var held []stagekit.Ticket
		timer := stagekit.NewTimer()
		release := func(kind string) error {
			*seen = append(*seen, event{kind, len(held)})
			s.Done(held...)
			held = held[:0]
			return nil
		}
		return stagekit.RunLoop(s, inl, stagekit.Loop[sluice.Record, struct{}]{
			OnChunk: func(chunk []stagekit.Item[sluice.Record]) error {
				*seen = append(*seen, event{"chunk", len(chunk)})
				for _, it := range chunk {
					held = append(held, it.Ticket)
				}
				if !timer.Armed() {
					timer.Arm(time.Second)
				}
				return nil
			},
			Timer:   timer,
			OnTick:  func(time.Time) error { return release("tick") },
			OnDrain: func() error { return release("drain") },
		})
	})
}

// RunLoop calls OnTick when the stage's timer fires and OnDrain once the
// input closed on a graceful revoke, each on the stage's goroutine.
func TestRunLoopCallsOnTickAndOnDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []event
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return holder(in, &seen)
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"), []byte("b"))
		synctest.Wait()
		if got := h.Committed("t", 0); got > 0 {
			t.Fatalf("committed %d before the timer fired, want nothing", got)
		}
		time.Sleep(time.Second) // synctest: the stage's timer fires
		h.WaitCommitted("t", 0, 2)
		h.Send("t", 0, []byte("c"))
		synctest.Wait()
		h.Revoke("t", 0) // drains: OnDrain completes the held value
		if got := h.Committed("t", 0); got != 3 {
			t.Fatalf("committed %d after the revoke, want 3", got)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		want := []event{{"chunk", 2}, {"tick", 2}, {"chunk", 1}, {"drain", 1}}
		if !slices.Equal(seen, want) {
			t.Fatalf("the stage saw %v, want %v", seen, want)
		}
	})
}
