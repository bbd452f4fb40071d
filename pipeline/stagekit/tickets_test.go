package stagekit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// wantTicketError fails t unless err is the *sluice.StageError of a
// ticket misuse by stage at offset on t/0.
func wantTicketError(t *testing.T, err error, stage string, offset int64) {
	t.Helper()
	var se *sluice.StageError
	if !errors.As(err, &se) || !errors.Is(err, stagekit.ErrTicketCompleted) ||
		se.Stage != stage || se.Topic != "t" || se.Partition != 0 || se.Offset != offset {
		t.Fatalf("Run returned %v, want a *sluice.StageError of stage %q on t/0 at offset %d wrapping stagekit.ErrTicketCompleted", err, stage, offset)
	}
}

// A stage that completes values and still passes them on never gets them
// downstream: Send refuses them, Run stops with an error naming the stage
// and the first such value's offset, and nothing past the record still
// running is committed.
func TestPassingOnACompletedValueStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var ran []int64
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			leaky := stagekit.AddStage(in, stagekit.StageSpec{Name: "Leaky"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record], out *stagekit.Outlet[sluice.Record]) error {
				return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[sluice.Record]) error {
					buf := out.Buffer()
					for _, it := range chunk {
						if it.Value.Offset > 0 {
							s.Done(it.Ticket) // and still passed on below
						}
						buf = append(buf, it)
					}
					if !out.Send(buf) {
						return stagekit.ErrStop
					}
					return nil
				})
			})
			return stages.Each(leaky, func(ctx context.Context, r sluice.Record) error {
				switch r.Offset {
				case 0:
					<-release
				case 1:
					<-ctx.Done()
					return ctx.Err()
				}
				mu.Lock()
				ran = append(ran, r.Offset)
				mu.Unlock()
				return nil
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"))
		synctest.Wait()
		close(release)
		synctest.Wait()
		committed := h.Committed("t", 0)
		err := h.Stop()
		if committed != -1 || h.Committed("t", 0) != -1 {
			t.Errorf("committed %d, then %d after Stop, with offsets 1 to 3 never processed; want nothing (-1)", committed, h.Committed("t", 0))
		}
		wantTicketError(t, err, "Leaky", 1)
		if len(ran) > 1 {
			t.Errorf("downstream processed offsets %v, want at most offset 0", ran)
		}
	})
}

// A value completed twice stops Run with an error naming the stage, and
// nothing is committed after the second completion: the offset stays at
// the one the first completion reached.
func TestCompletingAValueTwiceStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stagekit.AddEnd(in, stagekit.StageSpec{Name: "Twice"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record]) error {
				return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[sluice.Record]) error {
					for _, it := range chunk {
						s.Done(it.Ticket)
						if it.Value.Offset == 0 {
							s.Done(it.Ticket)
						}
					}
					return nil
				})
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"), []byte("b"), []byte("c"))
		synctest.Wait()
		err := h.Stop()
		if got := h.Committed("t", 0); got != 1 {
			t.Errorf("committed %d, want 1 (what the first completion reached)", got)
		}
		wantTicketError(t, err, "Twice", -1)
	})
}

// A joined ticket completed twice is freed once: a later batch never
// shares its join with another, and the records of an unfinished batch
// are never committed. Run stops with an error naming the stage.
func TestCompletingAJoinedTicketTwiceStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stagekit.AddEnd(in, stagekit.StageSpec{Name: "Batches"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record]) error {
				var ts []stagekit.Ticket
				return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[sluice.Record]) error {
					for _, it := range chunk {
						ts = append(ts, it.Ticket)
					}
					if len(ts) < 6 {
						return nil
					}
					first := s.Join(ts[0:3])
					s.Done(first)
					s.Done(first) // twice
					second := s.Join(ts[3:4])
					_ = s.Join(ts[4:6]) // never completed
					s.Done(second)
					return nil
				})
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f"))
		synctest.Wait()
		err := h.Stop()
		if got := h.Committed("t", 0); got != 3 {
			t.Errorf("committed %d, want 3 (the first batch; offsets 4 and 5 never completed)", got)
		}
		wantTicketError(t, err, "Batches", -1)
	})
}
