package stages_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// runHook is a hook whose collection tells that the Run holding it (its
// runtime, graphs and trackers) was collected.
type runHook struct{ polls int }

func (h *runHook) OnPolled(time.Time) { h.polls++ }

// runOnce runs a pipeline (with a SharedBatcher when shared) over one
// record until it is committed, stops it, and returns a channel closed
// once the Run's hook is collected. Nothing of the Run is kept: not the
// source, the batcher or the hook.
func runOnce(t *testing.T, shared bool) <-chan struct{} {
	collected := make(chan struct{})
	h := &runHook{}
	runtime.AddCleanup(h, func(ch chan struct{}) { close(ch) }, collected)
	f := testkit.NewFake()
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}
	if shared {
		sb := stages.NewSharedBatcher(func(context.Context, []sluice.Record) error { return nil }, 10, time.Millisecond)
		build = func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End { return sb.Feed(in) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- pipeline.Run(ctx, f, build, pipeline.WithHooks(h)) }()
	if err := f.Assign("t", 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Send("t", 0, []byte("v")); err != nil {
		t.Fatal(err)
	}
	f.WaitCommitted(t, "t", 0, 1)
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return collected
}

// awaitCollected collects garbage until collected is closed (true), at
// most 100 times.
func awaitCollected(collected <-chan struct{}) bool {
	for range 100 {
		select {
		case <-collected:
			return true
		default:
		}
		runtime.GC()
		runtime.Gosched()
	}
	return false
}

// A Run that returned, and that nothing refers to any more, is garbage:
// its runtime, graphs, trackers and hooks go away, also when its graphs
// used a consumer-wide object (a SharedBatcher), which the Run records
// and which records the last graph that used it. Without a SharedBatcher
// the same Run is the control.
func TestRunsWithASharedBatcherAreCollected(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "without", true: "SharedBatcher"}[shared]
		t.Run(name, func(t *testing.T) {
			collected := runOnce(t, shared)
			if !awaitCollected(collected) {
				t.Fatal("a Run that returned, and that nothing refers to, was not collected after 100 garbage collections")
			}
		})
	}
}
