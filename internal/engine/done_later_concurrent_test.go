package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/saturation"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// completionOrder is a HookRecordsCompleted that checks the hook's
// contract per partition: one call at a time, next increasing, and the
// records counted add up to next.
type completionOrder struct {
	mu    sync.Mutex
	parts map[sluice.TopicPartition]*partCompletions
}

type partCompletions struct {
	in    atomic.Bool
	next  int64
	count int64
	errs  []string
}

func (c *completionOrder) part(tp sluice.TopicPartition) *partCompletions {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[tp]
	if p == nil {
		p = &partCompletions{}
		c.parts[tp] = p
	}
	return p
}

func (c *completionOrder) OnRecordsCompleted(tp sluice.TopicPartition, n int, next int64) {
	p := c.part(tp)
	if !p.in.CompareAndSwap(false, true) {
		c.mu.Lock()
		p.errs = append(p.errs, fmt.Sprintf("a call (n=%d next=%d) overlapped another", n, next))
		c.mu.Unlock()
		return
	}
	defer p.in.Store(false)
	if next <= p.next {
		p.errs = append(p.errs, fmt.Sprintf("next %d after %d", next, p.next))
	}
	p.next = next
	p.count += int64(n)
	if p.count != next {
		p.errs = append(p.errs, fmt.Sprintf("%d records counted up to next %d", p.count, next))
	}
}

// The poll goroutine completes what Each kept (Offsets, Saturated and a
// Deliver without room) while the stages complete their own: under
// -race, with two partitions of fast calls and a budget smaller than
// what is delivered, every record is counted once by the completion
// hooks, one call at a time with next increasing per partition, and the
// offsets end exactly at the end.
func TestEachKeptValuesFlushedConcurrentlyCountEachRecordOnce(t *testing.T) {
	// In a bubble no time passes, so every chunk's calls are fast and
	// Each keeps their values, even under -race; the goroutines still
	// run at once.
	synctest.Test(t, eachKeptFlushedConcurrently)
}

func eachKeptFlushedConcurrently(t *testing.T) {
	const total, batch = 60_000, 500
	tps := []sluice.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}
	hook := &completionOrder{parts: map[sluice.TopicPartition]*partCompletions{}}
	src := scriptSource(func(ctx context.Context, g sluice.Group) error {
		defer g.Shutdown()
		if err := g.Assign(tps); err != nil {
			return err
		}
		recs := make(map[sluice.TopicPartition][]sluice.Record)
		for _, tp := range tps {
			recs[tp] = recordsOf(tp, total)
		}
		pos := map[sluice.TopicPartition]int{}
		paused := map[sluice.TopicPartition]bool{}
		last := map[sluice.TopicPartition]int64{}
		for {
			for _, o := range g.Offsets() {
				if o.Next < last[o.TopicPartition] {
					t.Errorf("Offsets went back: %v after %d", o, last[o.TopicPartition])
				}
				last[o.TopicPartition] = o.Next
			}
			if last[tps[0]] == total && last[tps[1]] == total {
				return nil
			}
			_ = saturation.Of(g)
			for _, tp := range tps {
				if paused[tp] || pos[tp] == total {
					continue
				}
				end := min(pos[tp]+batch, total)
				paused[tp] = g.Deliver(tp, recs[tp][pos[tp]:end])
				pos[tp] = end
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-g.Wake():
				for _, tp := range g.Resumable() {
					paused[tp] = false
				}
			default:
			}
		}
	})
	err := pipeline.Run(context.Background(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(context.Context, sluice.Record) error { return nil })
	}, pipeline.WithMaxInFlight(2000), pipeline.WithHooks(hook))
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	for _, tp := range tps {
		p := hook.part(tp)
		if len(p.errs) > 0 {
			t.Errorf("%v: the completion hook's contract broken: %v", tp, p.errs[:min(len(p.errs), 5)])
		}
		if p.count != total || p.next != total {
			t.Errorf("%v: completion hooks counted %d records, last next %d, want %d and %d", tp, p.count, p.next, total, total)
		}
	}
}
