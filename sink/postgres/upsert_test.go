package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/testkit"
)

// With Config.Conflict a redelivered record's row is written once: the
// upsert updates it.
func TestUpsertWritesARedeliveredRowOnce(t *testing.T) {
	db := newDB(t, keyedDDL)
	cfg := config(false)
	cfg.Conflict = []string{"n"}
	m1 := startMember(t, db, cfg)
	m1.assign(t, bytesOf("1=a", "2=a", "3=a")...)
	m1.finish(t, 3)

	m2 := startMember(t, db, cfg)
	must(t, m2.fake.Send(topic, 0, bytesOf("1=a", "2=a", "3=a", "2=b")...))
	must(t, m2.fake.SetCommitted(topic, 0, 1)) // 2=a and 3=a again
	must(t, m2.fake.Assign(topic, 0))
	m2.finish(t, 4)
	sameInts(t, "rows", ints(t, db), []int{1, 2, 3})
	var v string
	must(t, db.QueryRow(context.Background(), `SELECT v FROM rows WHERE n = 2`).Scan(&v))
	if v != "b" {
		t.Fatalf("row 2 has v %q; want %q (updated by the last record)", v, "b")
	}
}

// Records of one batch with the same key are upserted in order: the
// last one wins, none is refused.
func TestUpsertOfOneKeyTwiceInABatch(t *testing.T) {
	db := newDB(t, keyedDDL)
	cfg := config(false)
	cfg.Conflict = []string{"n"}
	cfg.BatchSize = 10
	dl := testkit.NewDeadLetters()
	m := startMember(t, db, cfg, dl.Option(), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2}))
	m.assign(t, bytesOf("1=a", "2=a", "1=b", "3=a", "1=c")...)
	m.finish(t, 5)
	sameInts(t, "rows", ints(t, db), []int{1, 2, 3})
	var v string
	must(t, db.QueryRow(context.Background(), `SELECT v FROM rows WHERE n = 1`).Scan(&v))
	if v != "c" || dl.Len() != 0 {
		t.Fatalf("row 1 has v %q with %d dead letters; want %q (the batch's last) and none", v, dl.Len(), "c")
	}
}

// Upsert batches of every size from 1 to 100 leave a few prepared
// statements on their connection, not one per size. An upsert batch is
// one multi-row INSERT whose text depends on the number of rows, and pgx
// (QueryExecModeCacheStatement, the default) prepares and keeps each
// distinct text on the connection, while a batch closes at any size up
// to BatchSize (Linger, BatchBytes, a drain): the Writer writes through
// statements of a few sizes, so that they and their cached plans stay few.
func TestUpsertBatchesOfEverySizePrepareFewStatements(t *testing.T) {
	ctx := context.Background()
	dsn, _ := newDatabase(t, keyedDDL)
	db := poolOf(t, dsn, 1)
	cfg := config(false)
	cfg.Conflict = []string{"n"}
	s, err := postgres.NewStore(db, cfg)
	must(t, err)
	const sizes = 100
	n := 0
	for size := 1; size <= sizes; size++ {
		rows := make([]postgres.Row, size)
		for i := range rows {
			rows[i] = postgres.Row{n, "v"}
			n++
		}
		tx, err := s.Begin(ctx)
		must(t, err)
		must(t, tx.Write(ctx, rows))
		must(t, tx.Commit(ctx))
	}
	conn, err := db.Acquire(ctx)
	must(t, err)
	defer conn.Release()
	var stmts int
	var mem int64
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&stmts))
	must(t, conn.QueryRow(ctx, `SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
WHERE name IN ('CachedPlanSource', 'CachedPlanQuery', 'CachedPlan')`).Scan(&mem))
	t.Logf("after %d upsert batches of sizes 1..%d (2 columns): %d prepared statements, %d KiB of cached plans on the connection", sizes, sizes, stmts, mem/1024)
	if stmts > 10 {
		t.Fatalf("%d statements prepared on one connection (%d KiB of plans); want a few, not one per batch size", stmts, mem/1024)
	}
}

// An upsert batch of more parameters than one statement takes (65535):
// it is split, a key in both parts ends with the later row's values, and
// every row is in the table.
func TestWideUpsertIsSplitAcrossStatements(t *testing.T) {
	ctx := context.Background()
	const cols = 100 // 655 rows a statement
	names := make([]string, cols)
	defs := make([]string, cols)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
		defs[i] = names[i] + " integer"
	}
	defs[0] += " PRIMARY KEY"
	db := newDB(t, `CREATE TABLE wide (`+strings.Join(defs, ", ")+`)`)
	s, err := postgres.NewStore(db, postgres.Config{Table: "wide", Columns: names, Conflict: []string{"c0"}})
	must(t, err)
	rows := make([]postgres.Row, 1000)
	for i := range rows {
		r := make(postgres.Row, cols)
		key := i
		if i == 900 {
			key = 5 // updates row 5, written by the first statement
		}
		for c := range r {
			r[c] = i
		}
		r[0] = key
		rows[i] = r
	}
	tx, err := s.Begin(ctx)
	must(t, err)
	must(t, tx.Write(ctx, rows))
	must(t, tx.Commit(ctx))
	var n, c99 int
	must(t, db.QueryRow(ctx, `SELECT count(*), (SELECT c99 FROM wide WHERE c0 = 5) FROM wide`).Scan(&n, &c99))
	if n != 999 || c99 != 900 {
		t.Fatalf("%d rows, row 5 has c99 %d; want 999 rows and 900 (the later row)", n, c99)
	}
}
