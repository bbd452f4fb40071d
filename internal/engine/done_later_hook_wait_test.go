package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// nextWatch is a completion hook that closes a channel once a
// partition's next passes an offset.
type nextWatch struct {
	after int64
	ch    chan struct{}
	once  sync.Once
}

func (w *nextWatch) OnRecordsCompleted(_ sluice.TopicPartition, _ int, next int64) {
	if next > w.after {
		w.once.Do(func() { close(w.ch) })
	}
}

// A stage call that waits for another branch's progress as the
// completion hooks report it (a stage that waits until what it depends
// on is committable, a health probe that clears a stuck mark once the
// committable offset passes it) must not wait for the source's next
// commit interval because the other branch's Each kept the value.
//
// Route sends even offsets to one Each and odd ones to another. After a
// first chunk of fast calls (0 to 63), the even branch's call for 100
// waits for the odd branch's 101, after the calls for 64 to 98 returned;
// the odd branch's call for 65 waits until the hooks report 64
// committable (next > 64). 64 returned nil: the hook must tell within
// two polls, not at the next commit. The source polls every 100ms
// (Polled) and commits every 5s (Offsets), as the Kafka sources do when
// idle, and asks Resumable on Wake only while it paused a partition (none
// here), as their poll loop does (internal/rebalance Core.resume).
func TestEachKeptValueDoesNotDelayTheCompletionHookAnotherBranchWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		const commitInterval, pollEvery = 5 * time.Second, 100 * time.Millisecond
		w := &nextWatch{after: 64, ch: make(chan struct{})}
		b101 := make(chan struct{})
		var start time.Time
		waited := make(chan time.Duration, 1)
		fn := func(ctx context.Context, r sluice.Record) error {
			switch r.Offset {
			case 100:
				select {
				case <-b101:
				case <-ctx.Done():
					return ctx.Err()
				}
			case 65:
				select {
				case <-w.ch:
					waited <- time.Since(start)
				case <-ctx.Done():
					return ctx.Err()
				}
			case 101:
				close(b101)
			}
			return nil
		}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			br := stages.Route(in, 2, func(r sluice.Record) int { return int(r.Offset % 2) })
			return pipeline.All(stages.Each(br[0], fn), stages.Each(br[1], fn))
		}
		recs := recordsOf(tp, 128)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			g.Deliver(tp, recs[:64])
			synctest.Wait() // the first chunk: fast calls in both branches
			g.Offsets()
			start = time.Now()
			g.Deliver(tp, recs[64:])
			commit, poll := time.NewTicker(commitInterval), time.NewTicker(pollEvery)
			defer commit.Stop()
			defer poll.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-poll.C:
					g.Polled()
				case <-commit.C:
					g.Offsets()
				}
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- pipeline.Run(ctx, src, build, pipeline.WithHooks(w)) }()
		if d := <-waited; d > 2*pollEvery {
			t.Errorf("the odd branch's call for 65 saw 64 committable %v after 64's call returned, want within two polls (%v; the even branch kept it while its call for 100 waits for the odd branch; the commit interval is %v)", d, 2*pollEvery, commitInterval)
		}
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
