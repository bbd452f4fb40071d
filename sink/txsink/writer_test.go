package txsink_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// At least once: every value is written, in transactions of at most
// BatchSize values, and the offsets commit once their rows did.
func TestAtLeastOnceWritesEveryValueThenCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		w := txsink.New[int](s, txsink.Options[int]{BatchSize: 4})
		f := testkit.NewFake()
		r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return w.Write(toInt(in))
		})
		must(t, f.Send(topic, 0, values(0, 10)...))
		must(t, f.Assign(topic, 0))
		f.WaitCommitted(t, topic, 0, 10)
		sameInts(t, "rows", s.Rows(), seq(0, 10))
		if got := s.Commits(); got != 3 {
			t.Fatalf("%d transactions for 10 values in batches of 4; want 3", got)
		}
		must(t, r.Stop(t))
	})
}

// Exactly once: a member that starts after another stopped resumes where
// the store says, even when the group's committed offset is behind it,
// and writes every row once.
func TestExactlyOnceResumesFromTheStoreNotTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		m1 := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}))
		must(t, m1.fake.Send(topic, 0, values(0, 10)...))
		must(t, m1.fake.Assign(topic, 0))
		m1.fake.WaitCommitted(t, topic, 0, 10)
		must(t, m1.run.Stop(t))
		if p := position(t, s, 0); p.Written != 9 {
			t.Fatalf("position after 10 values: %+v; want Written 9", p)
		}

		m2 := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}))
		must(t, m2.fake.Send(topic, 0, values(0, 15)...))
		must(t, m2.fake.SetCommitted(topic, 0, 0)) // the group's commit was lost
		must(t, m2.fake.Assign(topic, 0))
		m2.fake.WaitCommitted(t, topic, 0, 15)
		sameInts(t, "rows", s.Rows(), seq(0, 15))
		if got := m2.fake.Delivered(topic, 0); got != 5 {
			t.Fatalf("the second member was delivered %d records; want 5 (from the store's offset 10)", got)
		}
		must(t, m2.run.Stop(t))
	})
}

// Exactly once across a loss while a record before the written ones waits
// for its dead letter: the store's position resumes at that record (its
// dead letter is sent again), and the rows after it, written already, are
// not written again.
func TestExactlyOnceAfterLossSkipsWrittenRowsAndRedeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		stuck := testkit.NewDeadLetters()
		stuck.FailWith(func(sluice.DeadLetter) error { return errors.New("dead-letter topic down") })
		badAt2 := func(w *txsink.Writer[int]) pipeline.Builder {
			return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return w.Write(stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
					if string(r.Value) == "bad" {
						return 0, sluice.Invalid(errors.New("bad record"))
					}
					return strconv.Atoi(string(r.Value))
				}))
			}
		}
		log := [][]byte{[]byte("0"), []byte("1"), []byte("bad"), []byte("3"), []byte("4"), []byte("5")}

		w1 := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3})
		f1 := testkit.NewFake()
		f1.UseOffsetStore(w1, group)
		r1 := testkit.Start(t, f1, badAt2(w1), stuck.Option())
		must(t, f1.Send(topic, 0, log...))
		must(t, f1.Assign(topic, 0))
		// Rows 0, 1, 3, 4, 5 in two transactions; offset 2 waits for its
		// dead letter, so the position resumes there.
		time.Sleep(txsink.DefaultLinger) // fake time: the second batch's linger passes
		synctest.Wait()
		if got := s.Commits(); got != 2 {
			t.Fatalf("%d transactions; want 2", got)
		}
		if p := position(t, s, 0); p.Next != 2 || p.Written != 5 {
			t.Fatalf("position with offset 2's dead letter pending: %+v; want Next 2, Written 5", p)
		}
		must(t, f1.Lose(topic, 0))
		if err := r1.Stop(t); err != nil && !errors.Is(err, sluice.ErrNotDeadLettered) {
			t.Fatal(err)
		}

		dl := testkit.NewDeadLetters()
		w2 := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3})
		f2 := testkit.NewFake()
		f2.UseOffsetStore(w2, group)
		r2 := testkit.Start(t, f2, badAt2(w2), dl.Option())
		must(t, f2.Send(topic, 0, log...))
		must(t, f2.Send(topic, 0, []byte("6")))
		must(t, f2.Assign(topic, 0))
		f2.WaitCommitted(t, topic, 0, 7)
		sameInts(t, "rows", s.Rows(), []int{0, 1, 3, 4, 5, 6})
		if got := dl.Offsets(topic, 0); len(got) != 1 || got[0] != 2 {
			t.Fatalf("dead letters after the restart at offsets %v; want [2]", got)
		}
		must(t, r2.Stop(t))
	})
}

// A member whose partition another member claimed (a zombie) cannot
// write or commit: its batch is rolled back, its offsets stay, and the
// new owner writes each row once.
func TestZombieIsFencedByTheNextClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		a := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 5}))
		must(t, a.fake.Send(topic, 0, values(0, 5)...))
		must(t, a.fake.Assign(topic, 0))
		a.fake.WaitCommitted(t, topic, 0, 5)

		b := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 5}))
		must(t, b.fake.Send(topic, 0, values(0, 10)...))
		must(t, b.fake.Assign(topic, 0)) // claims: a is fenced from here on

		must(t, a.fake.Send(topic, 0, values(5, 5)...)) // a still believes it owns the partition
		b.fake.WaitCommitted(t, topic, 0, 10)
		synctest.Wait()
		sameInts(t, "rows", s.Rows(), seq(0, 10))
		if got := a.fake.Committed(topic, 0); got != 5 {
			t.Fatalf("the fenced member committed offset %d; want 5 (nothing after the claim)", got)
		}
		must(t, a.run.Stop(t))
		must(t, b.run.Stop(t))
	})
}

// Values the store refuses are dead-lettered; the rest of their batch
// commits.
func TestRefusedValuesAreDeadLetteredAndTheRestCommits(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "at least once", true: "exactly once"}[eos], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := txsinktest.NewMemStore[int]()
				s.Refuse = refuseNegative
				w := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: eos, BatchSize: 10})
				dl := testkit.NewDeadLetters()
				f := testkit.NewFake()
				if eos {
					f.UseOffsetStore(w, group)
				}
				r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return w.Write(toInt(in))
				}, dl.Option())
				must(t, f.Send(topic, 0, []byte("1"), []byte("-2"), []byte("3"), []byte("-4"), []byte("5")))
				must(t, f.Assign(topic, 0))
				f.WaitCommitted(t, topic, 0, 5)
				sameInts(t, "rows", s.Rows(), []int{1, 3, 5})
				if got := dl.Offsets(topic, 0); len(got) != 2 || got[0] != 1 || got[1] != 3 {
					t.Fatalf("dead letters at %v; want [1 3]", got)
				}
				if msg := dl.Records()[0].Err.Error(); !strings.Contains(msg, "value is negative") {
					t.Fatalf("dead letter's error %q does not carry the store's", msg)
				}
				must(t, r.Stop(t))
			})
		})
	}
}

// A commit whose reply was lost (it applied) is not written again: the
// Writer reads the position back.
func TestExactlyOnceLostCommitReplyIsNotWrittenTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.LoseCommitReplies(errors.New("connection reset"))
		s.FailCommits() // none
		m := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}))
		must(t, m.fake.Send(topic, 0, values(0, 8)...))
		must(t, m.fake.Assign(topic, 0))
		m.fake.WaitCommitted(t, topic, 0, 8)
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		must(t, m.run.Stop(t))
	})
}

// A transient commit failure is retried: every row once, exactly-once or
// not (nothing applied).
func TestTransientCommitFailureIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.FailCommits(errors.New("serialization failure"), errors.New("deadlock"))
		m := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}))
		must(t, m.fake.Send(topic, 0, values(0, 8)...))
		must(t, m.fake.Assign(topic, 0))
		m.fake.WaitCommitted(t, topic, 0, 8)
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		must(t, m.run.Stop(t))
	})
}

// Exactly once refuses values that do not come one per record in offset
// order, naming the offset.
func TestExactlyOnceRefusesSeveralValuesPerRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		w := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true})
		f := testkit.NewFake()
		f.UseOffsetStore(w, group)
		r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return w.Write(stages.FlatMap(toInt(in), func(_ context.Context, v int) ([]int, error) { return []int{v, v}, nil }))
		})
		must(t, f.Send(topic, 0, values(0, 3)...))
		must(t, f.Assign(topic, 0))
		err := r.Wait(t)
		if err == nil || !strings.Contains(err.Error(), "offset 0 came after offset 0") {
			t.Fatalf("Run returned %v; want an error naming offset 0 twice", err)
		}
		if len(s.Rows()) != 0 {
			t.Fatalf("rows %v written; want none", s.Rows())
		}
	})
}

// Exactly once without the source's offset store is a clear error.
func TestExactlyOnceWithoutOffsetStoreNamesTheFix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := txsink.New[int](txsinktest.NewMemStore[int](), txsink.Options[int]{ExactlyOnce: true})
		f := testkit.NewFake()
		r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return w.Write(toInt(in))
		})
		must(t, f.Assign(topic, 0))
		err := r.Wait(t)
		if err == nil || !strings.Contains(err.Error(), "Config.OffsetStore") {
			t.Fatalf("Run returned %v; want an error naming Config.OffsetStore", err)
		}
	})
}

// The Writer is an offset store only in exactly-once mode, for one group.
func TestClaimRefusesMisuse(t *testing.T) {
	ctx := context.Background()
	tps := []sluice.TopicPartition{{Topic: topic}}
	alo := txsink.New[int](txsinktest.NewMemStore[int](), txsink.Options[int]{})
	if _, err := alo.Claim(ctx, group, tps); err == nil || !strings.Contains(err.Error(), "ExactlyOnce") {
		t.Fatalf("Claim of an at-least-once Writer returned %v; want an error naming Options.ExactlyOnce", err)
	}
	eos := txsink.New[int](txsinktest.NewMemStore[int](), txsink.Options[int]{ExactlyOnce: true})
	must(t, errOnly(eos.Claim(ctx, group, tps)))
	if _, err := eos.Claim(ctx, "other", tps); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("Claim for a second group returned %v; want an error naming it", err)
	}
	bad := txsink.New[int](nil, txsink.Options[int]{BatchSize: -1})
	if _, err := bad.Claim(ctx, group, tps); err == nil || !strings.Contains(err.Error(), "BatchSize") {
		t.Fatalf("Claim of a Writer with a bad option returned %v; want the option's error", err)
	}
}

func errOnly(_ map[sluice.TopicPartition]int64, err error) error { return err }
