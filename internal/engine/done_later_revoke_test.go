package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// graphCompletions is a completion hook that checks, per partition and
// per assignment, that the calls come one at a time with next increasing
// and counting the records from where the assignment started.
type graphCompletions struct {
	mu    sync.Mutex
	start map[sluice.TopicPartition]int64
	next  map[sluice.TopicPartition]int64
	in    map[sluice.TopicPartition]bool
	errs  []string
}

func (c *graphCompletions) assigned(tp sluice.TopicPartition, from int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start[tp], c.next[tp] = from, from
}

func (c *graphCompletions) OnRecordsCompleted(tp sluice.TopicPartition, n int, next int64) {
	c.mu.Lock()
	if c.in[tp] {
		c.errs = append(c.errs, fmt.Sprintf("%v: a call (n=%d next=%d) overlapped another", tp, n, next))
	}
	c.in[tp] = true
	if next <= c.next[tp] || next-c.next[tp] != int64(n) {
		c.errs = append(c.errs, fmt.Sprintf("%v: n=%d next=%d after next %d", tp, n, next, c.next[tp]))
	}
	c.next[tp] = next
	c.mu.Unlock()
	c.mu.Lock()
	c.in[tp] = false
	c.mu.Unlock()
}

// Values kept by Each are completed by the poll goroutine (Offsets,
// Saturated, Deliver, Resumable), the feeder (a partition queue and pace
// small enough to make it wait) and the dead-letter goroutine (an invalid
// record in the other branch every 97 records), while partitions are lost
// and revoked with calls in flight and assigned again from their commit.
// Under -race: no record of an assignment is counted twice or skipped by
// the completion hooks, a revoke after everything delivered ran returns
// exactly the end of what was delivered, and the shutdown commits every
// record.
func TestEachKeptValuesFlushedWhilePartitionsAreRevokedAndLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const total, batch = 20_000, 300
		tps := []sluice.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
		hook := &graphCompletions{start: map[sluice.TopicPartition]int64{}, next: map[sluice.TopicPartition]int64{},
			in: map[sluice.TopicPartition]bool{}}
		var dlMu sync.Mutex
		dls := map[sluice.TopicPartition]int{}
		f := newPollFeed(tps, total, batch)
		for _, tp := range tps {
			hook.assigned(tp, 0)
		}
		var final []sluice.Offset
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			if err := g.Assign(tps); err != nil {
				return err
			}
			committed := map[sluice.TopicPartition]int64{}
			round := 0
			for {
				round++
				for _, o := range g.Offsets() {
					committed[o.TopicPartition] = o.Next
				}
				done := true
				for _, tp := range tps {
					if committed[tp] != total {
						done = false
					}
				}
				if done {
					final = g.Shutdown()
					return nil
				}
				f.round(g)
				switch {
				case round%13 == 0:
					// t/1 lost with calls in flight: assigned again from its
					// commit.
					tp := tps[1]
					g.Lose([]sluice.TopicPartition{tp})
					f.restart(tp, committed[tp])
					hook.assigned(tp, committed[tp])
					if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
						return err
					}
				case round%17 == 0:
					// t/2 revoked with calls in flight: its final offset is
					// at most what was delivered, and no less than what was
					// committed.
					tp := tps[2]
					offs := g.Revoke([]sluice.TopicPartition{tp})
					next := committed[tp]
					for _, o := range offs {
						next = o.Next
					}
					if next < committed[tp] || next > int64(f.pos[tp]) {
						t.Errorf("round %d: Revoke(t/2) = %v, want between the commit %d and the delivered %d", round, offs, committed[tp], f.pos[tp])
					}
					committed[tp] = next
					f.restart(tp, next)
					hook.assigned(tp, next)
					if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
						return err
					}
				case round%29 == 0:
					// Everything delivered runs (no input is left queued
					// once the bubble is idle): a revoke commits exactly
					// what was delivered.
					tp := tps[0]
					synctest.Wait()
					for _, tp := range g.Resumable() {
						f.paused[tp] = false
					}
					synctest.Wait()
					offs := g.Revoke([]sluice.TopicPartition{tp})
					if f.pos[tp] > int(committed[tp]) && (len(offs) != 1 || offs[0].Next != int64(f.pos[tp])) {
						t.Errorf("round %d: Revoke(t/0) after its %d delivered records ran = %v, want %d", round, f.pos[tp], offs, f.pos[tp])
					}
					if len(offs) == 1 {
						committed[tp] = offs[0].Next
					}
					f.restart(tp, committed[tp])
					hook.assigned(tp, committed[tp])
					if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
						return err
					}
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		})
		bad := errors.New("bad record")
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			br := stages.Tee(in, 2)
			return pipeline.All(
				stages.Each(br[0], func(context.Context, sluice.Record) error { return nil }),
				stages.Each(br[1], func(_ context.Context, r sluice.Record) error {
					if r.Offset%97 == 0 {
						return sluice.Invalid(bad)
					}
					return nil
				}))
		}
		err := pipeline.Run(context.Background(), src, build,
			pipeline.WithMaxInFlight(1000), pipeline.WithPartitionQueue(400), pipeline.WithHooks(hook),
			pipeline.WithLogger(slog.New(slog.DiscardHandler)),
			pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
				dlMu.Lock()
				dls[sluice.TopicPartition{Topic: dl.Record.Topic, Partition: dl.Record.Partition}]++
				dlMu.Unlock()
				return nil
			}))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		for _, o := range final {
			if o.Next != total {
				t.Errorf("Shutdown offsets %v, want every partition at %d", final, total)
				break
			}
		}
		hook.mu.Lock()
		defer hook.mu.Unlock()
		if len(hook.errs) > 0 {
			t.Errorf("the completion hook's contract broken (%d times): %v", len(hook.errs), hook.errs[:min(len(hook.errs), 5)])
		}
		for _, tp := range tps {
			if hook.next[tp] != total {
				t.Errorf("%v: completion hooks ended at next %d, want %d", tp, hook.next[tp], total)
			}
		}
	})
}
