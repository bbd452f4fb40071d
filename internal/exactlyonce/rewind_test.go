package exactlyonce

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

// sortedOutputs returns the outputs of the given partitions' offset
// ranges (partition, from, to triples), sorted.
func sortedOutputs(ranges ...int64) []string {
	var out []string
	for i := 0; i+2 < len(ranges); i += 3 {
		out = append(out, outputs(int32(ranges[i]), ranges[i+1], ranges[i+2])...)
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Losing p1 with records in the open transaction aborts it and rewinds in
// place the partition kept that had records in it (p0), to the offset the
// last transaction committed, while Run goes on: p0's old graph is
// cancelled before the abort (its record in flight, released by the
// abort, produces nothing), p0 is listed as resumable, and its records
// delivered again from the committed offset commit exactly once in the
// next transaction. p2, with nothing in the aborted transaction, keeps
// its graph and is not rewound.
func TestLoseRewindsPartitionsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("0-3-b")
		txn.onAbort = func() {
			gs.open("0-3-b") // a graph still running would now produce it
			synctest.Wait()
		}
		d, stop := startFanOut(t, txn, gs)
		d.fed(recs(0, 0, 2), recs(1, 0, 2), recs(2, 0, 1))
		d.do(func(g *Group) {
			g.Offsets() // commits 0:2 1:2 2:1
			g.Deliver(tp(0), recs(0, 2, 4))
			g.Deliver(tp(1), recs(1, 2, 4))
		})
		synctest.Wait() // 0-3-b held at its gate, the rest produced
		d.do(func(g *Group) {
			g.Lose([]sluice.TopicPartition{tp(1)})
			if err := g.Err(); err != nil {
				t.Fatalf("Err after losing p1: %v, want nil (rewound in place)", err)
			}
			if got := g.Resumable(); !slices.Contains(got, tp(0)) {
				t.Errorf("Resumable after the rewind: %v, want in/0 listed", got)
			}
		})
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v (p0 only, to its committed offset)", txn.rewound(), want)
		}
		d.do(func(g *Group) { // what the consumer delivers after the seek
			g.Deliver(tp(0), recs(0, 2, 4))
			g.Deliver(tp(2), recs(2, 1, 3))
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 4, 1, 0, 2, 2, 0, 3), offs(0, 2, 1, 2, 2, 1), offs(0, 4, 2, 3))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// A failed commit (tried when a delivery finds the barrier reached)
// aborts and rewinds the partition: the records held meanwhile and the
// batch being delivered are dropped (fetched again after the seek), the
// partition is listed as resumable (the source paused it), and the
// records delivered again from the committed offset commit exactly once.
func TestFailedCommitRewinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		txn := &stubTxn{}
		gs := newGates("0-3-b")
		d, stop := startFanOut(t, txn, gs)
		d.fed(recs(0, 0, 2))
		d.do(func(g *Group) {
			g.Offsets() // commits 0:2
			g.Deliver(tp(0), recs(0, 2, 4))
		})
		synctest.Wait() // 0-3-b at its gate
		d.do(func(g *Group) {
			g.Offsets() // due: the barrier waits for 0-3-b
			if !g.Deliver(tp(0), recs(0, 4, 4+holdPause)) {
				t.Errorf("Deliver holding %d records did not ask to pause", holdPause)
			}
		})
		txn.mu.Lock()
		txn.failNext = boom
		txn.mu.Unlock()
		gs.open("0-3-b")
		synctest.Wait()
		d.do(func(g *Group) {
			if g.Deliver(tp(0), recs(0, 4+holdPause, 5+holdPause)) {
				t.Error("Deliver of a batch fetched before the rewind asked to pause")
			}
			if err := g.Err(); err != nil {
				t.Fatalf("Err after the failed commit: %v, want nil (rewound in place)", err)
			}
			if got := g.Resumable(); !slices.Equal(got, []sluice.TopicPartition{tp(0)}) {
				t.Errorf("Resumable after the rewind: %v, want [in/0]", got)
			}
		})
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v", txn.rewound(), want)
		}
		synctest.Wait()
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v in a transaction after the rewind: the held and dropped records must not be processed", got)
		}
		d.do(func(g *Group) { g.Deliver(tp(0), recs(0, 2, 6)) })
		commitAndStop(t, d, stop)
		visible, commits, aborts, misplaced := txn.state()
		if want := [][]sluice.Offset{offs(0, 2), offs(0, 6)}; !slices.EqualFunc(commits, want, slices.Equal) {
			t.Fatalf("commits %v, want %v", commits, want)
		}
		if want := outputs(0, 0, 6); !slices.Equal(visible, want) {
			t.Fatalf("committed outputs %v, want %v", visible, want)
		}
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// A commit failing because the producer is fenced (ErrFatal) stops the
// Group: no rewind, later deliveries dropped, Run returns the error.
func TestFencedCommitStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fenced := fmt.Errorf("%w: PRODUCER_FENCED", ErrFatal)
		txn := &stubTxn{failNext: fenced}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2))
		d.do(func(g *Group) {
			g.Offsets()
			if err := g.Err(); !errors.Is(err, ErrAborted) || !errors.Is(err, ErrFatal) {
				t.Errorf("Err after a fenced commit: %v, want ErrAborted and ErrFatal", err)
			}
			g.Deliver(tp(0), recs(0, 2, 3))
		})
		synctest.Wait()
		err := stop()
		if !errors.Is(err, ErrAborted) || !errors.Is(err, fenced) {
			t.Fatalf("Run returned %v, want ErrAborted wrapping the fencing error", err)
		}
		checkOneAbort(t, txn)
		checkNoRewind(t, txn)
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v after the stop", got)
		}
	})
}

// When the abort or the rewind that follows a failed commit fails, the
// Group stops: Run returns ErrAborted with both causes.
func TestFailedAbortOrRewindStopsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*stubTxn, error)
	}{
		{"abort", func(s *stubTxn, err error) { s.failAbort = err }},
		{"rewind", func(s *stubTxn, err error) { s.failRewind = err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				boom, second := errors.New("boom"), errors.New(tc.name+" failed")
				txn := &stubTxn{failNext: boom}
				tc.set(txn, second)
				d, stop := startFanOut(t, txn, newGates())
				d.fed(recs(0, 0, 2))
				d.do(func(g *Group) { g.Offsets() })
				err := stop()
				if !errors.Is(err, ErrAborted) || !errors.Is(err, boom) || !errors.Is(err, second) {
					t.Fatalf("Run returned %v, want ErrAborted wrapping %v and %v", err, boom, second)
				}
				if _, commits, _, _ := txn.state(); len(commits) != 0 {
					t.Fatalf("commits %v after the stop", commits)
				}
			})
		})
	}
}

// A rewind that finds p1's topic gone (Txn.Rewind lists it) does not stop
// the Group: p0 is rewound and gets a new graph, p1 gets none and every
// record delivered for it is dropped until the source loses it; the
// next transaction commits p0 alone, and the aborted records of p1
// produce nothing.
func TestRewindLeavesGonePartitionsUntilLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{gone: map[int32]bool{1: true}}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2), recs(1, 0, 2))
		d.do(func(g *Group) {
			g.Offsets() // commits 0:2 1:2
			g.Deliver(tp(0), recs(0, 2, 4))
			g.Deliver(tp(1), recs(1, 2, 4))
		})
		synctest.Wait()
		txn.mu.Lock()
		txn.failNext = errors.New("boom")
		txn.mu.Unlock()
		d.do(func(g *Group) {
			g.Offsets() // fails: abort, rewind
			if err := g.Err(); err != nil {
				t.Fatalf("Err after a rewind that found p1's topic gone: %v, want nil", err)
			}
			if got := g.Resumable(); !slices.Equal(got, []sluice.TopicPartition{tp(0)}) {
				t.Errorf("Resumable after the rewind: %v, want [in/0] (in/1 waits to be lost)", got)
			}
			if g.Deliver(tp(1), recs(1, 2, 3)) {
				t.Error("Deliver for the gone partition asked to pause")
			}
		})
		synctest.Wait()
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v after the rewind: the gone partition's records must be dropped", got)
		}
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v (in/0 only: in/1 is not sought)", txn.rewound(), want)
		}
		d.do(func(g *Group) {
			g.Lose([]sluice.TopicPartition{tp(1)})
			g.Deliver(tp(0), recs(0, 2, 5))
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 5, 1, 0, 2), offs(0, 2, 1, 2), offs(0, 5))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// failInDeliver sets up the sequence of rebalance.Core.Add that lost or
// duplicated records after a rewind on librdkafka: p0 and p1 committed up
// to 2, delivered 2..3 each, an interval commit is due and waits for
// output 1-3-b; once it finished the commit will fail (txn.failNext).
// Then the source polls record 4 of p1 while the batch of p0 (4..5) is
// pending: Add flushes p0's batch first (this Deliver reaches the barrier,
// commits, fails, aborts and rewinds p0 and p1), then appends p1's record
// 4, fetched before the rewind, to its batch and delivers it. It returns
// the driver and the stop function after those two Deliver calls, run as
// Add runs them (on the poll loop, back to back).
func failInDeliver(t *testing.T, txn *stubTxn) (*driver, func() error) {
	t.Helper()
	gs := newGates("1-3-b")
	d, stop := startFanOut(t, txn, gs)
	d.fed(recs(0, 0, 2), recs(1, 0, 2))
	d.do(func(g *Group) {
		g.Offsets() // commits 0:2 1:2
		g.Deliver(tp(0), recs(0, 2, 4))
		g.Deliver(tp(1), recs(1, 2, 4))
	})
	synctest.Wait() // 1-3-b at its gate
	d.do(func(g *Group) { g.Offsets() })
	txn.mu.Lock()
	txn.failNext = errors.New("ILLEGAL_GENERATION")
	txn.mu.Unlock()
	gs.open("1-3-b")
	synctest.Wait()
	d.do(func(g *Group) {
		g.Deliver(tp(0), recs(0, 4, 6)) // the commit fails in here: abort, rewind
		g.Deliver(tp(1), recs(1, 4, 5)) // fetched before the rewind
		if err := g.Err(); err != nil {
			t.Fatalf("Err after the failed commit: %v, want nil (rewound in place)", err)
		}
	})
	synctest.Wait()
	return d, stop
}

// A record fetched before a rewind that happened inside Deliver (the
// Core's Add held it while it flushed the batch whose Deliver aborted)
// must not reach the partition's new graph: it would be processed a
// second time once the consumer, sought back to the committed offset,
// delivers it again.
func TestRecordHeldAcrossRewindInDeliverIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := failInDeliver(t, txn)
		d.do(func(g *Group) { g.Polled() })
		if want := [][]sluice.Offset{offs(0, 2, 1, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v", txn.rewound(), want)
		}
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v in the transaction after the rewind, want none: records fetched before it must be dropped", got)
		}
		d.do(func(g *Group) { // what the consumer delivers after the seek
			g.Deliver(tp(0), recs(0, 2, 6))
			g.Deliver(tp(1), recs(1, 2, 6))
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 6, 1, 0, 6), offs(0, 2, 1, 2), offs(0, 6, 1, 6))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// The same record, when the partition is revoked right after the rewind
// (a cooperative rebalance following the ILLEGAL_GENERATION commit), must
// not make the revoke commit past it: the records between the committed
// offset and it were never processed again (they would be lost). The
// revoked partition is not sought; its next owner starts at the committed
// offset.
func TestRevokeAfterRewindInDeliverCommitsNothingUnprocessed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := failInDeliver(t, txn)
		d.do(func(g *Group) {
			g.Revoke([]sluice.TopicPartition{tp(1)}) // a rebalance callback in the same poll
			if err := g.Err(); err != nil {
				t.Fatalf("Err after the revoke: %v, want nil", err)
			}
			g.Polled()
		})
		d.do(func(g *Group) { g.Deliver(tp(0), recs(0, 2, 6)) })
		commitAndStop(t, d, stop)
		// Nothing past 2 for in/1.
		_, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 6, 1, 0, 2), offs(0, 2, 1, 2), offs(0, 6))
		if len(misplaced) != 0 {
			t.Fatalf("outputs outside a transaction %v", misplaced)
		}
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Errorf("rewinds %v, want %v (in/1 is leaving: not sought)", txn.rewound(), want)
		}
	})
}

// A rewind deferred by an abort inside Deliver finds p1's topic gone when
// it runs (Polled): p0 is rewound, p1 gets no graph and every record of
// it is dropped until the source loses it; the topic recreated, p1 is
// assigned again and its records, from the new topic's start, are
// processed and committed in the next transaction with p0's.
func TestDeferredRewindLeavesGonePartitionUntilLostThenReassigned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn, d, stop := failInDeliverP1Gone(t)
		d.do(func(g *Group) {
			g.Polled()
			if err := g.Err(); err != nil {
				t.Fatalf("Err after the deferred rewind found p1's topic gone: %v, want nil", err)
			}
			if got := g.Resumable(); slices.Contains(got, tp(1)) {
				t.Errorf("Resumable %v lists in/1, which has no graph", got)
			}
			g.Deliver(tp(1), recs(1, 4, 6)) // fetched from the old topic: dropped
		})
		synctest.Wait()
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v (in/1 is not sought)", txn.rewound(), want)
		}
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v in the transaction, want none (in/1's records are dropped)", got)
		}
		txn.mu.Lock()
		delete(txn.gone, 1)
		txn.mu.Unlock()
		d.do(func(g *Group) {
			g.Lose([]sluice.TopicPartition{tp(1)})
			_ = g.Assign([]sluice.TopicPartition{tp(1)}) // the recreated topic's partition
			g.Deliver(tp(0), recs(0, 2, 6))
			g.Deliver(tp(1), recs(1, 0, 3))
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 6, 1, 0, 2, 1, 0, 3), offs(0, 2, 1, 2), offs(0, 6, 1, 3))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// A partition the rewind found gone is revoked (a rebalance) instead of
// lost while p0 has records in the open transaction: the revoke commits
// p0's offsets, none of p1, and Run goes on.
func TestGonePartitionRevokedCommitsTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn, d, stop := failInDeliverP1Gone(t)
		d.do(func(g *Group) {
			g.Polled()
			g.Deliver(tp(0), recs(0, 2, 6))
		})
		synctest.Wait()
		d.do(func(g *Group) {
			if offs := g.Revoke([]sluice.TopicPartition{tp(1)}); len(offs) != 0 {
				t.Errorf("Revoke returned %v, want nothing for the source to commit", offs)
			}
			if err := g.Err(); err != nil {
				t.Fatalf("Err after revoking the gone partition: %v, want nil", err)
			}
		})
		checkCommits(t, txn, offs(0, 2, 1, 2), offs(0, 6))
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
		visible, _, aborts, misplaced := txn.state()
		if want := sortedOutputs(0, 0, 6, 1, 0, 2); !slices.Equal(sorted(visible), want) {
			t.Fatalf("committed outputs %v, want each of %v once", sorted(visible), want)
		}
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// failInDeliverP1Gone is failInDeliver with a transaction whose Rewind
// reports p1's topic gone; it returns that transaction too.
func failInDeliverP1Gone(t *testing.T) (*stubTxn, *driver, func() error) {
	t.Helper()
	txn := &stubTxn{gone: map[int32]bool{1: true}}
	d, stop := failInDeliver(t, txn)
	return txn, d, stop
}
