package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// lastNext is a completion hook that remembers the newest next offset
// reported and closes first once next reached 256 (the first chunk).
type lastNext struct {
	next  atomic.Int64
	first chan struct{}
}

func (h *lastNext) OnRecordsCompleted(_ sluice.TopicPartition, _ int, next int64) {
	if h.next.Swap(next) < 256 && next >= 256 {
		close(h.first)
	}
}

// modeRun runs Each with fn over two chunks of t/0 (records 0 to 255,
// delivered and completed first, then 256 to 511), whose call for offset
// blocked waits at a gate, with a source that does nothing else: no
// commit, no poll, nothing that completes kept values. check runs on the
// poll goroutine while that call waits, with the next offset the
// completion hooks had reported when the call began, and the group.
func modeRun(t *testing.T, fn func(sluice.Record), blocked int64, check func(next int64, g sluice.Group, now func() int64)) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		h := &lastNext{first: make(chan struct{})}
		h.next.Store(-1)
		gate, seen, checked := make(chan struct{}), make(chan int64, 1), make(chan struct{})
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				fn(r)
				if r.Offset == blocked {
					seen <- h.next.Load()
					<-gate
				}
				return nil
			})
		}
		recs := recordsOf(tp, 512)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			g.Deliver(tp, recs[:256])
			<-h.first
			g.Deliver(tp, recs[256:])
			check(<-seen, g, h.next.Load)
			close(gate)
			close(checked)
			<-ctx.Done()
			g.Shutdown()
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- pipeline.Run(ctx, src, build, pipeline.WithHooks(h)) }()
		<-checked
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

// Slow calls (20µs) complete each value as its call returns: with nothing
// flushing, the hooks already saw every value before the blocked one.
func TestEachCompletesSlowCallsWithoutAFlush(t *testing.T) {
	const blocked = 300
	modeRun(t, func(sluice.Record) { time.Sleep(20 * time.Microsecond) }, blocked, func(next int64, _ sluice.Group, _ func() int64) {
		if next != blocked {
			t.Errorf("hooks had seen next %d when %d's call began, want %d (slow calls complete at once)", next, blocked, blocked)
		}
	})
}

// After a chunk of fast calls, the next chunk's values are kept: with
// nothing flushing, the hooks saw only the groups of 32 the stage
// completed itself (256 to 287), and two polls complete the rest.
func TestEachKeepsFastCallsUntilTheRuntimeNeedsThem(t *testing.T) {
	const blocked = 300
	modeRun(t, func(sluice.Record) {}, blocked, func(next int64, g sluice.Group, now func() int64) {
		if want := int64(256 + 32); next != want {
			t.Errorf("hooks had seen next %d when %d's call began, want %d (256 to 287 completed as a group, 288 to 299 kept)", next, blocked, want)
		}
		g.Polled()
		g.Polled()
		if got := now(); got != blocked {
			t.Errorf("hooks saw next %d after two polls, want %d (the polls complete what outlived the poll before)", got, blocked)
		}
	})
}

// A group of 32 kept values that took longer than 32 fast calls ends the
// keeping for the rest of the chunk: 256 to 287 are fast, 288 to 319 take
// 10µs each, and from 320 on each value completes as its call returns, so
// with nothing flushing the hooks saw every value before the blocked 400.
func TestEachStopsKeepingWhenItsCallsTurnSlow(t *testing.T) {
	const blocked = 400
	modeRun(t, func(r sluice.Record) {
		if r.Offset >= 288 && r.Offset < 320 {
			time.Sleep(10 * time.Microsecond)
		}
	}, blocked, func(next int64, _ sluice.Group, _ func() int64) {
		if next != blocked {
			t.Errorf("hooks had seen next %d when %d's call began, want %d (keeping ended at 320)", next, blocked, blocked)
		}
	})
}
