package postgres_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/sink/postgres"
)

// An upsert batch is one multi-row INSERT whose text depends on the
// batch's size, and pgx (QueryExecModeCacheStatement, the default)
// prepares and keeps each distinct text on the connection. A batch
// closes at any size from 1 to BatchSize (Linger, BatchBytes, a drain),
// so one connection of a long-running sink ends up holding a prepared
// statement per size: hundreds of plans of thousands of parameters in
// the server's memory, per connection. The statements kept for one
// connection should stay few, whatever the batch sizes. Measured: sizes
// 1..500 of a 2-column table (the default BatchSize) leave 501
// statements and about 116 MiB of cached plans on one connection.
func TestAdversaryUpsertBatchSizesPileUpPreparedStatements(t *testing.T) {
	ctx := context.Background()
	srv := pg.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	admin := srv.Pool(t, dsn)
	exec(t, admin, keyedDDL)
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
