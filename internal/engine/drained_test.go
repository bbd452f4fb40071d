package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// revokeOnce runs a poll loop that assigns tp, delivers n records, and
// revokes tp once revoke is closed; it sends what Revoke returned and
// what Unfinished reported then.
func revokeOnce(tp sluice.TopicPartition, n int, revoke <-chan struct{}, out chan<- drained) scriptSource {
	return func(ctx context.Context, g sluice.Group) error {
		if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
			return err
		}
		g.Deliver(tp, recordsOf(tp, n))
		<-revoke
		offs := g.Revoke([]sluice.TopicPartition{tp})
		out <- drained{offs: offs, unfinished: slices.Clone(g.Unfinished())}
		<-ctx.Done()
		g.Shutdown()
		return nil
	}
}

type drained struct {
	offs       []sluice.Offset
	unfinished []sluice.TopicPartition
}

// A drain that finishes every record fed to the graph reports nothing
// unfinished, although records still queued were dropped (the final offset
// is behind the last record delivered): those produced nothing. Here
// record 0 holds the graph's one stage: the feeder feeds its first limit,
// one chunk of 256 records (pace.go), and nothing completes to raise it,
// so the other 2744 of the 3000 delivered stay queued.
func TestCleanDrainReportsNothingUnfinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		gate, revoke, out := make(chan struct{}), make(chan struct{}), make(chan drained, 1)
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == 0 {
					<-gate
				}
				return nil
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- pipeline.Run(ctx, revokeOnce(tp, 3000, revoke, out), build) }()
		synctest.Wait()
		close(revoke)
		synctest.Wait() // the revoke drains: input stopped, record 0 still held
		close(gate)
		got := <-out
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if want := []sluice.Offset{{TopicPartition: tp, Next: 256}}; !slices.Equal(got.offs, want) {
			t.Fatalf("Revoke returned %v, want %v (the fed records)", got.offs, want)
		}
		if len(got.unfinished) != 0 {
			t.Fatalf("Unfinished after a clean drain: %v, want none", got.unfinished)
		}
	})
}

// A record fed to the graph that the drain leaves unfinished is reported:
// its retry cut short by the drain (its stage error is only logged), or
// its stage still running at the drain timeout. The final offset stays at
// the record.
func TestDrainReportsRecordsLeftUnfinished(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(ctx context.Context, r sluice.Record) error
	}{
		{"retry cut short", func(_ context.Context, r sluice.Record) error {
			if r.Offset == 2 {
				return errors.New("unavailable") // retried in an hour
			}
			return nil
		}},
		{"drain timeout", func(ctx context.Context, r sluice.Record) error {
			if r.Offset == 2 {
				<-ctx.Done() // until the drain timeout cancels the partition
				return ctx.Err()
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tp := sluice.TopicPartition{Topic: "t", Partition: 3}
				revoke, out := make(chan struct{}), make(chan drained, 1)
				build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, tc.fn, stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: time.Hour, Max: time.Hour}))
				}
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					errc <- pipeline.Run(ctx, revokeOnce(tp, 5, revoke, out), build, pipeline.WithDrainTimeout(time.Second))
				}()
				synctest.Wait()
				close(revoke)
				got := <-out
				cancel()
				if err := <-errc; err != nil {
					t.Fatalf("Run returned %v, want nil (an error of a partition being revoked is only logged)", err)
				}
				if want := []sluice.Offset{{TopicPartition: tp, Next: 2}}; !slices.Equal(got.offs, want) {
					t.Fatalf("Revoke returned %v, want %v", got.offs, want)
				}
				if want := []sluice.TopicPartition{tp}; !slices.Equal(got.unfinished, want) {
					t.Fatalf("Unfinished: %v, want %v", got.unfinished, want)
				}
			})
		})
	}
}
