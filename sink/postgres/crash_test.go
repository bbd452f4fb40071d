package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
)

// crashRetry retries a batch for long enough (about 20 s) that the
// server can be killed and restarted meanwhile.
var crashRetry = pipeline.WithRetry(sluice.RetryPolicy{Attempts: 200, Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond})

// startCommitted starts an exactly-once member of cfg, retrying under
// crashRetry, on a database of the test's own (the table rows, then
// ddl), and returns once it wrote and committed the rows 0..3: its
// claim is made, and the server may be killed from here on.
func startCommitted(t *testing.T, cfg postgres.Config, ddl ...string) (string, *pgxpool.Pool, *member) {
	t.Helper()
	dsn, db := newDatabase(t, append([]string{rowsDDL}, ddl...)...)
	m := startMember(t, db, cfg, crashRetry)
	m.assign(t, values(0, 4)...)
	m.fake.WaitCommitted(t, topic, 0, 4)
	return dsn, db, m
}

// killAndRestart kills the server (SIGKILL, a crash) and starts it
// again.
func killAndRestart(t *testing.T) {
	t.Helper()
	srv := pg.Get(t)
	must(t, srv.Kill())
	srv.Restart(t)
}

// finishAfterRestart is finish, then checks that the table rows holds
// the rows 0..n-1 once each, read on a new connection (the pools'
// connections to the server before its restart fail when next used).
func (m *member) finishAfterRestart(t *testing.T, dsn string, n int) {
	t.Helper()
	m.finish(t, n)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT n FROM rows ORDER BY n`)
	must(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	must(t, err)
	sameInts(t, "rows", got, seq(0, n))
}

// A server crash is a transient error: the batch being written when it
// comes, and the batches written while the server is down, are retried
// on new connections once it is back, and each row is in the table once.
func TestServerCrashIsRetried(t *testing.T) {
	dsn, _, m := startCommitted(t, config(true), holdFunc("true", "NEW"), holdInserts)

	// A crash while a batch is written: its transaction waits in the
	// trigger for the lock this test holds.
	holder := holdLock(t, dsn)
	must(t, m.fake.Send(topic, 0, values(4, 16)...))
	waitAdvisory(t, holder)
	killAndRestart(t)
	m.fake.WaitCommitted(t, topic, 0, 20)

	// A crash between batches: the next batches find the server down.
	srv := pg.Get(t)
	must(t, srv.Kill())
	must(t, m.fake.Send(topic, 0, values(20, 10)...))
	srv.Restart(t)
	m.finishAfterRestart(t, dsn, 30)
}

// The server is killed while an exactly-once batch's transaction is
// stopped at one point of its life (during COPY, between StoreOffset and
// COMMIT, during COMMIT); once the server is back, every record's row is
// in the table once and the group commits the end of the log.
func TestKillAtAnyPointOfABatchWritesEachRowOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server")
	}
	points := []struct {
		name string
		ddl  []string
	}{
		{name: "during COPY", ddl: []string{holdFunc("NEW.n >= 4", "NEW"), holdInserts}},
		{name: "between StoreOffset and COMMIT", ddl: []string{
			postgres.OffsetsDDL(""),
			holdFunc("NEW.next_offset <> OLD.next_offset AND NEW.next_offset > 4", "NEW"),
			`CREATE TRIGGER hold AFTER UPDATE ON sluice_offsets FOR EACH ROW EXECUTE FUNCTION hold()`,
		}},
		{name: "during COMMIT (deferred trigger)", ddl: []string{
			holdFunc("NEW.n >= 4", "NULL"),
			`CREATE CONSTRAINT TRIGGER hold AFTER INSERT ON rows DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold()`,
		}},
	}
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			dsn, _, m := startCommitted(t, config(true), pt.ddl...)
			holder := holdLock(t, dsn)
			must(t, m.fake.Send(topic, 0, values(4, 8)...))
			waitAdvisory(t, holder)
			killAndRestart(t)
			m.finishAfterRestart(t, dsn, 12)
		})
	}
}
