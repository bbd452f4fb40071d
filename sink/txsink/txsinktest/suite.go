package txsinktest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/txsink"
)

// Harness is what Run needs of a store under test.
type Harness[T any] struct {
	// New returns an empty store (no rows, no positions) for one subtest.
	New func(t *testing.T) txsink.Store[T]
	// Value returns a value the store accepts, numbered i; distinct
	// numbers give distinct rows.
	Value func(i int) T
	// Refused returns a value numbered i that the store refuses (a
	// constraint violation: its Write and WriteOne errors are marked
	// sluice.Invalid).
	Refused func(i int) T
	// Rows returns the numbers of the values committed to s, in any
	// order.
	Rows func(t *testing.T, s txsink.Store[T]) []int
}

// Run checks that the store of h keeps the contract of txsink.Store and
// txsink.Tx that txsink.Writer relies on. Each subtest is named for the
// clause it checks, and a failure says what the store did instead.
func Run[T any](t *testing.T, h Harness[T]) {
	t.Helper()
	for _, c := range clauses[T]() {
		t.Run(c.name, func(t *testing.T) { c.check(t, h, h.New(t)) })
	}
}

type clause[T any] struct {
	name  string
	check func(t *testing.T, h Harness[T], s txsink.Store[T])
}

const group = "txsinktest"

var (
	tp0 = sluice.TopicPartition{Topic: "txsinktest", Partition: 0}
	tp1 = sluice.TopicPartition{Topic: "txsinktest", Partition: 1}
)

func clauses[T any]() []clause[T] {
	return []clause[T]{
		{"Claim creates a missing position with Next and Written -1", claimCreates[T]},
		{"Claim raises the owner epoch every time", claimRaises[T]},
		{"positions are kept per group and partition", perGroup[T]},
		{"Read of a partition never claimed is not ok", readMissing[T]},
		{"Commit makes the rows and the position visible together", commitTogether[T]},
		{"Rollback leaves neither rows nor position", rollbackNothing[T]},
		{"StoreOffset with an older epoch fails with ErrFenced", fenced[T]},
		{"a Claim waits for a transaction that stored the position", claimWaits[T]},
		{"a Read waits for a transaction that stored the position", readWaits[T]},
		{"Write of a refused value fails marked Invalid", writeRefused[T]},
		{"WriteOne of a refused value leaves the transaction usable", writeOneRefused[T]},
		{"Invalid offsets are stored and read back", invalidRoundTrip[T]},
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func claim[T any](t *testing.T, s txsink.Store[T], g string, tps ...sluice.TopicPartition) map[sluice.TopicPartition]txsink.Position {
	t.Helper()
	pos, err := s.Claim(context.Background(), g, tps)
	must(t, "Claim", err)
	for _, tp := range tps {
		if _, ok := pos[tp]; !ok {
			t.Fatalf("Claim returned no position for %v: %v", tp, pos)
		}
	}
	return pos
}

func read[T any](t *testing.T, s txsink.Store[T], g string, tp sluice.TopicPartition) txsink.Position {
	t.Helper()
	p, ok, err := s.Read(context.Background(), g, tp)
	must(t, "Read", err)
	if !ok {
		t.Fatalf("Read(%q, %v): no position", g, tp)
	}
	return p
}

// writing begins a transaction that writes the values numbered nums.
func writing[T any](t *testing.T, h Harness[T], s txsink.Store[T], nums ...int) txsink.Tx[T] {
	t.Helper()
	tx, err := s.Begin(context.Background())
	must(t, "Begin", err)
	vals := make([]T, len(nums))
	for i, n := range nums {
		vals[i] = h.Value(n)
	}
	must(t, "Write", tx.Write(context.Background(), vals))
	return tx
}

// storing is writing, then stores p for tp0 in the transaction, which it
// leaves open.
func storing[T any](t *testing.T, h Harness[T], s txsink.Store[T], p txsink.Position, nums ...int) txsink.Tx[T] {
	t.Helper()
	tx := writing(t, h, s, nums...)
	must(t, "StoreOffset", tx.StoreOffset(context.Background(), group, tp0, p))
	return tx
}

// commitBatch writes values numbered nums and stores p for tp0 in one
// transaction.
func commitBatch[T any](t *testing.T, h Harness[T], s txsink.Store[T], p txsink.Position, nums ...int) {
	t.Helper()
	must(t, "Commit", storing(t, h, s, p, nums...).Commit(context.Background()))
}

// whileCommitting runs call in a goroutine, commits tx meanwhile, and
// returns the Commit's error once call returned: call races a commit.
func whileCommitting[T any](tx txsink.Tx[T], call func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		call()
	}()
	err := tx.Commit(context.Background())
	<-done
	return err
}

// SameRows fails t at once unless got holds exactly the numbers of want,
// in any order, each as often; what names the rows in the message. Tests
// of a store compare the numbers of its committed rows with it.
func SameRows(t testing.TB, what string, got, want []int) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: rows %v, want %v", what, got, want)
	}
}

// Numbers returns the numbers from through to-1, in order: the rows that
// the values numbered from..to-1 make, for SameRows.
func Numbers(from, to int) []int {
	out := make([]int, 0, max(to-from, 0))
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func claimCreates[T any](t *testing.T, _ Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	if p.Next != -1 || p.Written != -1 || len(p.Invalid) != 0 || p.Epoch < 1 {
		t.Fatalf("first Claim returned %+v; want Next -1, Written -1, no Invalid, Epoch >= 1", p)
	}
	if got := read(t, s, group, tp0); got.Epoch != p.Epoch || got.Next != -1 || got.Written != -1 {
		t.Fatalf("Read after Claim returned %+v; want the claimed %+v", got, p)
	}
}

func claimRaises[T any](t *testing.T, _ Harness[T], s txsink.Store[T]) {
	e1 := claim(t, s, group, tp0, tp1)
	e2 := claim(t, s, group, tp0)
	if e2[tp0].Epoch <= e1[tp0].Epoch {
		t.Fatalf("second Claim epoch %d, first %d: a Claim must raise it", e2[tp0].Epoch, e1[tp0].Epoch)
	}
	if got := read(t, s, group, tp1); got.Epoch != e1[tp1].Epoch {
		t.Fatalf("Claim of %v changed %v's epoch to %d (was %d)", tp0, tp1, got.Epoch, e1[tp1].Epoch)
	}
}

func perGroup[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	commitBatch(t, h, s, txsink.Position{Epoch: p.Epoch, Next: 5, Written: 7}, 1)
	other := claim(t, s, "other-group", tp0)[tp0]
	if other.Next != -1 || other.Written != -1 {
		t.Fatalf("another group's Claim of %v returned %+v; want a fresh position", tp0, other)
	}
	if _, ok, _ := s.Read(context.Background(), group, tp1); ok {
		t.Fatalf("Read of %v, never claimed, found a position", tp1)
	}
}

func readMissing[T any](t *testing.T, _ Harness[T], s txsink.Store[T]) {
	_, ok, err := s.Read(context.Background(), group, tp0)
	must(t, "Read", err)
	if ok {
		t.Fatal("Read of a partition never claimed reported a position")
	}
}

func commitTogether[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	commitBatch(t, h, s, txsink.Position{Epoch: p.Epoch, Next: 3, Written: 9}, 1, 2, 3)
	SameRows(t, "after Commit", h.Rows(t, s), []int{1, 2, 3})
	if got := read(t, s, group, tp0); got.Next != 3 || got.Written != 9 || got.Epoch != p.Epoch {
		t.Fatalf("position after Commit %+v; want Next 3, Written 9, Epoch %d", got, p.Epoch)
	}
}

func rollbackNothing[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	tx := storing(t, h, s, txsink.Position{Epoch: p.Epoch, Next: 1, Written: 1}, 1)
	must(t, "Rollback", tx.Rollback(context.Background()))
	SameRows(t, "after Rollback", h.Rows(t, s), nil)
	if got := read(t, s, group, tp0); got.Next != -1 || got.Written != -1 {
		t.Fatalf("position after Rollback %+v; want the claimed one (Next -1, Written -1)", got)
	}
	// The partition is not left locked: a Claim goes through.
	claim(t, s, group, tp0)
}

func fenced[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	ctx := context.Background()
	old := claim(t, s, group, tp0)[tp0]
	claim(t, s, group, tp0) // the next owner
	tx := writing(t, h, s, 1)
	err := tx.StoreOffset(ctx, group, tp0, txsink.Position{Epoch: old.Epoch, Next: 1, Written: 1})
	if !errors.Is(err, txsink.ErrFenced) {
		t.Fatalf("StoreOffset with the fenced epoch %d returned %v; want ErrFenced", old.Epoch, err)
	}
	_ = tx.Rollback(ctx)
	SameRows(t, "after a fenced transaction", h.Rows(t, s), nil)
}

func claimWaits[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	tx := storing(t, h, s, txsink.Position{Epoch: p.Epoch, Next: 4, Written: 4}, 1)
	var pos map[sluice.TopicPartition]txsink.Position
	var err error
	commitErr := whileCommitting(tx, func() { pos, err = s.Claim(context.Background(), group, []sluice.TopicPartition{tp0}) })
	must(t, "Claim", err)
	got := pos[tp0]
	switch {
	case commitErr == nil && got.Written != 4:
		t.Fatalf("the old owner's Commit succeeded but the concurrent Claim returned %+v, not its position (Written 4): both owners could commit", got)
	case commitErr != nil && got.Written != -1:
		t.Fatalf("the old owner's Commit failed (%v) but the Claim returned %+v", commitErr, got)
	}
}

func readWaits[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	tx := storing(t, h, s, txsink.Position{Epoch: p.Epoch, Next: 4, Written: 4}, 1)
	var pos txsink.Position
	var ok bool
	var err error
	commitErr := whileCommitting(tx, func() { pos, ok, err = s.Read(context.Background(), group, tp0) })
	must(t, "Read", err)
	switch {
	case !ok:
		t.Fatal("Read of a claimed partition found no position")
	case commitErr == nil && pos.Written != 4:
		t.Fatalf("the Commit succeeded but the concurrent Read returned %+v, not its position (Written 4): a Read must wait for a transaction that stored the position", pos)
	case commitErr != nil && pos.Written != -1:
		t.Fatalf("the Commit failed (%v) but the Read returned %+v", commitErr, pos)
	}
}

func writeRefused[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	ctx := context.Background()
	tx, err := s.Begin(ctx)
	must(t, "Begin", err)
	defer func() { _ = tx.Rollback(ctx) }()
	err = tx.Write(ctx, []T{h.Value(1), h.Refused(2)})
	if err == nil || !sluice.IsInvalid(err) {
		t.Fatalf("Write of a refused value returned %v; want an error marked sluice.Invalid", err)
	}
}

func writeOneRefused[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	ctx := context.Background()
	p := claim(t, s, group, tp0)[tp0]
	tx, err := s.Begin(ctx)
	must(t, "Begin", err)
	must(t, "WriteOne", tx.WriteOne(ctx, h.Value(1)))
	if err := tx.WriteOne(ctx, h.Refused(2)); err == nil || !sluice.IsInvalid(err) {
		t.Fatalf("WriteOne of a refused value returned %v; want an error marked sluice.Invalid", err)
	}
	must(t, "WriteOne after a refused value", tx.WriteOne(ctx, h.Value(3)))
	must(t, "StoreOffset", tx.StoreOffset(ctx, group, tp0, txsink.Position{Epoch: p.Epoch, Next: 0, Written: 3, Invalid: []int64{2}}))
	must(t, "Commit", tx.Commit(ctx))
	SameRows(t, "after WriteOne 1, refused 2, 3", h.Rows(t, s), []int{1, 3})
}

func invalidRoundTrip[T any](t *testing.T, h Harness[T], s txsink.Store[T]) {
	p := claim(t, s, group, tp0)[tp0]
	commitBatch(t, h, s, txsink.Position{Epoch: p.Epoch, Next: 2, Written: 8, Invalid: []int64{2, 5}}, 1)
	got := claim(t, s, group, tp0)[tp0]
	if got.Next != 2 || got.Written != 8 || !slices.Equal(got.Invalid, []int64{2, 5}) {
		t.Fatalf("Claim after storing Next 2, Written 8, Invalid [2 5] returned %+v", got)
	}
}
