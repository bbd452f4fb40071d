package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func recsAt(tp sluice.TopicPartition, from, n int) []sluice.Record {
	out := make([]sluice.Record, n)
	for i := range out {
		out[i] = sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(from + i)}
	}
	return out
}

// A partition that became resumable just before it was revoked must not
// be listed by Resumable for its next assignment, whose graph is paused
// and full.
func TestResumableForgetsRevokedPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		gt := newGate(0, 1, 2, 3)
		src := sourceFunc(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			if !g.Deliver(tp, recsAt(tp, 0, 2)) {
				t.Error("the first graph did not pause at its limit")
			}
			gt.open(0)
			gt.open(1)
			synctest.Wait() // both records completed: the partition has room again
			g.Revoke([]sluice.TopicPartition{tp})
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			if !g.Deliver(tp, recsAt(tp, 2, 2)) {
				t.Error("the second graph did not pause at its limit")
			}
			synctest.Wait()
			if r := g.Resumable(); slices.Contains(r, tp) {
				t.Errorf("Resumable lists %v while its new graph is full and paused", r)
			}
			gt.open(2)
			gt.open(3)
			return nil
		})
		err := pipeline.Run(context.Background(), src, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error { return gt.wait(ctx, r.Offset) })
		}, pipeline.WithPartitionQueue(2))
		if err != nil {
			t.Fatal(err)
		}
	})
}

// Stage methods may be called from goroutines other than the stage's own
// (stages.SharedBatcher completes and fails values of every partition in a
// batch). Failing a value as Invalid after its graph exited must not send
// on the graph's closed dead-letter queue.
func TestInvalidAfterTheGraphExitedIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			st   *stagekit.Stage
			held stagekit.Ticket
		)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			p.OnClose(func(context.Context) error {
				// Every stage goroutine exited; the context is not cancelled yet.
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("Fail after the graph exited panicked: %v", v)
					}
				}()
				if err := st.Fail(held, sluice.Invalid(errors.New("bad"))); err != nil {
					t.Errorf("Fail returned %v", err)
				}
				return nil
			})
			return stagekit.AddEnd(in, stagekit.StageSpec{Kind: "Hold"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record]) error {
				st = s
				for {
					c, ok := inl.Recv()
					if !ok {
						return nil
					}
					held = c[0].Ticket // completed elsewhere, never here
					inl.Release(c)
				}
			})
		}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return nil }))
		assignAndSend(h, 1)
		synctest.Wait()
		h.Revoke("t", 0)
		checkCommitted(t, h, -1, "")
	})
}
