package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// fanOut builds graphs where every record has two outputs, "p-o-a" and
// "p-o-b", each produced into txn once its gate (if any) opens.
func fanOut(txn *stubTxn, gs gates) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]string, error) {
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
// one whose first output was produced and whose second is held, without
// holding the poll loop: records delivered meanwhile are held (their
// partition paused), and once the barrier is reached (checked when the
// source asks for resumable partitions) the transaction commits exactly
// the offsets after the last record with its outputs, and the held
// records go to the graph in the next transaction.
func TestIntervalCommitWaitsForRecordsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("0-2-b")
		d, stop := startFanOut(t, txn, gs)
		d.do(func(g *Group) {
			if err := g.Assign([]sluice.TopicPartition{tp(0)}); err != nil {
				t.Fatal(err)
			}
			g.Deliver(tp(0), recs(0, 0, 3))
		})
		synctest.Wait() // 0-2-a produced, 0-2-b held at its gate
		d.do(func(g *Group) {
			if got := g.Offsets(); got != nil {
				t.Errorf("Offsets returned %v to the source, want nothing", got)
			}
			if g.Deliver(tp(0), recs(0, 3, 5)) {
				t.Error("Deliver holding 2 records asked to pause")
			}
			if got := g.Resumable(); len(got) != 0 {
				t.Errorf("Resumable before the barrier: %v", got)
			}
		})
		synctest.Wait()
		visible, commits, _, _ := txn.state()
		if len(commits) != 0 || len(visible) != 0 {
			t.Fatalf("committed %v (outputs %v) while record 2 was in flight", commits, visible)
		}
		if got := txn.pendingOutputs(); !slices.Equal(got, append(outputs(0, 0, 2), "0-2-a")) {
			t.Fatalf("outputs in the open transaction %v: the held records 3 and 4 must not be processed yet", got)
		}
		gs.open("0-2-b")
		synctest.Wait()
		d.do(func(g *Group) {
			g.Resumable()
		})
		checkCommits(t, txn, offs(0, 3))
		visible, _, _, _ = txn.state()
		if want := outputs(0, 0, 3); !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v", visible, want)
		}
		synctest.Wait() // the held records processed, in the next transaction
		d.do(func(g *Group) { g.Offsets() })
		checkCommits(t, txn, offs(0, 3), offs(0, 5))
		visible, _, aborts, misplaced := txn.state()
		if want := outputs(0, 0, 5); !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v", visible, want)
		}
		if aborts != 0 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v", aborts, misplaced)
		}
		must(t, stop())
	})
}

// A revoke whose barrier does not finish within the drain timeout (a
// record of another partition stuck) aborts: nothing is committed, the
// revoked partition is let go (its next owner starts at the last
// committed transaction) and the partition kept, p1, is rewound in place
// (to no committed offset: -1) while Run goes on.
func TestRevokeBarrierPastDrainTimeoutAbortsAndRewinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("1-0-a")
		d, stop := startFanOut(t, txn, gs, pipeline.WithDrainTimeout(testBarrier))
		d.feed(recs(0, 0, 2), recs(1, 0, 1))
		start := time.Now()
		d.do(func(g *Group) {
			g.Revoke([]sluice.TopicPartition{tp(0)})
			if err := g.Err(); err != nil {
				t.Errorf("Err after the revoke: %v, want nil (rewound in place)", err)
			}
		})
		if took := time.Since(start); took != testBarrier {
			t.Errorf("the revoke took %v, want the drain timeout %v", took, testBarrier)
		}
		if want := [][]sluice.Offset{offs(1, -1)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v (p1 only)", txn.rewound(), want)
		}
		gs.open("1-0-a")
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
		checkOneAbort(t, txn)
		if _, _, _, misplaced := txn.state(); len(misplaced) != 0 {
			t.Fatalf("outputs outside a transaction %v", misplaced)
		}
	})
}

// A graceful revoke of p0 commits the transaction, with p0's final offset
// and p1's, before Revoke returns; p1's record in flight is waited for.
func TestRevokeCommitsEveryPartitionBeforeReturning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("1-4-b")
		d, stop := startFanOut(t, txn, gs)
		d.fed(recs(0, 0, 2), recs(1, 3, 5)) // fed: a revoke drops only records still queued
		done := d.start(func(g *Group) {
			if got := g.Revoke([]sluice.TopicPartition{tp(0)}); got != nil {
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
		if want := [][]sluice.Offset{offs(0, 2, 1, 5)}; !slices.EqualFunc(commits, want, slices.Equal) || aborts != 0 {
			t.Fatalf("commits %v aborts %d, want %v and none", commits, aborts, want)
		}
		slices.Sort(visible)
		want := append(outputs(0, 0, 2), outputs(1, 3, 5)...)
		slices.Sort(want)
		if !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v", visible, want)
		}
		must(t, stop())
	})
}

// A partition lost with nothing in the open transaction aborts nothing.
func TestLoseWithoutRecordsInTransactionCommitsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := startFanOut(t, txn, newGates())
		d.do(func(g *Group) {
			_ = g.Assign([]sluice.TopicPartition{tp(0), tp(1)})
			g.Deliver(tp(0), recs(0, 0, 2))
		})
		synctest.Wait() // partition 0's records are fed and processed: a stop drops only records still queued
		d.do(func(g *Group) {
			g.Lose([]sluice.TopicPartition{tp(1)})
			g.Offsets()
		})
		must(t, stop())
		checkCommits(t, txn, offs(0, 2))
		if _, _, aborts, _ := txn.state(); aborts != 0 {
			t.Fatalf("aborts %d, want none", aborts)
		}
	})
}

// A failed commit at shutdown aborts (nothing is left to rewind for), and
// Run returns the commit's error.
func TestFailedShutdownCommitAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		txn := &stubTxn{failNext: boom}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2)) // fed and processed: the shutdown commits
		err := stop()
		if !errors.Is(err, ErrAborted) || !errors.Is(err, boom) {
			t.Fatalf("Run returned %v, want ErrAborted wrapping the commit's error", err)
		}
		checkOneAbort(t, txn)
		checkNoRewind(t, txn)
	})
}

// Shutdown drains every partition and commits what they finished; a
// drain that leaves a record unfinished (past the drain timeout) aborts,
// and Run returns nil: nothing of the transaction is visible, and the next
// owner processes its records again.
func TestShutdownCommitsOrAbortsOnDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2)) // fed: a shutdown drops only records still queued
		must(t, stop())
		checkCommits(t, txn, offs(0, 2))
	})
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := startFanOut(t, txn, newGates("0-1-b"), pipeline.WithDrainTimeout(testBarrier))
		d.fed(recs(0, 0, 2)) // fed; 0-1-b waits at its gate past the drain timeout
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
		checkOneAbort(t, txn)
	})
}

// Nothing delivered since the last commit: no transaction is begun and
// nothing committed.
func TestNoRecordsNoTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := startFanOut(t, txn, newGates())
		d.do(func(g *Group) {
			_ = g.Assign([]sluice.TopicPartition{tp(0)})
			g.Offsets()
			g.Revoke([]sluice.TopicPartition{tp(0)})
		})
		must(t, stop())
		if _, commits, aborts, _ := txn.state(); len(commits) != 0 || aborts != 0 {
			t.Fatalf("commits %v aborts %d, want none", commits, aborts)
		}
	})
}

// While a commit is due, a partition holding holdPause records is asked to
// pause, and listed by Resumable once the commit delivered them.
func TestHeldRecordsPauseTheirPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("0-0-a")
		d, stop := startFanOut(t, txn, gs)
		d.fed(recs(0, 0, 1))
		d.do(func(g *Group) {
			g.Offsets()
			if g.Deliver(tp(0), recs(0, 1, holdPause)) {
				t.Errorf("Deliver holding %d records asked to pause", holdPause-1)
			}
			if !g.Deliver(tp(0), recs(0, holdPause, holdPause+1)) {
				t.Errorf("Deliver holding %d records did not ask to pause", holdPause)
			}
		})
		gs.open("0-0-a")
		synctest.Wait()
		d.do(func(g *Group) {
			if got := g.Resumable(); !slices.Equal(got, []sluice.TopicPartition{tp(0)}) {
				t.Errorf("Resumable after the commit: %v, want [in/0]", got)
			}
		})
		commitAndStop(t, d, stop)
		checkCommits(t, txn, offs(0, 1), offs(0, holdPause+1))
	})
}

// A shutdown after a stage error aborts: the failed record may have
// produced part of its outputs (here "0-1-a" before "0-1-b" failed).
func TestShutdownAfterStageErrorAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d := newDriver(txn, Config{})
		failing := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]string, error) {
				return []string{fmt.Sprintf("0-%d-a", r.Offset), fmt.Sprintf("0-%d-b", r.Offset)}, nil
			})
			return stages.Each(outs, func(_ context.Context, out string) error {
				if out == "0-1-b" {
					return sluice.Permanent(errors.New("cannot produce"))
				}
				txn.produce(out)
				return nil
			})
		}
		_, stop := run(t, d, failing)
		d.fed(recs(0, 0, 2)) // the stage error stops Run
		err := stop()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, ErrAborted) {
			t.Fatalf("Run returned %v, want the stage error and ErrAborted", err)
		}
		checkOneAbort(t, txn)
	})
}

// A shutdown commit the group refuses because the membership moved on
// (ErrGroupMoved: a cooperative rebalance started by the other members
// stopping at the same time) aborts the transaction, and Run returns no
// error: nothing of it is visible, nothing was committed, and the next
// owner starts from the last committed transaction.
func TestShutdownCommitRefusedByTheGroupAbortsWithoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{failNext: fmt.Errorf("%w: ILLEGAL_GENERATION", ErrGroupMoved)}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2)) // fed and processed: the shutdown commits
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil (the group moved on: the next owner starts from the last commit)", err)
		}
		checkOneAbort(t, txn)
		checkNoRewind(t, txn)
	})
}

// The same refusal with a failing abort stops the Group: the
// transaction's outcome is unknown.
func TestShutdownCommitRefusedByTheGroupFailedAbortStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		moved, failed := fmt.Errorf("%w: ILLEGAL_GENERATION", ErrGroupMoved), errors.New("abort failed")
		txn := &stubTxn{failNext: moved, failAbort: failed}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2))
		if err := stop(); !errors.Is(err, ErrAborted) || !errors.Is(err, moved) || !errors.Is(err, failed) {
			t.Fatalf("Run returned %v, want ErrAborted wrapping %v and %v", err, moved, failed)
		}
	})
}
