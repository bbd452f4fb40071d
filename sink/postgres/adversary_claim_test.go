package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/postgres"
)

// Two members whose Writers create the offsets table race at their first
// claims: both claims succeed, whichever created the table.
func TestAdversaryOffsetsTableCreatedByTwoMembersAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := newDB(t, rowsDDL)
	for round := range 10 {
		cfg := config(true)
		cfg.OffsetsTable = fmt.Sprintf("offsets_%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range 2 {
			s, err := postgres.NewStore(db, cfg)
			must(t, err)
			wg.Go(func() {
				<-start
				_, errs[i] = s.Claim(ctx, group, []sluice.TopicPartition{{Topic: topic, Partition: int32(i)}})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: claim %d: %v", round, i, err)
			}
		}
	}
}

// Two members claim overlapping partition sets over and over, in
// opposite orders: the claims lock the offsets rows in one order, so
// none deadlocks, and every claim raises each partition's epoch once.
func TestAdversaryOverlappingClaimsRace(t *testing.T) {
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

// An offsets table in a schema that does not exist cannot be created
// (SQLSTATE 3F000, invalid_schema_name): a claim should stop at once
// with an error naming it, as for a missing database or privilege, not
// retry until the source's claim timeout (15 s) runs out.
func TestAdversaryOffsetsTableInMissingSchemaIsPermanent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	db := newDB(t, rowsDDL)
	cfg := config(true)
	cfg.OffsetsTable = "nosuchschema.offsets"
	s, err := postgres.NewStore(db, cfg)
	must(t, err)
	_, err = s.Claim(ctx, group, []sluice.TopicPartition{tp0})
	if err == nil || !sluice.IsPermanent(err) {
		t.Fatalf("claim returned %v; want a permanent error naming the missing schema", err)
	}
}
