package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/pipeline"
)

// blockDDL makes every insert into rows wait while another session holds
// the advisory lock blockKey, so that a test can hold a batch's
// transaction in the middle of its write.
const (
	blockKey = 4242
	blockDDL = `CREATE FUNCTION block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER block BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION block()`
)

// A server crash is a transient error: the batch being written when it
// comes, and the batches written while the server is down, are retried
// on new connections once it is back, and each row is in the table once.
func TestServerCrashIsRetried(t *testing.T) {
	srv := pg.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	db := srv.Pool(t, dsn)
	exec(t, db, rowsDDL)
	exec(t, db, blockDDL)
	retry := pipeline.WithRetry(pipeline.RetryPolicy{Attempts: 100, Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond})
	m := startMember(t, db, config(true), retry)
	must(t, m.fake.Send(topic, 0, values(0, 10)...))
	must(t, m.fake.Assign(topic, 0))
	m.fake.WaitCommitted(t, topic, 0, 10)

	// A crash while a batch is written: its transaction waits in the
	// trigger for the lock this test holds.
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer holder.Close(ctx)
	_, err = holder.Exec(ctx, "SELECT pg_advisory_lock($1)", blockKey)
	must(t, err)
	must(t, m.fake.Send(topic, 0, values(10, 10)...))
	poll(t, "an insert waiting for the advisory lock", func() bool {
		var n int
		err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n)
		return err == nil && n > 0
	})
	must(t, srv.Kill())
	srv.Restart(t)
	m.fake.WaitCommitted(t, topic, 0, 20)

	// A crash between batches: the next batches find the server down.
	must(t, srv.Kill())
	must(t, m.fake.Send(topic, 0, values(20, 10)...))
	srv.Restart(t)
	m.fake.WaitCommitted(t, topic, 0, 30)
	must(t, m.run.Stop(t))
	sameInts(t, "rows", intsAfterRestart(t, dsn), seq(0, 30))
}

// intsAfterRestart is ints on a new connection: the pools' connections
// to the server before its restart fail when next used.
func intsAfterRestart(t *testing.T, dsn string) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT n FROM rows ORDER BY n`)
	must(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int])
	must(t, err)
	return out
}
