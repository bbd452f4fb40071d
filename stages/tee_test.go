package stages_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// seen records the offsets a branch processed.
type seen struct {
	mu   sync.Mutex
	offs []int64
}

func (s *seen) add(_ context.Context, r sluice.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offs = append(s.offs, r.Offset)
	return nil
}

func (s *seen) list() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.offs)
}

// A record commits only once every branch completed it: the committed
// offset waits at the slow branch's value while the fast one went on.
func TestTeeCommitsWhenEveryBranchCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fast, slow seen
		g := holdOffset(2)
		h := teeHarness(t, 2, func(b []pipeline.Stream[sluice.Record]) pipeline.End {
			return pipeline.All(
				stages.Each(b[0], fast.add),
				stages.Each(b[1], g.then(slow.add)),
			)
		})
		sendUntilHeld(h, g, 5)
		synctest.Wait()
		if got := fast.list(); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
			t.Fatalf("the fast branch processed %v, want 0..4", got)
		}
		if got := h.Committed("t", 0); got != 2 {
			t.Fatalf("committed %d while the slow branch holds offset 2, want 2", got)
		}
		close(g.open)
		h.WaitCommitted("t", 0, 5)
		stopClean(t, h)
		if got := slow.list(); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
			t.Fatalf("the slow branch processed %v, want 0..4", got)
		}
		if got := h.Committed("t", 0); got != 5 {
			t.Fatalf("committed %d, want 5", got)
		}
	})
}

// A branch that filters a value out completes it: the record commits once
// the other branch completed it too.
func TestTeeBranchThatFiltersCountsAsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var evens, all seen
		h := teeHarness(t, 2, func(b []pipeline.Stream[sluice.Record]) pipeline.End {
			even := stages.Filter(b[0], func(r sluice.Record) bool { return r.Offset%2 == 0 })
			return pipeline.All(stages.Each(even, evens.add), stages.Each(b[1], all.add))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(5)...)
		h.WaitCommitted("t", 0, 5)
		stopClean(t, h)
		if got := evens.list(); !slices.Equal(got, []int64{0, 2, 4}) {
			t.Fatalf("the filtering branch processed %v, want [0 2 4]", got)
		}
		if got := all.list(); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
			t.Fatalf("the other branch processed %v, want 0..4", got)
		}
		if got := h.Committed("t", 0); got != 5 {
			t.Fatalf("committed %d, want 5", got)
		}
	})
}

// invalidAt is a branch's function rejecting the record at one offset as
// invalid.
func invalidAt(off int64, s *seen) func(context.Context, sluice.Record) error {
	return func(ctx context.Context, r sluice.Record) error {
		if r.Offset == off {
			return sluice.Invalid(errors.New("bad for this branch"))
		}
		return s.add(ctx, r)
	}
}

// An invalid value in one branch, or in both, dead-letters its record
// once; the other branch still processes it, and everything commits.
func TestTeeInvalidInABranchDeadLettersOnce(t *testing.T) {
	for name, bothInvalid := range map[string]bool{"one branch": false, "both branches": true} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var first, second seen
				dead := testkit.NewDeadLetters()
				h := teeHarness(t, 2, func(b []pipeline.Stream[sluice.Record]) pipeline.End {
					other := second.add
					if bothInvalid {
						other = invalidAt(1, &second)
					}
					return pipeline.All(
						stages.Each(b[0], invalidAt(1, &first), stages.Name("alert")),
						stages.Each(b[1], other, stages.Name("save")),
					)
				}, dead.Option())
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(3)...)
				h.WaitCommitted("t", 0, 3)
				stopClean(t, h)
				if got := dead.Offsets("t", 0); !slices.Equal(got, []int64{1}) || dead.Len() != 1 {
					t.Fatalf("dead-lettered offsets %v (%d letters), want [1] once", got, dead.Len())
				}
				if got := first.list(); !slices.Equal(got, []int64{0, 2}) {
					t.Fatalf("the rejecting branch processed %v, want [0 2]", got)
				}
				want := []int64{0, 1, 2}
				if bothInvalid {
					want = []int64{0, 2}
				}
				if got := second.list(); !slices.Equal(got, want) {
					t.Fatalf("the other branch processed %v, want %v", got, want)
				}
				if got := h.Committed("t", 0); got != 3 {
					t.Fatalf("committed %d, want 3", got)
				}
			})
		})
	}
}

// Any other error in one branch stops Run naming that branch's stage and
// the record; nothing from that record on is committed.
func TestTeeErrorInABranchStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := teeHarness(t, 2, func(b []pipeline.Stream[sluice.Record]) pipeline.End {
			return pipeline.All(
				stages.Discard(b[0]),
				stages.Each(b[1], func(_ context.Context, r sluice.Record) error {
					if r.Offset == 2 {
						return sluice.Permanent(errors.New("disk full"))
					}
					return nil
				}, stages.Name("save")),
			)
		})
		if se := failsAt(t, h, 4, 2, false); se.Stage != "save" || !strings.Contains(se.Error(), "disk full") {
			t.Fatalf("Run returned %v, want a StageError of save at offset 2", se)
		}
		checkCommitted(t, h, 2, "")
	})
}

// A slow branch holds the others back: with one-chunk buffers, the fast
// branch gets exactly three values ahead of the stuck one (the chunk the
// stuck branch holds, the one in its buffer, the one Tee waits to give
// it), and nothing commits. Losing the partition stops every branch.
func TestTeeSlowBranchIsBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fast seen
		g := holdOffset(0)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			b := stages.Tee(in, 2, stages.Buffer(1))
			return pipeline.All(stages.Each(b[0], fast.add), stages.Each(b[1], g.wait))
		})
		h.Assign("t", 0)
		for i := range 10 {
			h.Send("t", 0, []byte{byte(i)}) // one record per chunk
			synctest.Wait()
		}
		<-g.closed
		if got := fast.list(); !slices.Equal(got, []int64{0, 1, 2}) {
			t.Fatalf("the fast branch processed %v while the other is stuck at 0, want [0 1 2]", got)
		}
		if got := h.Committed("t", 0); got != -1 {
			t.Fatalf("committed %d, want nothing (-1)", got)
		}
		h.Lose("t", 0) // returns once both branches exited
		stopClean(t, h)
		if got := h.Committed("t", 0); got != -1 {
			t.Fatalf("committed %d after the loss, want nothing (-1)", got)
		}
	})
}

// On a graceful revoke both branches drain: what is in flight when the
// revoke starts (one branch held up at offset 50) completes in both and
// is committed.
func TestTeeRevokeDrainsEveryBranch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a, b seen
		g := holdOffset(50)
		h := teeHarness(t, 3, func(br []pipeline.Stream[sluice.Record]) pipeline.End {
			return pipeline.All(stages.Each(br[0], g.then(a.add)), stages.Each(br[1], b.add), stages.Discard(br[2]))
		})
		sendUntilHeld(h, g, 100)
		synctest.Wait()
		if got := h.Committed("t", 0); got != 50 {
			t.Fatalf("committed %d before the revoke, want 50", got)
		}
		go func() {
			time.Sleep(time.Second) // during the revoke's drain
			close(g.open)
		}()
		h.Revoke("t", 0)
		if got := h.Committed("t", 0); got != 100 {
			t.Fatalf("committed %d after the revoke, want 100", got)
		}
		if len(a.list()) != 100 || len(b.list()) != 100 {
			t.Fatalf("branches processed %d and %d values, want 100 each", len(a.list()), len(b.list()))
		}
		stopClean(t, h)
	})
}

// Tee with no branch fails the build naming the stage.
func TestTeeWithoutBranchesFailsTheBuild(t *testing.T) {
	expectBuildError(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Tee(in, 0, stages.Name("copies"))[0])
	}, `stage "copies": stages.Tee: n is 0; want at least 1 branch`)
}

// sendUntilHeld assigns t/0, sends it n values and waits until g holds
// one.
func sendUntilHeld(h *testkit.Harness, g *gate, n int) {
	h.Assign("t", 0)
	h.Send("t", 0, testkit.Values(n)...)
	<-g.closed
}

// teeHarness runs a Tee of n branches on every partition, with opts;
// ends builds the graph's end from the branches.
func teeHarness(t *testing.T, n int, ends func(branches []pipeline.Stream[sluice.Record]) pipeline.End, opts ...pipeline.Option) *testkit.Harness {
	t.Helper()
	return testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return ends(stages.Tee(in, n))
	}, opts...)
}
