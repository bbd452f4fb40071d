package txsink_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// At least once: every value is written, in transactions of at most
// BatchSize values, and the offsets commit once their rows did.
func TestAtLeastOnceWritesEveryValueThenCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		m := startMember(t, s, txsink.Options[int]{BatchSize: 4})
		m.assignCommitted(t, 10)
		sameInts(t, "rows", s.Rows(), seq(0, 10))
		if got := s.Commits(); got != 3 {
			t.Fatalf("%d transactions for 10 values in batches of 4; want 3", got)
		}
		must(t, m.run.Stop(t))
	})
}

// Exactly once: a member that starts after another stopped resumes where
// the store says, even when the group's committed offset is behind it,
// and writes every row once.
func TestExactlyOnceResumesFromTheStoreNotTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}
		runToCommitted(t, s, o, 10)
		if p := position(t, s, 0); p.Written != 9 {
			t.Fatalf("position after 10 values: %+v; want Written 9", p)
		}

		m2 := startMember(t, s, o)
		must(t, m2.fake.Send(topic, 0, values(0, 15)...))
		must(t, m2.fake.SetCommitted(topic, 0, 0)) // the group's commit was lost
		m2.assign(t)
		m2.fake.WaitCommitted(t, topic, 0, 15)
		sameInts(t, "rows", s.Rows(), seq(0, 15))
		if got := m2.fake.Delivered(topic, 0); got != 5 {
			t.Fatalf("the second member was delivered %d records; want 5 (from the store's offset 10)", got)
		}
		must(t, m2.run.Stop(t))
	})
}

// Values the store refuses are dead-lettered; the rest of their batch
// commits.
func TestRefusedValuesAreDeadLetteredAndTheRestCommits(t *testing.T) {
	inBothModes(t, func(t *testing.T, eos bool) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		dl := testkit.NewDeadLetters()
		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: eos, BatchSize: 10}, dl.Option())
		m.assign(t, bs("1", "-2", "3", "-4", "5")...)
		m.fake.WaitCommitted(t, topic, 0, 5)
		sameInts(t, "rows", s.Rows(), []int{1, 3, 5})
		deadLettered(t, dl, 1, 3)
		if msg := dl.Records()[0].Err.Error(); !strings.Contains(msg, "value is negative") {
			t.Fatalf("dead letter's error %q does not carry the store's", msg)
		}
		must(t, m.run.Stop(t))
	})
}

// Refused values first, last, and all of a batch: each dead-lettered
// once, the others written once, Next exact after each batch.
func TestRefusedValuesAnywhereInABatchAreDeadLetteredOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		dl := testkit.NewDeadLetters()
		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}, dl.Option())
		m.assign(t, bs("-0", "1", "2" /**/, "3", "4", "-5" /**/, "-6", "-7", "-8" /**/, "9")...)
		m.fake.WaitCommitted(t, topic, 0, 9)
		linger(t)
		m.fake.WaitCommitted(t, topic, 0, 10)
		sameInts(t, "rows", s.Rows(), []int{0, 1, 2, 3, 4, 9}) // "-0" is 0: accepted
		want := []int64{5, 6, 7, 8}
		if got := dl.Offsets(topic, 0); len(got) != len(want) {
			t.Fatalf("dead letters %v; want %v", got, want)
		}
		if p := position(t, s, 0); p.Next != 10 || p.Written != 9 || len(p.Invalid) != 0 {
			t.Fatalf("stored %+v; want Next 10, Written 9, no Invalid", p)
		}
		must(t, m.run.Stop(t))
	})
}

// BatchBytes with values heavier than the cap: one value per
// transaction, none lost.
func TestValuesHeavierThanBatchBytesGoOneATransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 100, BatchBytes: 10, Weigh: func(v int) int { return v }}
		m := startMember(t, s, o, testkit.NewDeadLetters().Option())
		m.assign(t, bs("50", "1", "2", "60", "3", "70")...)
		linger(t)
		m.fake.WaitCommitted(t, topic, 0, 6)
		sameInts(t, "rows", s.Rows(), []int{50, 1, 2, 60, 3, 70})
		if got := s.Commits(); got != 5 {
			t.Fatalf("%d transactions; want 5 ([50] [1 2] [60] [3] [70])", got)
		}
		must(t, m.run.Stop(t))
	})
}

// Exactly once without the source's offset store is a clear error.
func TestExactlyOnceWithoutOffsetStoreNamesTheFix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := txsink.New[int](txsinktest.NewMemStore[int](), txsink.Options[int]{ExactlyOnce: true})
		f := testkit.NewFake()
		r := testkit.Start(t, f, intsInto(w))
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
