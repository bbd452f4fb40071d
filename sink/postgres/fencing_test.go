package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/sink/txsink"
)

var tp0 = sluice.TopicPartition{Topic: topic, Partition: 0}

// waitingOn polls until a session of db's database waits for a lock
// while running a statement on the offsets table: the claim is blocked.
func waitingOn(t *testing.T, db *pgxpool.Pool, what string) {
	t.Helper()
	poll(t, what+" waiting for a lock", func() bool {
		var n int
		err := db.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%sluice_offsets%'`).Scan(&n)
		return err == nil && n > 0
	})
}

// rollbackAtEnd rolls tx back when the test ends (after a failure: a
// transaction left open would keep its connection, and the pool's Close
// would wait for it).
func rollbackAtEnd(t *testing.T, tx txsink.Tx[postgres.Row]) {
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
}

// claimAndBegin claims tp0 with s and begins a transaction of s, rolled
// back when the test ends; it returns s's epoch for tp0 and the
// transaction.
func claimAndBegin(t *testing.T, s txsink.Store[postgres.Row]) (epoch int64, tx txsink.Tx[postgres.Row]) {
	t.Helper()
	ctx := context.Background()
	p, err := s.Claim(ctx, group, []sluice.TopicPartition{tp0})
	must(t, err)
	tx, err = s.Begin(ctx)
	must(t, err)
	rollbackAtEnd(t, tx)
	return p[tp0].Epoch, tx
}

func newStore(t *testing.T, db *pgxpool.Pool) txsink.Store[postgres.Row] {
	t.Helper()
	s, err := postgres.NewStore(db, config(true))
	must(t, err)
	return s
}

// Two members race on one partition: the new owner's claim waits for the
// old owner's transaction, which stored its position, to commit; it
// then returns that position, and the old owner's next transaction is
// fenced.
func TestClaimWaitsForTheOwnersCommitThenFencesIt(t *testing.T) {
	ctx := context.Background()
	db := newDB(t, rowsDDL)
	old, next := newStore(t, db), newStore(t, db)
	epoch, tx := claimAndBegin(t, old)
	must(t, tx.Write(ctx, []postgres.Row{{0, "a"}, {1, "a"}}))
	must(t, tx.StoreOffset(ctx, group, tp0, txsink.Position{Epoch: epoch, Next: 2, Written: 1}))

	type claimed struct {
		pos map[sluice.TopicPartition]txsink.Position
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		pos, err := next.Claim(ctx, group, []sluice.TopicPartition{tp0})
		done <- claimed{pos, err}
	}()
	waitingOn(t, db, "the claim")
	select {
	case c := <-done:
		t.Fatalf("the claim returned %+v, %v while the owner's transaction was open", c.pos, c.err)
	default:
	}
	must(t, tx.Commit(ctx))
	c := <-done
	must(t, c.err)
	if got := c.pos[tp0]; got.Epoch != epoch+1 || got.Next != 2 || got.Written != 1 {
		t.Fatalf("the claim returned %+v; want epoch %d and the committed position (Next 2, Written 1)", got, epoch+1)
	}

	tx, err := old.Begin(ctx)
	must(t, err)
	must(t, tx.Write(ctx, []postgres.Row{{2, "a"}}))
	err = tx.StoreOffset(ctx, group, tp0, txsink.Position{Epoch: epoch, Next: 3, Written: 2})
	if !errors.Is(err, txsink.ErrFenced) {
		t.Fatalf("the old owner's StoreOffset after the claim returned %v; want ErrFenced", err)
	}
	must(t, tx.Rollback(ctx))
	sameInts(t, "rows", ints(t, db), []int{0, 1})
}

// A claim that comes while the old owner's transaction stores its
// position makes that store wait, then fail with ErrFenced, once the
// claim committed.
func TestStoreOffsetAfterAConcurrentClaimIsFenced(t *testing.T) {
	ctx := context.Background()
	db := newDB(t, rowsDDL)
	old, next := newStore(t, db), newStore(t, db)
	epoch, tx := claimAndBegin(t, old)
	must(t, tx.Write(ctx, []postgres.Row{{0, "a"}}))
	c, err := next.Claim(ctx, group, []sluice.TopicPartition{tp0})
	must(t, err)
	err = tx.StoreOffset(ctx, group, tp0, txsink.Position{Epoch: epoch, Next: 1, Written: 0})
	if !errors.Is(err, txsink.ErrFenced) {
		t.Fatalf("StoreOffset of epoch %d after a claim raised it to %d returned %v; want ErrFenced", epoch, c[tp0].Epoch, err)
	}
	must(t, tx.Rollback(ctx))
	sameInts(t, "rows", ints(t, db), nil)
}

// Reading the position back (after a commit whose outcome is unknown)
// waits for a transaction that stored it, and returns what it committed.
func TestReadWaitsForATransactionStoringThePosition(t *testing.T) {
	ctx := context.Background()
	db := newDB(t, rowsDDL)
	s := newStore(t, db)
	epoch, tx := claimAndBegin(t, s)
	must(t, tx.Write(ctx, []postgres.Row{{0, "a"}}))
	must(t, tx.StoreOffset(ctx, group, tp0, txsink.Position{Epoch: epoch, Next: 1, Written: 0}))
	type read struct {
		pos txsink.Position
		err error
	}
	done := make(chan read, 1)
	go func() {
		pos, _, err := s.Read(ctx, group, tp0)
		done <- read{pos, err}
	}()
	waitingOn(t, db, "the read")
	must(t, tx.Commit(ctx))
	r := <-done
	must(t, r.err)
	if r.pos.Next != 1 || r.pos.Written != 0 {
		t.Fatalf("Read returned %+v; want the committed position (Next 1, Written 0)", r.pos)
	}
}

// Two members claim overlapping partition sets over and over, in
// opposite orders: the claims lock the offsets rows in one order, so
// none deadlocks, and every claim raises each partition's epoch once.
func TestOverlappingClaimsNeitherDeadlockNorSkipAnEpoch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := newDB(t, rowsDDL)
	var up, down []sluice.TopicPartition
	for p := range int32(8) {
		up = append(up, sluice.TopicPartition{Topic: topic, Partition: p})
		down = append(down, sluice.TopicPartition{Topic: topic, Partition: 7 - p})
	}
	// partitions 10 and 9 sort differently as strings and as numbers
	up = append(up, sluice.TopicPartition{Topic: topic, Partition: 10}, sluice.TopicPartition{Topic: topic, Partition: 9})
	down = append(down, sluice.TopicPartition{Topic: topic, Partition: 9}, sluice.TopicPartition{Topic: topic, Partition: 10})
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for _, tps := range [][]sluice.TopicPartition{up, down} {
		s := newStore(t, db)
		wg.Go(func() {
			for range rounds {
				if _, err := s.Claim(ctx, group, tps); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var lo, hi int64
	must(t, db.QueryRow(ctx, `SELECT min(epoch), max(epoch) FROM sluice_offsets`).Scan(&lo, &hi))
	if lo != 2*rounds || hi != 2*rounds {
		t.Fatalf("epochs from %d to %d; want %d (one raise per claim)", lo, hi, 2*rounds)
	}
}
