package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/postgres"
)

// CreateOffsetsTable creates the offsets table at the first claim, as
// OffsetsDDL says.
func TestCreateOffsetsTable(t *testing.T) {
	ctx := context.Background()
	db := newDB(t, rowsDDL)
	cfg := config(true)
	cfg.OffsetsTable = "my_offsets"
	w, err := postgres.New(db, cfg)
	must(t, err)
	var exists bool
	must(t, db.QueryRow(ctx, `SELECT to_regclass('my_offsets') IS NOT NULL`).Scan(&exists))
	if exists {
		t.Fatal("New created the offsets table; want it created at the first claim")
	}
	start, err := w.Claim(ctx, group, []sluice.TopicPartition{tp0})
	must(t, err)
	if len(start) != 0 {
		t.Fatalf("first claim returned start offsets %v; want none (the group's offsets)", start)
	}
	var cols []string
	must(t, db.QueryRow(ctx, `SELECT array_agg(column_name::text ORDER BY ordinal_position) FROM information_schema.columns
WHERE table_name = 'my_offsets'`).Scan(&cols))
	if got := strings.Join(cols, " "); got != "consumer_group topic partition epoch next_offset written_offset invalid_offsets updated_at" {
		t.Fatalf("offsets table columns %q; want those of OffsetsDDL", got)
	}
	// A second Writer claims through the existing table.
	w2, err := postgres.New(db, cfg)
	must(t, err)
	_, err = w2.Claim(ctx, group, []sluice.TopicPartition{tp0})
	must(t, err)
	var epoch int64
	must(t, db.QueryRow(ctx, `SELECT epoch FROM my_offsets`).Scan(&epoch))
	if epoch != 2 {
		t.Fatalf("epoch after two claims %d; want 2", epoch)
	}
}

// Without CreateOffsetsTable a missing offsets table stops the claim at
// once, with an error naming the table and OffsetsDDL.
func TestMissingOffsetsTableNamesOffsetsDDL(t *testing.T) {
	db := newDB(t, rowsDDL)
	cfg := config(true)
	cfg.CreateOffsetsTable = false
	w, err := postgres.New(db, cfg)
	must(t, err)
	_, err = w.Claim(context.Background(), group, []sluice.TopicPartition{tp0})
	if err == nil || !sluice.IsPermanent(err) {
		t.Fatalf("claim without the offsets table returned %v; want a permanent error", err)
	}
	wantIn(t, err, `"sluice_offsets"`, "OffsetsDDL", "CreateOffsetsTable")

	// OffsetsDDL's statement makes it work.
	exec(t, db, postgres.OffsetsDDL(""))
	_, err = w.Claim(context.Background(), group, []sluice.TopicPartition{tp0})
	must(t, err)
}

// Two members whose Writers create the offsets table race at their first
// claims: both claims succeed, whichever created the table.
func TestOffsetsTableCreatedByTwoMembersAtOnce(t *testing.T) {
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

// An offsets table in a schema that does not exist cannot be created
// (SQLSTATE 3F000, invalid_schema_name): the claim stops at once with a
// permanent error, as for a missing database or privilege, instead of
// being retried until the source's claim timeout runs out.
func TestOffsetsTableInAMissingSchemaIsPermanent(t *testing.T) {
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
