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
		f := newPollFeed(tps, total, batch)
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
			if err := ctx.Err(); err != nil {
				return err
			}
			f.round(g)
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

// pollFeed is a poll loop's delivery of total records to each of tps, a
// batch at a time: each round asks Saturated (which completes what Each
// kept when the budget is full), delivers the next batch of every
// partition not paused, and on Wake asks Resumable.
type pollFeed struct {
	tps    []sluice.TopicPartition
	total  int
	batch  int
	recs   map[sluice.TopicPartition][]sluice.Record
	pos    map[sluice.TopicPartition]int
	paused map[sluice.TopicPartition]bool
}

func newPollFeed(tps []sluice.TopicPartition, total, batch int) *pollFeed {
	f := &pollFeed{tps: tps, total: total, batch: batch, recs: map[sluice.TopicPartition][]sluice.Record{},
		pos: map[sluice.TopicPartition]int{}, paused: map[sluice.TopicPartition]bool{}}
	for _, tp := range tps {
		f.recs[tp] = recordsOf(tp, total)
	}
	return f
}

func (f *pollFeed) round(g sluice.Group) {
	_ = saturation.Of(g)
	for _, tp := range f.tps {
		if f.paused[tp] || f.pos[tp] == f.total {
			continue
		}
		end := min(f.pos[tp]+f.batch, f.total)
		f.paused[tp] = g.Deliver(tp, f.recs[tp][f.pos[tp]:end])
		f.pos[tp] = end
	}
	select {
	case <-g.Wake():
		for _, tp := range g.Resumable() {
			f.paused[tp] = false
		}
	default:
	}
}

// restart delivers tp again from next, as after an assignment.
func (f *pollFeed) restart(tp sluice.TopicPartition, next int64) {
	f.pos[tp], f.paused[tp] = int(next), false
}
