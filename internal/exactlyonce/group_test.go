package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// fanOut builds graphs where every record has two outputs, "p-o-a" and
// "p-o-b", each produced into txn once its gate (if any) opens.
func fanOut(txn *stubTxn, gs *gates) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		outs := stages.FlatMap(in, func(_ context.Context, r pipeline.Record) ([]string, error) {
			return []string{fmt.Sprintf("%d-%d-a", r.Partition, r.Offset), fmt.Sprintf("%d-%d-b", r.Partition, r.Offset)}, nil
		})
		return stages.Each(outs, func(ctx context.Context, out string) error {
			if err := gs.wait(ctx, out); err != nil {
				return err
			}
			txn.produce(out)
			return nil
		})
	}
}

func outputs(p int32, from, to int64) []string {
	var out []string
	for o := from; o < to; o++ {
		out = append(out, fmt.Sprintf("%d-%d-a", p, o), fmt.Sprintf("%d-%d-b", p, o))
	}
	return out
}

// The interval commit waits until every delivered record finished, here
// one whose first output was produced and whose second is held, then
// commits exactly the offsets after the last record with its outputs.
func TestIntervalCommitWaitsForRecordsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("0-2-b")
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, gs))
		d.do(func(g *Group) {
			if err := g.Assign([]pipeline.TopicPartition{tp(0)}); err != nil {
				t.Fatal(err)
			}
			g.Deliver(tp(0), recs(0, 0, 3))
		})
		done := d.start(func(g *Group) {
			if got := g.Offsets(); got != nil {
				t.Errorf("Offsets returned %v to the source, want nothing", got)
			}
		})
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the interval commit returned while record 2 was in flight")
		default:
		}
		if _, commits, _, _ := txn.state(); len(commits) != 0 {
			t.Fatalf("committed %v while record 2 was in flight", commits)
		}
		gs.open("0-2-b")
		<-done
		visible, commits, aborts, misplaced := txn.state()
		if want := [][]pipeline.Offset{offs(0, 3)}; !slices.EqualFunc(commits, want, slices.Equal) {
			t.Fatalf("commits %v, want %v", commits, want)
		}
		if want := outputs(0, 0, 3); !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v", visible, want)
		}
		if aborts != 0 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v", aborts, misplaced)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A barrier that does not finish within the timeout leaves the transaction
// open (nothing aborted, nothing committed) and the next interval commits.
func TestIntervalCommitPastBarrierTimeoutRetriesNextInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("0-1-a")
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, gs))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Deliver(tp(0), recs(0, 0, 2))
			g.Offsets() // returns after the barrier timeout
			if err := g.Err(); err != nil {
				t.Fatalf("Err after a barrier timeout: %v", err)
			}
		})
		if _, commits, aborts, _ := txn.state(); len(commits) != 0 || aborts != 0 {
			t.Fatalf("after the barrier timeout: commits %v, aborts %d; want none", commits, aborts)
		}
		gs.open("0-1-a")
		d.do(func(g *Group) {
			g.Deliver(tp(0), recs(0, 2, 3)) // joins the open transaction
			g.Offsets()
		})
		visible, commits, _, misplaced := txn.state()
		if want := [][]pipeline.Offset{offs(0, 3)}; !slices.EqualFunc(commits, want, slices.Equal) {
			t.Fatalf("commits %v, want %v", commits, want)
		}
		if want := outputs(0, 0, 3); !slices.Equal(visible, want) || len(misplaced) != 0 {
			t.Fatalf("committed outputs %v (misplaced %v), want %v", visible, misplaced, want)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A graceful revoke of p0 commits the transaction, with p0's final offset
// and p1's, before Revoke returns; p1's record in flight is waited for.
func TestRevokeCommitsEveryPartitionBeforeReturning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("1-4-b")
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, gs))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0), tp(1)})
			g.Deliver(tp(0), recs(0, 0, 2))
			g.Deliver(tp(1), recs(1, 3, 5))
		})
		done := d.start(func(g *Group) {
			if got := g.Revoke([]pipeline.TopicPartition{tp(0)}); got != nil {
				t.Errorf("Revoke returned %v to the source, want nothing", got)
			}
		})
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Revoke returned while p1's record 4 was in flight")
		default:
		}
		gs.open("1-4-b")
		<-done
		visible, commits, aborts, _ := txn.state()
		if want := [][]pipeline.Offset{offs(0, 2, 1, 5)}; !slices.EqualFunc(commits, want, slices.Equal) || aborts != 0 {
			t.Fatalf("commits %v aborts %d, want %v and none", commits, aborts, want)
		}
		slices.Sort(visible)
		want := append(outputs(0, 0, 2), outputs(1, 3, 5)...)
		slices.Sort(want)
		if !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v", visible, want)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Losing a partition with records in the open transaction aborts it:
// nothing of it becomes visible, Err wraps ErrAborted, and nothing is
// committed afterwards, not even at shutdown.
func TestLoseWithRecordsInTransactionAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0), tp(1)})
			g.Deliver(tp(0), recs(0, 0, 2))
			g.Deliver(tp(1), recs(1, 0, 2))
		})
		synctest.Wait() // every output produced into the open transaction
		d.do(func(g *Group) {
			g.Lose([]pipeline.TopicPartition{tp(1)})
			if err := g.Err(); !errors.Is(err, ErrAborted) {
				t.Errorf("Err after losing p1: %v, want ErrAborted", err)
			}
			if g.Deliver(tp(0), recs(0, 2, 3)) {
				t.Error("Deliver after the abort asked to pause")
			}
			g.Offsets()
		})
		err := stop()
		if !errors.Is(err, ErrAborted) {
			t.Fatalf("Run returned %v, want ErrAborted", err)
		}
		visible, commits, aborts, _ := txn.state()
		if len(visible) != 0 || len(commits) != 0 || aborts != 1 {
			t.Fatalf("visible %v commits %v aborts %d; want nothing committed, one abort", visible, commits, aborts)
		}
	})
}

// A partition lost with nothing in the open transaction aborts nothing.
func TestLoseWithoutRecordsInTransactionCommitsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0), tp(1)})
			g.Deliver(tp(0), recs(0, 0, 2))
			g.Lose([]pipeline.TopicPartition{tp(1)})
			g.Offsets()
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		_, commits, aborts, _ := txn.state()
		if want := [][]pipeline.Offset{offs(0, 2)}; !slices.EqualFunc(commits, want, slices.Equal) || aborts != 0 {
			t.Fatalf("commits %v aborts %d, want %v and none", commits, aborts, want)
		}
	})
}

// A failed commit aborts, and Run returns the commit's error.
func TestFailedCommitAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		txn := &stubTxn{failNext: boom}
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Deliver(tp(0), recs(0, 0, 2))
			g.Offsets()
		})
		err := stop()
		if !errors.Is(err, ErrAborted) || !errors.Is(err, boom) {
			t.Fatalf("Run returned %v, want ErrAborted wrapping the commit's error", err)
		}
		if visible, commits, aborts, _ := txn.state(); len(visible) != 0 || len(commits) != 0 || aborts != 1 {
			t.Fatalf("visible %v commits %v aborts %d", visible, commits, aborts)
		}
	})
}

// Shutdown drains every partition and commits what they finished; a
// drain that leaves a record unfinished (past the drain timeout) aborts.
func TestShutdownCommitsOrAbortsOnDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Deliver(tp(0), recs(0, 0, 2))
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, commits, _, _ := txn.state(); !slices.EqualFunc(commits, [][]pipeline.Offset{offs(0, 2)}, slices.Equal) {
			t.Fatalf("commits %v, want [0:2]", commits)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, newGates("0-1-b")), pipeline.WithDrainTimeout(testBarrier))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Deliver(tp(0), recs(0, 0, 2))
		})
		err := stop()
		if !errors.Is(err, ErrAborted) {
			t.Fatalf("Run returned %v, want ErrAborted", err)
		}
		if visible, commits, aborts, _ := txn.state(); len(visible) != 0 || len(commits) != 0 || aborts != 1 {
			t.Fatalf("visible %v commits %v aborts %d", visible, commits, aborts)
		}
	})
}

// Nothing delivered since the last commit: no transaction is begun and
// nothing committed.
func TestNoRecordsNoTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{BarrierTimeout: testBarrier})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Offsets()
			g.Revoke([]pipeline.TopicPartition{tp(0)})
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, commits, aborts, _ := txn.state(); len(commits) != 0 || aborts != 0 {
			t.Fatalf("commits %v aborts %d, want none", commits, aborts)
		}
	})
}
