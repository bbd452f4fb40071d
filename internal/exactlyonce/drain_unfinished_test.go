package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// sideValue is a value of the sideCall graphs: an output to produce, or
// the side call of the record at off.
type sideValue struct {
	out  string
	side bool
	part int32
	off  int64
}

// sideCall builds graphs where every record has two outputs, "p-o-a" and
// "p-o-b", produced into txn, and a side call on a branch of its own
// (stages.Route). The side call of the record at failAt (on partition 0)
// fails once with a transient error, and its retry waits an hour: only a
// drain (revoke or shutdown) cuts it short, and the stage error that ends
// the record is then only logged (the partition is being taken away).
// Meanwhile the other branch produces the outputs of that record and of
// every record after it.
func sideCall(txn *stubTxn, failAt int64) pipeline.Builder {
	var failed atomic.Bool
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		vals := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]sideValue, error) {
			id := fmt.Sprintf("%d-%d", r.Partition, r.Offset)
			return []sideValue{{out: id + "-a"}, {out: id + "-b"}, {side: true, part: r.Partition, off: r.Offset}}, nil
		})
		branches := stages.Route(vals, 2, func(v sideValue) int {
			if v.side {
				return 1
			}
			return 0
		})
		produced := stages.Each(branches[0], func(_ context.Context, v sideValue) error {
			txn.produce(v.out)
			return nil
		})
		calls := stages.Each(branches[1], func(_ context.Context, v sideValue) error {
			if v.part == 0 && v.off == failAt && failed.CompareAndSwap(false, true) {
				return errors.New("side service unavailable")
			}
			return nil
		}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: time.Hour, Max: time.Hour}))
		return pipeline.All(produced, calls)
	}
}

// wrapping is a Group wrapping the runtime's, as package follow's does:
// the methods it does not override, Unfinished among them, are the
// runtime's.
type wrapping struct{ sluice.Group }

// A shutdown whose drain cuts short the retry of a record (its side call
// failed once) leaves that record unfinished while the outputs of the
// records after it were produced: the final transaction aborts (committing
// it would commit those outputs with the offset still at the failed
// record, and the next owner would produce them again), the committed
// offset stays where the last transaction put it, and Run returns nil:
// the next owner processes the records from there. The same with a Group
// in between (as under a follower), which passes the runtime's report of
// unfinished records on.
func TestShutdownWithRecordUnfinishedInDrainAborts(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("wrapped %v", wrapped), func(t *testing.T) { testShutdownWithRecordUnfinishedInDrain(t, wrapped) })
	}
}

func testShutdownWithRecordUnfinishedInDrain(t *testing.T, wrapped bool) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{})
		if wrapped {
			d.wrap = func(g sluice.Group) sluice.Group { return wrapping{g} }
		}
		_, stop := run(t, d, sideCall(txn, 1))
		d.fed(recs(0, 0, 1))
		d.do(func(g *Group) { g.Offsets() }) // commits record 0
		d.do(func(g *Group) { g.Deliver(tp(0), recs(0, 1, 5)) })
		synctest.Wait() // records 1-4 produced; record 1's side call waits for its retry
		if got, want := sorted(txn.pendingOutputs()), sortedOutputs(0, 1, 5); !slices.Equal(got, want) {
			t.Fatalf("outputs in the open transaction %v, want %v", got, want)
		}
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil (the abort discarded the outputs; the next owner redoes the records)", err)
		}
		visible, commits, aborts, misplaced := txn.state()
		if want := [][]sluice.Offset{offs(0, 1)}; !slices.EqualFunc(commits, want, slices.Equal) {
			t.Fatalf("commits %v, want %v: record 1 never finished", commits, want)
		}
		if want := outputs(0, 0, 1); !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v: the outputs of records 1-4 must not commit with the offset at 1", visible, want)
		}
		if aborts != 1 || len(misplaced) != 0 || len(txn.rewound()) != 0 {
			t.Fatalf("aborts %d misplaced %v rewinds %v; want one abort, nothing else", aborts, misplaced, txn.rewound())
		}
	})
}

// The same at a revoke of p0: the transaction aborts instead of committing
// p0's outputs past its offset, p1 (kept, with records in the transaction)
// is rewound to its committed offset, Run goes on, and p1's records
// delivered again commit exactly once.
func TestRevokeWithRecordUnfinishedInDrainAbortsAndRewinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{})
		_, stop := run(t, d, sideCall(txn, 1))
		d.fed(recs(0, 0, 1), recs(1, 0, 1))
		d.do(func(g *Group) { g.Offsets() }) // commits record 0 of each
		d.do(func(g *Group) {
			g.Deliver(tp(0), recs(0, 1, 5))
			g.Deliver(tp(1), recs(1, 1, 3))
		})
		synctest.Wait() // p0's record 1 waits for its retry; everything else finished
		d.do(func(g *Group) {
			g.Revoke([]sluice.TopicPartition{tp(0)})
			if err := g.Err(); err != nil {
				t.Errorf("Err after the revoke: %v, want nil (aborted, p1 rewound in place)", err)
			}
		})
		if want := [][]sluice.Offset{offs(1, 1)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v (p1 to its committed offset)", txn.rewound(), want)
		}
		d.do(func(g *Group) { g.Deliver(tp(1), recs(1, 1, 3)) }) // p1 from its committed offset
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 1, 1, 0, 3), offs(0, 1, 1, 1), offs(1, 3))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d misplaced %v; want one abort", aborts, misplaced)
		}
	})
}

// A partition lost while its stage function ignores its context is
// abandoned after the exit grace; that stops Run. The function still
// runs, and produces through the transactional producer once it returns:
// whatever transaction is open then must not commit, or that output
// becomes visible while the record's offset stays uncommitted, and the
// record's next owner produces it again. Here the transaction aborted by
// the loss rewinds p1, whose records delivered again open a new
// transaction; the abandoned function produces "0-1" into it; the
// shutdown aborts it instead of committing, and Run's error says so.
func TestAbandonedFunctionOutputNeverCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		release := make(chan struct{})
		var stuck atomic.Bool
		d := newDriver(txn, Config{})
		_, stop := run(t, d, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Partition == 0 && r.Offset == 1 && stuck.CompareAndSwap(false, true) {
					<-release // ignores its context
				}
				txn.produce(fmt.Sprintf("%d-%d", r.Partition, r.Offset))
				return nil
			})
		}, pipeline.WithDrainTimeout(4*time.Second))
		d.fed(recs(0, 0, 1), recs(1, 0, 1))
		d.do(func(g *Group) {
			g.Offsets() // commits 0:1 1:1
			g.Deliver(tp(0), recs(0, 1, 2))
			g.Deliver(tp(1), recs(1, 1, 2))
		})
		synctest.Wait() // 0-1 stuck, 1-1 produced
		d.do(func(g *Group) {
			// A source's poll hands over what it fetched in the same turn.
			g.Lose([]sluice.TopicPartition{tp(0)})
			g.Deliver(tp(1), recs(1, 1, 2)) // p1 rewound: delivered again
			synctest.Wait()
			close(release) // the abandoned function returns and produces 0-1
			synctest.Wait()
		})
		err := stop()
		if !errors.Is(err, sluice.ErrAbandoned) || !errors.Is(err, ErrAborted) {
			t.Errorf("Run returned %v, want ErrAbandoned and ErrAborted (the last transaction aborted)", err)
		}
		visible, commits, _, _ := txn.state()
		if slices.Contains(visible, "0-1") {
			t.Fatalf("committed outputs %v (commits %v): 0-1, output of the abandoned function, committed while p0's offset stayed at 1",
				visible, commits)
		}
	})
}

// A revoke whose barrier waits for a record that then fails (a stage
// error stops Run: here a produce refused as a fenced zombie's is) gives up
// at once instead of holding the poll loop, and the partitions the revoke
// lets go, for the whole drain timeout: the transaction aborts without a
// rewind (Run is stopping) and Run returns the stage error and ErrAborted.
// Before, a fenced franz member held its revoked partitions for the drain
// timeout, long enough for kfake to time out the transaction its refused
// produce had opened and fence its successor (exactlyonce_franz_test.go).
func TestRevokeBarrierGivesUpOnStageError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("1-0-a")
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]string, error) {
				return []string{fmt.Sprintf("%d-%d-a", r.Partition, r.Offset), fmt.Sprintf("%d-%d-b", r.Partition, r.Offset)}, nil
			})
			return stages.Each(outs, func(ctx context.Context, out string) error {
				if err := gs.wait(ctx, out); err != nil {
					return err
				}
				if out == "1-0-a" {
					return sluice.Permanent(errors.New("INVALID_PRODUCER_EPOCH"))
				}
				txn.produce(out)
				return nil
			})
		}
		d := newDriver(txn, Config{})
		_, stop := run(t, d, build, pipeline.WithDrainTimeout(testBarrier))
		d.fed(recs(0, 0, 2), recs(1, 0, 1))
		start := time.Now()
		done := d.start(func(g *Group) { g.Revoke([]sluice.TopicPartition{tp(0)}) })
		synctest.Wait() // the barrier waits for 1-0-a
		gs.open("1-0-a")
		<-done
		if took := time.Since(start); took >= testBarrier/2 {
			t.Errorf("the revoke took %v, want it to give up at the stage error, well before the drain timeout %v", took, testBarrier)
		}
		err := stop()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, ErrAborted) {
			t.Fatalf("Run returned %v, want the stage error and ErrAborted", err)
		}
		if _, commits, aborts, misplaced := txn.state(); len(commits) != 0 || aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("commits %v aborts %d misplaced %v; want nothing committed, one abort", commits, aborts, misplaced)
		}
		if r := txn.rewound(); len(r) != 0 {
			t.Fatalf("rewinds %v, want none: Run is stopping", r)
		}
	})
}
